#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// The key that signs our updates to a unicast zone (RFC 8945), read from a file in the format
/// BIND's `tsig-keygen NAME` prints (and Knot's `keymgr -t` reads):
///
///     key "handoff-laptop" {
///         algorithm hmac-sha256;
///         secret "base64…";
///     };
///
/// A shared secret: the file must be the user's and readable by nobody else (0600 or 0400), or
/// handoffd refuses it and says how to fix it. The secret is never logged or shown.
public struct TSIGKey: Sendable, Equatable {
    public var name: String
    /// As the file names it (`hmac-sha256`).
    public var algorithm: String
    /// Base64, as in the file.
    public var secret: String

    /// What ldns signs with (it has no HMAC-SHA224, and misspells HMAC-SHA384's name).
    public static let algorithms = ["hmac-md5", "hmac-sha1", "hmac-sha256", "hmac-sha512"]

    public init(name: String, algorithm: String, secret: String) {
        self.name = name
        self.algorithm = algorithm
        self.secret = secret
    }

    /// The algorithm's domain name as ldns (and RFC 8945 §6) spells it.
    var algorithmName: String {
        algorithm == "hmac-md5" ? "hmac-md5.sig-alg.reg.int." : algorithm + "."
    }

    /// The key's name as a fully qualified domain name.
    var keyName: String { name.hasSuffix(".") ? name : name + "." }

    public struct Problem: Error, Equatable, CustomStringConvertible {
        public var description: String
    }

    /// Reads and checks `path`.
    public static func load(path: String) throws(Problem) -> TSIGKey {
        var st = stat()
        guard stat(path, &st) == 0 else {
            throw Problem(description: "cannot read the TSIG key file \(path): \(String(cString: strerror(errno)))")
        }
        guard st.st_mode & S_IFMT == S_IFREG else { throw Problem(description: "the TSIG key file \(path) is not a regular file") }
        guard st.st_mode & 0o077 == 0 else {
            throw Problem(description: "the TSIG key file \(path) is readable by others; run: chmod 600 \(path)")
        }
        guard st.st_uid == getuid() else { throw Problem(description: "the TSIG key file \(path) belongs to another user") }
        guard st.st_size <= 64 * 1024, let data = FileManager.default.contents(atPath: path) else {
            throw Problem(description: "cannot read the TSIG key file \(path)")
        }
        return try parse(String(decoding: data, as: UTF8.self), file: path)
    }

    /// Parses the first `key` statement of BIND's configuration syntax in `text`.
    public static func parse(_ text: String, file: String = "the TSIG key file") throws(Problem) -> TSIGKey {
        let tokens = tokenize(text)
        func fail(_ what: String) -> Problem {
            Problem(description: "\(file) is not a key as tsig-keygen writes it (\(what))")
        }
        guard let start = tokens.firstIndex(of: "key"), tokens.count > start + 2, tokens[start + 2] == "{" else {
            throw fail("no `key \"NAME\" {`")
        }
        let name = tokens[start + 1]
        var algorithm: String?
        var secret: String?
        var index = start + 3
        while index < tokens.count, tokens[index] != "}" {
            let word = tokens[index]
            guard index + 2 < tokens.count, tokens[index + 2] == ";" else { throw fail("`\(word)` without a value and `;`") }
            switch word {
            case "algorithm": algorithm = tokens[index + 1].lowercased()
            case "secret": secret = tokens[index + 1]
            default: break
            }
            index += 3
        }
        guard index < tokens.count else { throw fail("no closing `}`") }
        guard !name.isEmpty, name.utf8.count <= 253, name.allSatisfy({ $0.isLetter || $0.isNumber || "-_.".contains($0) }) else {
            throw fail("the key's name is not a domain name")
        }
        guard let algorithm else { throw fail("no algorithm") }
        guard algorithms.contains(algorithm) else {
            throw Problem(description: "\(file) uses \(algorithm); handoff signs with \(algorithms.joined(separator: ", "))")
        }
        guard let secret, let bytes = Data(base64Encoded: secret), bytes.count >= 16 else { throw fail("no secret of at least 16 bytes in base64") }
        return TSIGKey(name: name, algorithm: algorithm, secret: secret)
    }

    /// Words, quoted strings (unquoted), and `{`, `}`, `;`; comments (`#`, `//`, `/* */`) dropped.
    static func tokenize(_ text: String) -> [String] {
        var tokens: [String] = []
        let characters = Array(text.unicodeScalars)
        var i = 0
        var word = ""
        func flush() {
            if !word.isEmpty { tokens.append(word) }
            word = ""
        }
        while i < characters.count {
            let c = characters[i]
            let next = i + 1 < characters.count ? characters[i + 1] : " "
            if c == "#" || (c == "/" && next == "/") {
                flush()
                while i < characters.count, characters[i] != "\n" { i += 1 }
            } else if c == "/" && next == "*" {
                flush()
                i += 2
                while i + 1 < characters.count, !(characters[i] == "*" && characters[i + 1] == "/") { i += 1 }
                i += 2
            } else if c == "\"" {
                flush()
                i += 1
                var quoted = ""
                while i < characters.count, characters[i] != "\"" {
                    quoted.unicodeScalars.append(characters[i])
                    i += 1
                }
                tokens.append(quoted)
                i += 1
            } else if c == "{" || c == "}" || c == ";" {
                flush()
                tokens.append(String(c))
                i += 1
            } else if c == " " || c == "\t" || c == "\n" || c == "\r" {
                flush()
                i += 1
            } else {
                word.unicodeScalars.append(c)
                i += 1
            }
        }
        flush()
        return tokens
    }
}
