/// The one-time code `handoffctl account invite` prints and `account join` takes.
///
/// It carries 128 random bits, because it keys a TLS 1.3 external PSK: a recorded join exchange
/// lets an attacker test guesses offline, and 2^128 guesses is out of reach (docs/security.md).
/// Written in Crockford's base32 (no I, L, O, U; read case-insensitively, I/L as 1 and O as 0) in
/// groups of four, with two check characters so a typo is caught before anything is sent.
public struct InviteCode: Sendable, Equatable {
    public static let secretLength = 16
    public let secret: [UInt8]

    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)
    static let dataSymbols = 26  // ⌈128 / 5⌉

    public init(secret: [UInt8]) {
        precondition(secret.count == InviteCode.secretLength)
        self.secret = secret
    }

    /// `K7Q2-M9XT-4HVN-P3RW-8CYD-AB6F-Q2JW`: 26 data symbols and 2 check symbols.
    public var text: String {
        let symbols = InviteCode.symbols(of: secret)
        let all = symbols + InviteCode.check(symbols)
        var out = ""
        for (i, s) in all.enumerated() {
            if i > 0, i % 4 == 0 { out += "-" }
            out.unicodeScalars.append(Unicode.Scalar(InviteCode.alphabet[Int(s)]))
        }
        return out
    }

    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case wrongLength(Int)
        case invalidCharacter(Character)
        case checksumMismatch

        /// What is wrong with what was typed, for the person who typed it.
        public var description: String { describe(as: "invite code") }

        /// The same, for a code of another kind written the same way (`RecoveryCode`).
        public func describe(as noun: String) -> String {
            switch self {
            case .wrongLength(let n):
                "a\(noun.first.map { "aeiou".contains($0) } == true ? "n" : "") \(noun) has 28 letters and digits (7 groups of 4); this one has \(n)"
            case .invalidCharacter(let c):
                "a\(noun.first.map { "aeiou".contains($0) } == true ? "n" : "") \(noun) has no \(displayQuoted(String(c))); check what you typed"
            case .checksumMismatch:
                "the \(noun) has a typo (its last two characters do not match the rest); check what you typed"
            }
        }
    }

    /// Accepts what a person types: any case, dashes and spaces anywhere, I/L for 1, O for 0.
    public init(parsing text: String) throws(ParseError) {
        var symbols: [UInt8] = []
        for ch in text.uppercased() {
            if ch == "-" || ch == " " { continue }
            let normalized: Character =
                switch ch {
                case "I", "L": "1"
                case "O": "0"
                default: ch
                }
            guard let ascii = normalized.asciiValue, let v = InviteCode.alphabet.firstIndex(of: ascii) else {
                throw .invalidCharacter(ch)
            }
            symbols.append(UInt8(v))
        }
        guard symbols.count == InviteCode.dataSymbols + 2 else { throw .wrongLength(symbols.count) }
        let data = Array(symbols[0..<InviteCode.dataSymbols])
        guard InviteCode.check(data) == Array(symbols[InviteCode.dataSymbols...]) else { throw .checksumMismatch }
        guard let secret = InviteCode.bytes(of: data) else { throw .checksumMismatch }
        self.secret = secret
    }

    static func symbols(of bytes: [UInt8]) -> [UInt8] {
        // 128 bits as 26 five-bit symbols, big-endian, with two leading zero bits.
        var value = bytes.reduce(into: [UInt8]()) { $0.append($1) }
        var out = [UInt8](repeating: 0, count: dataSymbols)
        for i in stride(from: dataSymbols - 1, through: 0, by: -1) {
            var remainder: UInt16 = 0
            for j in 0..<value.count {
                let acc = remainder << 8 | UInt16(value[j])
                value[j] = UInt8(acc / 32)
                remainder = acc % 32
            }
            out[i] = UInt8(remainder)
        }
        return out
    }

    static func bytes(of symbols: [UInt8]) -> [UInt8]? {
        var value = [UInt8](repeating: 0, count: secretLength)
        for s in symbols {
            var carry = UInt16(s)
            for j in stride(from: secretLength - 1, through: 0, by: -1) {
                let acc = UInt16(value[j]) * 32 + carry
                value[j] = UInt8(acc & 0xFF)
                carry = acc >> 8
            }
            guard carry == 0 else { return nil }  // more than 128 bits
        }
        return value
    }

    /// A weighted sum modulo the prime 1021, as two symbols: catches any single wrong symbol and
    /// any swap of two neighbours.
    static func check(_ symbols: [UInt8]) -> [UInt8] {
        var sum = 0
        for (i, s) in symbols.enumerated() { sum = (sum + (i + 1) * Int(s)) % 1021 }
        return [UInt8(sum / 32), UInt8(sum % 32)]
    }
}
