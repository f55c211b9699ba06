#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffModel

#if canImport(Glibc)
// `stdout`, C's stream, is a global var that Swift 6 cannot prove safe: handoffctl writes it
// from its one thread only.
@preconcurrency import Glibc
#endif

/// Where handoffctl writes: data to stdout, everything else to stderr.
enum Terminal {
    /// One line on stdout (buffered by C's stdio, as `print` is). Not `print` itself: it takes
    /// its words as `[Any]` and asks the Swift runtime how each one prints, which looks through
    /// every conformance in the binary once per process (docs/benchmarks.md, "handoffctl's
    /// share of continue").
    static func out(_ line: String) {
        var line = line
        line.append("\n")
        line.withUTF8 { bytes in _ = fwrite(bytes.baseAddress, 1, bytes.count, stdout) }
    }

    static func error(_ message: String) {
        diagnostic("handoffctl: error: \(message)\n")
    }

    static func warning(_ message: String) {
        diagnostic("handoffctl: warning: \(message)\n")
    }

    /// Unbuffered, so that it interleaves correctly with what came before.
    static func diagnostic(_ text: String) {
        var bytes = Array(text.utf8)
        _ = write(2, &bytes, bytes.count)
    }

    static func flush() {
        fflush(nil)
    }

    /// A local-API value exactly as the API defines it, pretty-printed for people and jq alike.
    static func json(_ value: some Encodable, pretty: Bool = true) throws {
        let data = Array(try LocalAPIJSON.encoder().encode(value))
        out(String(decoding: pretty ? JSONIndenter.indent(data) : data, as: UTF8.self))
    }
}

/// Text that came from elsewhere (an app, a peer) never reaches the terminal raw: control
/// characters could rewrite the screen. `displayQuoted` escapes them; this does for bare text.
func safe(_ text: String) -> String {
    var out = ""
    for scalar in text.unicodeScalars {
        if scalar.value < 0x20 || (scalar.value >= 0x7F && scalar.value < 0xA0) {
            out += "\\u{\(String(scalar.value, radix: 16))}"
        } else {
            out.unicodeScalars.append(scalar)
        }
    }
    return out
}

enum HumanFormat {
    /// The multi-line description `handoffctl current` prints.
    static func activity(_ a: Activity) -> [String] {
        var lines = ["\(safe(a.type))  \(displayQuoted(a.title))"]
        func row(_ label: String, _ value: String) { lines.append("  " + (label + ":").padding(to: 12) + value) }
        row("id", a.id.lowercasedString)
        row("created", a.createdAt.rfc3339)
        if a.updatedAt != a.createdAt { row("updated", a.updatedAt.rfc3339) }
        if let d = a.originDevice { row("device", safe(d)) }
        if let u = a.webpageURL { row("webpage", safe(u)) }
        if let e = a.expirationDate { row("expires", e.rfc3339) }
        if let t = a.targetContentIdentifier { row("target", displayQuoted(t)) }
        if let p = a.persistentIdentifier { row("persistent", displayQuoted(p)) }
        if !a.requiredUserInfoKeys.isEmpty { row("required", a.requiredUserInfoKeys.map(safe).joined(separator: ", ")) }
        var flags: [String] = []
        if a.supportsContinuationStreams { flags.append("continuation streams") }
        if a.needsSave { flags.append("needs save") }
        if !flags.isEmpty { row("supports", flags.joined(separator: ", ")) }
        if a.userInfo.isEmpty {
            row("userInfo", "(empty)")
        } else {
            lines.append("  userInfo:")
            let keys = a.userInfo.keys.sorted(by: ActivityContent.byteOrder)
            let keyWidth = min(24, keys.map { safe($0).count }.max() ?? 0)
            for key in keys {
                let v = a.userInfo[key]!
                lines.append("    \(safe(key).padding(to: keyWidth))  \(v.typeName.rawValue.padding(to: 11))\(value(v))")
            }
        }
        return lines
    }

    /// One value, compactly; containers inline with their members.
    static func value(_ v: ActivityValue) -> String {
        switch v {
        case .string(let s): displayQuoted(s)
        case .int(let i): String(i)
        case .double(let d): d.isNaN ? "nan" : d.isInfinite ? (d > 0 ? "inf" : "-inf") : String(d)
        case .bool(let b): String(b)
        case .data(let d): d.count == 1 ? "1 byte" : "\(d.count) bytes"
        case .date(let t): t.rfc3339
        case .url(let u): safe(u)
        case .uuid(let u): u.lowercasedString
        case .null: "null"
        case .array(let items): "[" + items.map(value).joined(separator: ", ") + "]"
        case .dictionary(let d):
            "{" + d.keys.sorted(by: ActivityContent.byteOrder).map { "\(displayQuoted($0)): \(value(d[$0]!))" }.joined(separator: ", ") + "}"
        }
    }

    static func summary(_ s: ActivitySummary) -> String {
        "\(safe(s.type)) \(displayQuoted(s.title)) (\(s.id.lowercasedString), updated \(s.updatedAt.rfc3339))"
    }
}

/// Re-indents compact JSON the way jq prints it (two spaces, `"key": value`, `[]` and `{}` kept
/// empty), which reads better than Foundation's pretty printer. Only whitespace changes.
enum JSONIndenter {
    static func indent(_ compact: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(compact.count * 2)
        var depth = 0
        var inString = false
        var escaped = false
        var i = 0
        func newline() {
            out.append(0x0A)
            out.append(contentsOf: repeatElement(0x20, count: depth * 2))
        }
        while i < compact.count {
            let c = compact[i]
            if inString {
                out.append(c)
                if escaped {
                    escaped = false
                } else if c == 0x5C {
                    escaped = true
                } else if c == 0x22 {
                    inString = false
                }
                i += 1
                continue
            }
            switch c {
            case 0x22:
                inString = true
                out.append(c)
            case 0x7B, 0x5B:  // { [
                let close: UInt8 = c == 0x7B ? 0x7D : 0x5D
                if i + 1 < compact.count, compact[i + 1] == close {
                    out.append(c)
                    out.append(close)
                    i += 1
                } else {
                    out.append(c)
                    depth += 1
                    newline()
                }
            case 0x7D, 0x5D:  // } ]
                depth -= 1
                newline()
                out.append(c)
            case 0x2C:  // ,
                out.append(c)
                newline()
            case 0x3A:  // :
                out.append(c)
                out.append(0x20)
            default:
                out.append(c)
            }
            i += 1
        }
        return out
    }
}

/// One member of a JSON object as the daemon wrote it, found without decoding the object:
/// `continue --json` prints the answer's `activity` this way rather than decoding the whole
/// answer and encoding the activity again (docs/benchmarks.md, "Starting handoffctl"). The
/// daemon writes compact JSON with sorted keys, as `JSONIndenter` expects.
enum JSONMember {
    /// The value of the top-level member `name` (a name without escapes) of `object`, or nil
    /// when `object` is not a whole object that has it.
    static func value(_ name: String, in object: [UInt8]) -> ArraySlice<UInt8>? {
        let key = Array(name.utf8)
        var found: ArraySlice<UInt8>?
        guard object.first == 0x7B else { return nil }  // {
        var i = 1
        while i < object.count, object[i] == 0x22 {  // "
            guard let keyEnd = stringEnd(object, from: i), keyEnd < object.count, object[keyEnd] == 0x3A else { return nil }  // :
            let start = keyEnd + 1
            guard let end = valueEnd(object, from: start), end < object.count else { return nil }
            if found == nil, object[(i + 1)..<(keyEnd - 1)].elementsEqual(key) { found = object[start..<end] }
            if object[end] == 0x7D { return end == object.count - 1 ? found : nil }  // } ends the object
            guard object[end] == 0x2C else { return nil }  // ,
            i = end + 1
        }
        return nil
    }

    /// The index just past the string that starts at `start` (its opening quote).
    private static func stringEnd(_ bytes: [UInt8], from start: Int) -> Int? {
        var i = start + 1
        while i < bytes.count {
            switch bytes[i] {
            case 0x5C: i += 2  // \ and the byte it escapes
            case 0x22: return i + 1
            default: i += 1
            }
        }
        return nil
    }

    /// The index just past the value that starts at `start`: a string, an object or array (to
    /// its matching bracket), or a number, true, false or null (to the next , } or ]).
    private static func valueEnd(_ bytes: [UInt8], from start: Int) -> Int? {
        var i = start
        var depth = 0
        while i < bytes.count {
            switch bytes[i] {
            case 0x22:
                guard let end = stringEnd(bytes, from: i) else { return nil }
                i = end
                if depth == 0 { return i }
                continue
            case 0x7B, 0x5B:
                depth += 1
            case 0x7D, 0x5D:
                if depth == 0 { return i > start ? i : nil }
                depth -= 1
                if depth == 0 { return i + 1 }
            case 0x2C where depth == 0:
                return i > start ? i : nil
            default:
                break
            }
            i += 1
        }
        return depth == 0 && i > start ? i : nil
    }
}
