/// A device's identity: the SHA-256 of its Ed25519 public key, written as 52 lower-case base32
/// letters. Derived from the key, so a certificate cannot claim someone else's id, and long enough
/// that nobody can make a key for a chosen id. Accounts are named the same way, from their root key.
public struct DeviceID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let text: String

    public static let digestLength = 32
    public static let textLength = 52

    /// From the SHA-256 digest of the public key.
    public init(digest: [UInt8]) {
        precondition(digest.count == DeviceID.digestLength)
        text = Base32.encode(digest)
    }

    /// Parses the text form (case-insensitive).
    public init?(_ text: String) {
        let lower = text.lowercased()
        guard lower.utf8.count == DeviceID.textLength, let bytes = Base32.decode(lower), bytes.count == DeviceID.digestLength,
            Base32.encode(bytes) == lower
        else { return nil }
        self.text = lower
    }

    /// The first letters, for tables; `continue` and `devices remove` accept any unique prefix.
    public var short: String { String(text.prefix(12)) }

    public var description: String { text }

    public static func < (a: DeviceID, b: DeviceID) -> Bool { a.text < b.text }
}

extension DeviceID: Codable {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = DeviceID(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a device id"))
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(text)
    }
}

/// RFC 4648 base32, lower case, no padding.
public enum Base32 {
    static let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for b in bytes {
            buffer = (buffer << 8) | UInt32(b)
            bits += 8
            while bits >= 5 {
                out.append(alphabet[Int((buffer >> UInt32(bits - 5)) & 31)])
                bits -= 5
            }
        }
        if bits > 0 { out.append(alphabet[Int((buffer << UInt32(5 - bits)) & 31)]) }
        return String(decoding: out, as: UTF8.self)
    }

    public static func decode(_ text: String) -> [UInt8]? {
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for c in text.utf8 {
            guard let v = alphabet.firstIndex(of: c) else { return nil }
            buffer = (buffer << 5) | UInt32(v)
            bits += 5
            if bits >= 8 {
                out.append(UInt8((buffer >> UInt32(bits - 8)) & 0xFF))
                bits -= 8
            }
        }
        return out
    }
}
