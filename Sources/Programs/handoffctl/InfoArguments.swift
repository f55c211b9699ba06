#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffModel
import HandoffSystem

#if canImport(Glibc)
import Glibc
#endif

/// The command-line forms of typed userInfo values: `--info KEY[:TYPE]=VALUE` and `--info-json`.
enum InfoArguments {
    static let typesOnCommandLine: [ActivityValueType] = [.string, .int, .double, .bool, .data, .date, .url, .uuid, .null]

    /// `page:int=3`, `draft:data=@FILE`, `title=plain string`. The type defaults to string.
    static func parse(_ argument: String, readFile: (String) throws -> Data = InfoArguments.readFile) throws
        -> (String, ActivityValue)
    {
        guard let eq = argument.firstIndex(of: "=") else {
            throw CLIError(.badValueSyntax, "--info \(displayQuoted(argument)) needs the form KEY=VALUE or KEY:TYPE=VALUE")
        }
        let left = argument[..<eq]
        let text = String(argument[argument.index(after: eq)...])
        var key = String(left)
        var type = ActivityValueType.string
        if let colon = left.lastIndex(of: ":") {
            key = String(left[..<colon])
            let typeName = String(left[left.index(after: colon)...])
            guard let t = ActivityValueType(rawValue: typeName), typesOnCommandLine.contains(t) else {
                let hint =
                    typeName == "array" || typeName == "dictionary"
                    ? "; arrays and dictionaries go in --info-json"
                    : "; use one of \(typesOnCommandLine.map(\.rawValue).joined(separator: ", "))"
                throw CLIError(.badValueSyntax, "--info \(displayQuoted(argument)): unknown type \(displayQuoted(typeName))\(hint)")
            }
            type = t
        }
        guard !key.isEmpty else {
            throw CLIError(.badValueSyntax, "--info \(displayQuoted(argument)) has an empty key")
        }
        func bad(_ expected: String) -> CLIError {
            CLIError(.badValueSyntax, "--info \(key):\(type.rawValue)=\(displayQuoted(text)): \(expected)")
        }
        switch type {
        case .string:
            return (key, .string(text))
        case .int:
            guard let i = Int64(text) else { throw bad("not a 64-bit integer") }
            return (key, .int(i))
        case .double:
            guard let d = Double(text) else { throw bad("not a number (e.g. 0.5, 1e-3, inf, nan)") }
            return (key, .double(d))
        case .bool:
            switch text.lowercased() {
            case "true", "yes", "1": return (key, .bool(true))
            case "false", "no", "0": return (key, .bool(false))
            default: throw bad("not true or false")
            }
        case .data:
            if text.hasPrefix("@") {
                return (key, .data(try readFile(String(text.dropFirst()))))
            }
            if text.hasPrefix("base64:") {
                guard let d = Data(base64Encoded: String(text.dropFirst(7))) else { throw bad("not valid base64") }
                return (key, .data(d))
            }
            throw bad("data is given as @FILE, @- (standard input) or base64:…")
        case .date:
            guard let t = Timestamp(rfc3339: text) else { throw bad("not an RFC 3339 date such as 2026-11-22T10:00:00Z") }
            return (key, .date(t))
        case .url:
            guard URIRules.isAbsoluteURI(text) else { throw bad("not an absolute URL (scheme:…, percent-encoded)") }
            return (key, .url(text))
        case .uuid:
            guard let u = UUID(uuidString: text) else { throw bad("not a UUID") }
            return (key, .uuid(u))
        case .null:
            guard text.isEmpty else { throw bad("a null takes no value: write \(key):null=") }
            return (key, .null)
        case .array, .dictionary:
            throw bad("arrays and dictionaries go in --info-json")
        }
    }

    /// A whole userInfo dictionary in the tagged JSON form `handoffctl current --json` prints.
    static func parseJSON(_ source: String, readFile: (String) throws -> Data = InfoArguments.readFile) throws
        -> [String: ActivityValue]
    {
        let data = try readFile(source)
        do {
            return try LocalAPIJSON.decoder().decode([String: ActivityValue].self, from: data)
        } catch let e as DecodingError {
            let name = source == "-" ? "standard input" : source
            throw CLIError(
                .badValueSyntax,
                "--info-json \(name): \(DecodingErrorText.describe(e)) (expected an object of typed values such as {\"page\": {\"int\": 3}})"
            )
        }
    }

    /// `FILE`, or `-` for standard input. Bounded: nothing this big fits in an activity anyway.
    static func readFile(_ path: String) throws -> Data {
        let limit = 16 * 1024 * 1024
        let fd = path == "-" ? 0 : open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw CLIError(.badValueSyntax, "cannot read \(path): \(SystemCall.describe(errno))")
        }
        defer { if fd != 0 { close(fd) } }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = SystemCall.retrying { read(fd, &buffer, buffer.count) }
            if n > 0 {
                data.append(contentsOf: buffer[0..<n])
                guard data.count <= limit else {
                    throw CLIError(.payloadTooLarge, "\(path) is larger than \(limit / 1024 / 1024) MiB; bulk data belongs in a continuation stream")
                }
            } else if n == 0 {
                return data
            } else {
                throw CLIError(.badValueSyntax, "cannot read \(path): \(SystemCall.describe(errno))")
            }
        }
    }
}

/// `90s`, `10m`, `2h`, `1d`, `1h30m`, or plain seconds.
enum DurationArgument {
    static func seconds(_ text: String) throws -> Int64 {
        if let plain = Int64(text), plain > 0 { return plain }
        var total: Int64 = 0
        var number: Int64?
        for c in text {
            if let d = c.wholeNumberValue, c.isASCII {
                number = (number ?? 0) * 10 + Int64(d)
                guard number! < 1_000_000_000 else { break }
                continue
            }
            let unit: Int64? =
                switch c {
                case "s": 1
                case "m": 60
                case "h": 3600
                case "d": 86_400
                default: nil
                }
            guard let unit, let n = number else {
                throw CLIError(.badValueSyntax, "--expires-in \(displayQuoted(text)): use a duration such as 90s, 10m, 2h, 1d or 1h30m")
            }
            total += n * unit
            number = nil
        }
        guard number == nil, total > 0 else {
            throw CLIError(.badValueSyntax, "--expires-in \(displayQuoted(text)): use a duration such as 90s, 10m, 2h, 1d or 1h30m")
        }
        return total
    }
}
