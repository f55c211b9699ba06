/// The subset of TOML that `handoffd.toml` uses: comments, `key = value`, `[table]` headers;
/// values are strings (basic `"…"` with escapes, literal `'…'`), integers, booleans, and arrays of
/// those (possibly over several lines). Anything else is refused with the file, the line and why.
public struct ConfigFile: Sendable {
    package enum Value: Sendable, Equatable {
        case string(String)
        case integer(Int64)
        case boolean(Bool)
        case array([Value])

        package var typeName: String {
            switch self {
            case .string: "a string"
            case .integer: "an integer"
            case .boolean: "a boolean"
            case .array: "an array"
            }
        }
    }

    package struct Entry: Sendable, Equatable {
        /// `port`, or `handlers.com.example.edit` for a key in a table.
        package var key: String
        package var value: Value
        package var line: Int
    }

    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        public var path: String
        public var line: Int
        public var reason: String

        package init(path: String, line: Int, reason: String) {
            self.path = path
            self.line = line
            self.reason = reason
        }
        public var description: String { "\(path):\(line): \(reason)" }
    }

    package let path: String
    package let entries: [Entry]

    public init(path: String, text: String) throws(ParseError) {
        self.path = path
        var entries: [Entry] = []
        var table: String?
        var seen: Set<String> = []
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var index = 0
        func fail(_ reason: String, _ line: Int) -> ParseError { ParseError(path: path, line: line, reason: reason) }
        while index < lines.count {
            let lineNumber = index + 1
            var line = ConfigFile.stripComment(lines[index]).trimmed
            index += 1
            if line.isEmpty { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]"), !line.hasPrefix("[["), line.count > 2 else {
                    throw fail("a table header looks like [name]", lineNumber)
                }
                let name = String(line.dropFirst().dropLast()).trimmed
                guard ConfigFile.isBareKey(name) else { throw fail("table name \(name) is not a plain name", lineNumber) }
                table = name
                continue
            }
            guard let eq = ConfigFile.indexOfAssignment(line) else {
                throw fail("expected key = value", lineNumber)
            }
            var key = String(line[..<eq]).trimmed
            if key.hasPrefix("\""), key.hasSuffix("\""), key.count >= 2 {
                key = String(key.dropFirst().dropLast())  // quoted keys, e.g. activity types in [handlers]
            } else if !ConfigFile.isBareKey(key) {
                throw fail("\(key.isEmpty ? "a key is missing" : "\(key) is not a valid key (use letters, digits, _ and -, or quote it)")", lineNumber)
            }
            var valueText = String(line[line.index(after: eq)...]).trimmed
            // Arrays may continue over the following lines until their closing bracket.
            while valueText.hasPrefix("["), !ConfigFile.bracketsBalanced(valueText), index < lines.count {
                line = ConfigFile.stripComment(lines[index]).trimmed
                index += 1
                valueText += " " + line
            }
            var parser = ValueParser(text: valueText)
            let value: Value
            do {
                value = try parser.parseValue()
                parser.skipSpaces()
                guard parser.atEnd else { throw ValueParser.Failure("unexpected text after the value") }
            } catch let failure as ValueParser.Failure {
                throw fail(failure.reason, lineNumber)
            } catch {
                throw fail("\(error)", lineNumber)
            }
            let fullKey = table.map { "\($0).\(key)" } ?? key
            guard seen.insert(fullKey).inserted else { throw fail("\(fullKey) is set twice", lineNumber) }
            entries.append(Entry(key: fullKey, value: value, line: lineNumber))
        }
        self.entries = entries
    }

    private static func stripComment(_ line: String) -> String {
        var inBasic = false
        var inLiteral = false
        var escaped = false
        var out = ""
        for c in line {
            if escaped {
                escaped = false
            } else if inBasic && c == "\\" {
                escaped = true
            } else if c == "\"" && !inLiteral {
                inBasic.toggle()
            } else if c == "'" && !inBasic {
                inLiteral.toggle()
            } else if c == "#" && !inBasic && !inLiteral {
                break
            }
            out.append(c)
        }
        return out
    }

    private static func indexOfAssignment(_ line: String) -> String.Index? {
        var inQuote = false
        for i in line.indices {
            if line[i] == "\"" { inQuote.toggle() }
            if line[i] == "=" && !inQuote { return i }
        }
        return nil
    }

    private static func isBareKey(_ key: String) -> Bool {
        !key.isEmpty && key.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }
    }

    private static func bracketsBalanced(_ text: String) -> Bool {
        var depth = 0
        var inString = false
        var escaped = false
        for c in text {
            if escaped { escaped = false; continue }
            if c == "\\" && inString { escaped = true; continue }
            if c == "\"" { inString.toggle(); continue }
            if inString { continue }
            if c == "[" { depth += 1 }
            if c == "]" { depth -= 1 }
        }
        return depth <= 0
    }
}

/// Reads one TOML value.
private struct ValueParser {
    struct Failure: Error {
        var reason: String
        init(_ reason: String) { self.reason = reason }
    }

    let chars: [Character]
    var i = 0

    init(text: String) { chars = Array(text) }

    var atEnd: Bool { i >= chars.count }

    mutating func skipSpaces() {
        while i < chars.count, chars[i] == " " || chars[i] == "\t" { i += 1 }
    }

    mutating func parseValue() throws(Failure) -> ConfigFile.Value {
        skipSpaces()
        guard i < chars.count else { throw Failure("a value is missing after =") }
        switch chars[i] {
        case "\"": return .string(try basicString())
        case "'": return .string(try literalString())
        case "[": return try array()
        case "t", "f": return try boolean()
        default: return try integer()
        }
    }

    mutating func basicString() throws(Failure) -> String {
        i += 1
        var out = ""
        while i < chars.count {
            let c = chars[i]
            i += 1
            if c == "\"" { return out }
            if c == "\\" {
                guard i < chars.count else { break }
                let e = chars[i]
                i += 1
                switch e {
                case "\"": out.append("\"")
                case "\\": out.append("\\")
                case "n": out.append("\n")
                case "t": out.append("\t")
                case "u", "U":
                    let n = e == "u" ? 4 : 8
                    guard i + n <= chars.count, let v = UInt32(String(chars[i..<(i + n)]), radix: 16), let scalar = Unicode.Scalar(v) else {
                        throw Failure("\\\(e) needs \(n) hex digits of a Unicode scalar")
                    }
                    out.unicodeScalars.append(scalar)
                    i += n
                default: throw Failure("unknown escape \\\(e) in a string")
                }
                continue
            }
            out.append(c)
        }
        throw Failure("a string is not closed with \"")
    }

    mutating func literalString() throws(Failure) -> String {
        i += 1
        var out = ""
        while i < chars.count {
            let c = chars[i]
            i += 1
            if c == "'" { return out }
            out.append(c)
        }
        throw Failure("a string is not closed with '")
    }

    mutating func array() throws(Failure) -> ConfigFile.Value {
        i += 1
        var items: [ConfigFile.Value] = []
        while true {
            skipSpaces()
            guard i < chars.count else { throw Failure("an array is not closed with ]") }
            if chars[i] == "]" {
                i += 1
                return .array(items)
            }
            items.append(try parseValue())
            skipSpaces()
            guard i < chars.count else { throw Failure("an array is not closed with ]") }
            if chars[i] == "," {
                i += 1
            } else if chars[i] != "]" {
                throw Failure("array items are separated by commas")
            }
        }
    }

    mutating func boolean() throws(Failure) -> ConfigFile.Value {
        for (word, value) in [("true", true), ("false", false)] where String(chars[i...].prefix(word.count)) == word {
            i += word.count
            return .boolean(value)
        }
        throw Failure("expected true or false; strings need quotes")
    }

    mutating func integer() throws(Failure) -> ConfigFile.Value {
        var text = ""
        while i < chars.count, chars[i] == "-" || chars[i] == "+" || chars[i] == "_" || chars[i].isNumber {
            if chars[i] != "_" { text.append(chars[i]) }
            i += 1
        }
        guard !text.isEmpty, let v = Int64(text) else {
            throw Failure("expected a number, true/false, a \"string\" or an [array]")
        }
        return .integer(v)
    }
}

extension String {
    package var trimmed: String {
        String(drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed().drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed())
    }
}
