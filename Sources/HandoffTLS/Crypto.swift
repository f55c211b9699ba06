import CHandoffOpenSSL

/// The primitives handoff needs besides TLS, all from the same OpenSSL (one crypto library).
public enum Crypto {
    /// Bytes from OpenSSL's CSPRNG.
    public static func randomBytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let ok = bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        precondition(ok == 1, "the system random generator failed")
        return bytes
    }

    public static func sha256(_ data: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        data.withUnsafeBufferPointer { input in
            digest.withUnsafeMutableBufferPointer { out in
                _ = SHA256(input.baseAddress, input.count, out.baseAddress)
            }
        }
        return digest
    }

    public static func hmacSHA256(key: [UInt8], _ data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 32
        key.withUnsafeBufferPointer { k in
            data.withUnsafeBufferPointer { d in
                out.withUnsafeMutableBufferPointer { o in
                    _ = HMAC(EVP_sha256(), k.baseAddress, Int32(k.count), d.baseAddress, d.count, o.baseAddress, &length)
                }
            }
        }
        return out
    }

    /// HKDF-SHA256 (RFC 5869), extract then expand.
    public static func hkdf(secret: [UInt8], salt: [UInt8] = [], info: [UInt8], length: Int) -> [UInt8] {
        precondition(length <= 255 * 32)
        let prk = hmacSHA256(key: salt.isEmpty ? [UInt8](repeating: 0, count: 32) : salt, secret)
        var okm: [UInt8] = []
        var previous: [UInt8] = []
        var counter: UInt8 = 1
        while okm.count < length {
            previous = hmacSHA256(key: prk, previous + info + [counter])
            okm += previous
            counter += 1
        }
        return Array(okm.prefix(length))
    }

    /// Equal without leaking where they differ through timing.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<a.count { diff |= a[i] ^ b[i] }
        return diff == 0
    }
}
