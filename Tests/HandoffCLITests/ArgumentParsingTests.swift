import Foundation
import HandoffModel
import Testing

@testable import handoffctl

/// The command-line value syntaxes, without a process or a daemon.
@Suite(.timeLimit(.minutes(3))) struct ArgumentParsingTests {
    @Test func typedInfoValues() throws {
        let file = { (path: String) throws -> Data in
            #expect(path == "draft.txt")
            return Data("hi".utf8)
        }
        let cases: [(String, String, ActivityValue)] = [
            ("title=Report", "title", .string("Report")),
            ("eq=a=b", "eq", .string("a=b")),
            ("empty=", "empty", .string("")),
            ("page:int=3", "page", .int(3)),
            ("neg:int=-42", "neg", .int(-42)),
            ("r:double=0.25", "r", .double(0.25)),
            ("r:double=inf", "r", .double(.infinity)),
            ("ok:bool=true", "ok", .bool(true)),
            ("ok:bool=NO", "ok", .bool(false)),
            ("draft:data=@draft.txt", "draft", .data(Data("hi".utf8))),
            ("b:data=base64:aGk=", "b", .data(Data("hi".utf8))),
            ("at:date=2026-11-22T10:00:00Z", "at", .date(Timestamp(rfc3339: "2026-11-22T10:00:00Z")!)),
            ("home:url=https://example.com/x?y", "home", .url("https://example.com/x?y")),
            ("id:uuid=3f2504e0-4f89-11d3-9a0c-0305e82c3301", "id", .uuid(UUID(uuidString: "3F2504E0-4F89-11D3-9A0C-0305E82C3301")!)),
            ("z:null=", "z", .null),
            ("a:b:int=1", "a:b", .int(1)),
        ]
        for (argument, key, value) in cases {
            let (k, v) = try InfoArguments.parse(argument, readFile: file)
            #expect(k == key, "\(argument)")
            #expect(v == value, "\(argument)")
        }
    }

    @Test(arguments: [
        "novalue", "=x", ":int=3", "page:int=", "page:int=3.5", "page:int=99999999999999999999", "x:double=abc",
        "x:bool=", "x:data=hi", "x:data=base64:!!", "x:date=2026-11-22", "x:url=no scheme", "x:uuid=123", "x:null=0",
        "x:array=[]", "x:dictionary={}", "x:Int=3",
    ])
    func malformedInfoValuesAreBadValueSyntax(argument: String) {
        do {
            _ = try InfoArguments.parse(argument, readFile: { _ in Data() })
            Issue.record("accepted \(argument)")
        } catch let e as CLIError {
            #expect(e.status == .badValueSyntax)
            #expect(!e.message.contains("\n"))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func durations() throws {
        #expect(try DurationArgument.seconds("90") == 90)
        #expect(try DurationArgument.seconds("90s") == 90)
        #expect(try DurationArgument.seconds("10m") == 600)
        #expect(try DurationArgument.seconds("2h") == 7200)
        #expect(try DurationArgument.seconds("1d") == 86_400)
        #expect(try DurationArgument.seconds("1h30m") == 5400)
        for bad in ["", "0", "-5", "m", "10x", "1h30", "soon", "5 m"] {
            #expect(throws: CLIError.self, "\(bad)") { try DurationArgument.seconds(bad) }
        }
    }

    @Test func jsonIndenterOnlyChangesWhitespace() {
        let compact = #"{"a":[],"b":{},"c":[1,{"d":"x,y:{z}\"]"}],"e":"\\"}"#
        let pretty = String(decoding: JSONIndenter.indent(Array(compact.utf8)), as: UTF8.self)
        #expect(
            pretty == """
                {
                  "a": [],
                  "b": {},
                  "c": [
                    1,
                    {
                      "d": "x,y:{z}\\"]"
                    }
                  ],
                  "e": "\\\\"
                }
                """
        )
        let squeezed = pretty.filter { $0 != "\n" }.replacingOccurrences(of: "  ", with: "").replacingOccurrences(of: ": ", with: ":")
        #expect(squeezed == compact)
    }

    @Test func exitStatusesAreDistinct() {
        let codes = ExitStatus.allCases.map(\.rawValue)
        #expect(Set(codes).count == codes.count)
    }
}
