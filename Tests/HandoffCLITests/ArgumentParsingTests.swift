import ArgumentParser
import Foundation
import HandoffAPI
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

/// The lines handoffctl runs without ArgumentParser (QuickCommand) mean what ArgumentParser
/// reads in them; every other line is left to it.
@Suite struct QuickCommandTests {
    @Test(arguments: [
        ["continue"], ["continue", "desk"], ["continue", "--json"], ["continue", "desk", "--json"], ["continue", "--json", "desk"],
        ["continue", "a1b2c3"], ["continue", "10.0.0.2:4700", "--json"], ["continue", "--socket", "/tmp/s", "desk"],
        ["continue", "desk", "--socket=/tmp/s", "--json"], ["--socket", "/tmp/r", "continue", "desk"],
        ["--socket=/tmp/r", "continue", "--socket", "/tmp/s", "--json"], ["continue", "Zoë's laptop"],
    ])
    func continueLinesAreReadAsArgumentParserReadsThem(arguments: [String]) throws {
        let quick = try #require(QuickCommand(arguments), "\(arguments) is taken by the quick path")
        let parsed = try Handoffctl.parseAsRoot(arguments)
        let command = try #require(parsed as? Continue, "\(arguments)")
        let root = try Handoffctl.parse(Array(arguments.prefix { $0 != "continue" }))
        let expected = QuickCommand.continueActivity(
            peer: command.peer, json: command.json, socket: command.global.socket ?? root.global.socket)
        #expect(quick == expected, "\(arguments)")
        #expect(command.streamTo == nil && command.streamExec == nil)
    }

    @Test func versionIsArgumentParsersVersion() throws {
        #expect(QuickCommand(["--version"]) == .version)
        do {
            _ = try Handoffctl.parseAsRoot(["--version"])
            Issue.record("--version parsed as a command")
        } catch {
            #expect(Handoffctl.fullMessage(for: error) == HandoffVersion.current)
        }
    }

    /// `continue --json` prints the answer's activity as the daemon wrote it: the same text as
    /// decoding the answer and encoding the activity again, for values of every kind.
    @Test func theActivityOfAnAnswerIsPrintedAsIfDecodedAndEncodedAgain() throws {
        var content = ActivityContent(type: "com.example.edit", title: "Report \"Q3\" {draft}, [v2]: ä/ö 🎉\n")
        content.userInfo = [
            "s": .string("a\\\"b}]"), "i": .int(-42), "d": .double(0.1), "big": .double(1e300), "b": .bool(false),
            "data": .data(Data([0, 1, 2, 255])), "at": .date(Timestamp(microsecondsSinceEpoch: 1_800_000_000_123_456)),
            "u": .url("https://example.com/a?b=c&d=/e"), "id": .uuid(UUID()), "n": .null,
            "list": .array([.int(1), .array([]), .dictionary([:]), .string(",")]), "dict": .dictionary(["k": .dictionary(["x": .null])]),
        ]
        content.webpageURL = "https://example.com/r"
        content.expirationDate = Timestamp(microsecondsSinceEpoch: 1_900_000_000_000_000)
        let activity = Activity(content: content, createdAt: .now(), originDevice: "desk")
        let answer = ContinueResponse(
            peerID: DeviceID(digest: [UInt8](repeating: 7, count: 32)), peerName: "desk \"1\"", activity: activity, continuationID: UUID(),
            delivered: DeliveryOutcome(kind: .caller, handler: "caller", command: [])
        )
        let body = Array(try LocalAPIJSON.encoder().encode(answer))
        let member = try #require(JSONMember.value("activity", in: body))
        let again = Array(try LocalAPIJSON.encoder().encode(try LocalAPIJSON.decoder().decode(ContinueResponse.self, from: Data(body)).activity))
        #expect(JSONIndenter.indent(Array(member)) == JSONIndenter.indent(again))
        #expect(JSONMember.value("peerName", in: body).map { String(decoding: $0, as: UTF8.self) } == #""desk \"1\"""#)
        #expect(JSONMember.value("continuationID", in: body) != nil && JSONMember.value("delivered", in: body) != nil)
        // Not an answer with an activity: nil, never a part of something else.
        for broken in ["", "[]", "{}", #"{"activity"#, #"{"activity":"#, #"{"activity":{"a":1}"#, #"{"x":"activity","y":1}"#, #"{"x":{"activity":1}}"#] {
            #expect(JSONMember.value("activity", in: Array(broken.utf8)) == nil, "\(broken)")
        }
        #expect(JSONMember.value("activity", in: Array(#"{"a":[1,{"activity":2}],"activity":3}"#.utf8)).map(Array.init) == Array("3".utf8))
    }

    /// The request `continue` sends, written without JSONEncoder, reads back as what it is.
    @Test func continueRequestsWrittenByHandReadAsTheRequest() throws {
        let awkward = "a\"b\\c/d\n\r\t\u{01}\u{1F}\u{7F} é 🎉 {}[],:"
        let requests = [
            ContinueRequest(peer: "desk"),
            ContinueRequest(peer: awkward, delivery: .dispatch, environment: ["DISPLAY": ":0", "LANG": awkward, "": ""], activityID: UUID()),
            ContinueRequest(peer: "10.0.0.2:4700", delivery: .returnToCaller, environment: [:], activityID: nil),
        ]
        for request in requests {
            let written = request.compactJSON
            let read = try LocalAPIJSON.decoder().decode(ContinueRequest.self, from: Data(written))
            #expect(read == request, "\(String(decoding: written, as: UTF8.self))")
            let encoded = try LocalAPIJSON.decoder().decode(ContinueRequest.self, from: LocalAPIJSON.encoder().encode(request))
            #expect(read == encoded)
        }
        #expect(String(decoding: ContinueRequest(peer: "desk").compactJSON, as: UTF8.self) == #"{"delivery":"returnToCaller","environment":{},"peer":"desk"}"#)
    }

    @Test(arguments: [
        [], ["--help"], ["-h"], ["help"], ["status"], ["continue", "--help"], ["continue", "-h"], ["continue", "help"],
        ["continue", "a", "b"], ["continue", "--json", "--json"], ["continue", "--json=true"], ["continue", "--", "desk"],
        ["continue", "--stream-to", "f"], ["continue", "--socket"], ["continue", "--socket", "--json"], ["continue", "--socket="],
        ["continue", "--socket", "a", "--socket", "b"], ["--socket", "a", "--socket", "b", "continue"], ["contineu"],
        ["--version", "continue"], ["continue", "--version"], ["peers", "continue"], ["continue", "-x"],
    ])
    func otherLinesAreLeftToArgumentParser(arguments: [String]) {
        #expect(QuickCommand(arguments) == nil, "\(arguments)")
    }
}
