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

    /// SHA-256 of bytes that come in pieces (a file read a chunk at a time): `update` each, then
    /// `finish` once.
    public final class SHA256Digest {
        private let context: OpaquePointer

        public init() {
            guard let context = EVP_MD_CTX_new() else { preconditionFailure("cannot allocate a digest context") }
            self.context = context
            precondition(EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1, "SHA-256 is not available")
        }

        deinit { EVP_MD_CTX_free(context) }

        public func update(_ bytes: UnsafeRawBufferPointer) {
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
            _ = EVP_DigestUpdate(context, base, bytes.count)
        }

        /// The digest; the object is spent.
        public func finish() -> [UInt8] {
            var digest = [UInt8](repeating: 0, count: 32)
            var length: UInt32 = 32
            _ = EVP_DigestFinal_ex(context, &digest, &length)
            return digest
        }
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

// MARK: - AEAD

extension Crypto {
    public static let aeadKeyLength = 32
    public static let aeadNonceLength = 12
    public static let aeadTagLength = 16

    /// ChaCha20-Poly1305 (RFC 8439): ciphertext followed by the full 16-byte tag.
    public static func seal(key: [UInt8], nonce: [UInt8], plaintext: [UInt8], associatedData: [UInt8]) -> [UInt8] {
        precondition(key.count == aeadKeyLength && nonce.count == aeadNonceLength)
        guard let ctx = EVP_CIPHER_CTX_new() else { preconditionFailure("cannot allocate a cipher context") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        var out = [UInt8](repeating: 0, count: plaintext.count + aeadTagLength)
        var length: Int32 = 0
        var ok = EVP_EncryptInit_ex(ctx, EVP_chacha20_poly1305(), nil, key, nonce) == 1
        ok = ok && EVP_EncryptUpdate(ctx, nil, &length, associatedData, Int32(associatedData.count)) == 1
        ok = ok && out.withUnsafeMutableBufferPointer { o in
            EVP_EncryptUpdate(ctx, o.baseAddress, &length, plaintext, Int32(plaintext.count)) == 1
                && EVP_EncryptFinal_ex(ctx, o.baseAddress! + Int(length), &length) == 1
                && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, Int32(aeadTagLength), o.baseAddress! + plaintext.count) == 1
        }
        precondition(ok, "ChaCha20-Poly1305 sealing failed")
        return out
    }

    /// The plaintext, or nil if the tag does not verify (wrong key, or tampered).
    public static func open(key: [UInt8], nonce: [UInt8], sealed: [UInt8], associatedData: [UInt8]) -> [UInt8]? {
        guard key.count == aeadKeyLength, nonce.count == aeadNonceLength, sealed.count >= aeadTagLength,
            let ctx = EVP_CIPHER_CTX_new()
        else { return nil }
        defer { EVP_CIPHER_CTX_free(ctx) }
        let bodyLength = sealed.count - aeadTagLength
        var tag = Array(sealed[bodyLength...])
        var out = [UInt8](repeating: 0, count: max(1, bodyLength))
        var length: Int32 = 0
        var ok = EVP_DecryptInit_ex(ctx, EVP_chacha20_poly1305(), nil, key, nonce) == 1
        ok = ok && EVP_DecryptUpdate(ctx, nil, &length, associatedData, Int32(associatedData.count)) == 1
        ok = ok && sealed.withUnsafeBufferPointer { s in
            out.withUnsafeMutableBufferPointer { o in
                EVP_DecryptUpdate(ctx, o.baseAddress, &length, s.baseAddress, Int32(bodyLength)) == 1
            }
        }
        ok = ok && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, Int32(aeadTagLength), &tag) == 1
        var finalLength: Int32 = 0
        ok = ok && out.withUnsafeMutableBufferPointer { EVP_DecryptFinal_ex(ctx, $0.baseAddress! + Int(length), &finalLength) == 1 }
        _ = OpenSSLErrors.drain()
        return ok ? Array(out.prefix(bodyLength)) : nil
    }
}
