import CHandoffOpenSSL
import HandoffModel

/// An Ed25519 key pair held by OpenSSL (an `EVP_PKEY`, freed with this object).
///
/// Sendable because OpenSSL allows concurrent use of one `EVP_PKEY` for signing and verifying
/// (each operation makes its own `EVP_MD_CTX`) and nothing here mutates the key after creation.
/// Its description never shows key material.
public final class SigningKey: @unchecked Sendable, CustomStringConvertible {
    let pkey: OpaquePointer

    init(owning pkey: OpaquePointer) {
        self.pkey = pkey
    }

    deinit {
        EVP_PKEY_free(pkey)
    }

    public static func generate() throws(TLSError) -> SigningKey {
        guard let ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nil) else {
            throw OpenSSLErrors.failure("cannot create an Ed25519 key generator")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(ctx) == 1, EVP_PKEY_keygen(ctx, &key) == 1, let key else {
            throw OpenSSLErrors.failure("cannot generate an Ed25519 key")
        }
        return SigningKey(owning: key)
    }

    /// Reads an unencrypted PKCS#8 PEM private key (what `privateKeyPEM` writes).
    public convenience init(privateKeyPEM pem: [UInt8]) throws(TLSError) {
        let key: OpaquePointer? = pem.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let key, EVP_PKEY_get_id(key) == EVP_PKEY_ED25519 else {
            if let key { EVP_PKEY_free(key) }
            throw OpenSSLErrors.failure("the key file does not hold an Ed25519 private key")
        }
        self.init(owning: key)
    }

    /// The private key as PEM: secret, to be written only to a 0600 file.
    public func privateKeyPEM() throws(TLSError) -> [UInt8] {
        guard let bio = BIO_new(BIO_s_mem()) else { throw OpenSSLErrors.failure("cannot allocate a buffer") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PrivateKey(bio, pkey, nil, nil, 0, nil, nil) == 1 else {
            throw OpenSSLErrors.failure("cannot write the private key")
        }
        return MemoryBIO.contents(bio)
    }

    /// The 32-byte raw private key (RFC 8032's seed): secret, sealed before it goes anywhere
    /// (`RecoveryEnvelope`).
    package func rawPrivateKey() throws(TLSError) -> [UInt8] {
        var length = 32
        var out = [UInt8](repeating: 0, count: 32)
        guard EVP_PKEY_get_raw_private_key(pkey, &out, &length) == 1, length == 32 else {
            throw OpenSSLErrors.failure("cannot read the private key")
        }
        return out
    }

    /// The key pair of a 32-byte raw private key.
    package convenience init(rawPrivateKey raw: [UInt8]) throws(TLSError) {
        guard raw.count == 32, let key = raw.withUnsafeBufferPointer({ EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, $0.baseAddress, $0.count) }) else {
            throw OpenSSLErrors.failure("not an Ed25519 private key")
        }
        self.init(owning: key)
    }

    /// The 32-byte raw public key.
    public var publicKey: [UInt8] {
        var length = 32
        var out = [UInt8](repeating: 0, count: 32)
        EVP_PKEY_get_raw_public_key(pkey, &out, &length)
        return Array(out.prefix(length))
    }

    /// The device (or account) id of this key.
    public var id: DeviceID { DeviceID(digest: Crypto.sha256(publicKey)) }

    public func sign(_ message: [UInt8]) throws(TLSError) -> [UInt8] {
        guard let md = EVP_MD_CTX_new() else { throw OpenSSLErrors.failure("cannot allocate a signing context") }
        defer { EVP_MD_CTX_free(md) }
        var signature = [UInt8](repeating: 0, count: 64)
        var length = 64
        let ok = message.withUnsafeBufferPointer { m in
            EVP_DigestSignInit(md, nil, nil, nil, pkey) == 1
                && EVP_DigestSign(md, &signature, &length, m.baseAddress, m.count) == 1
        }
        guard ok else { throw OpenSSLErrors.failure("Ed25519 signing failed") }
        return Array(signature.prefix(length))
    }

    /// Checks an Ed25519 signature against a raw public key.
    public static func verify(signature: [UInt8], message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard let key = publicKey.withUnsafeBufferPointer({ EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, $0.baseAddress, $0.count) })
        else {
            _ = OpenSSLErrors.drain()
            return false
        }
        defer { EVP_PKEY_free(key) }
        guard let md = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(md) }
        let ok = message.withUnsafeBufferPointer { m in
            signature.withUnsafeBufferPointer { s in
                EVP_DigestVerifyInit(md, nil, nil, nil, key) == 1
                    && EVP_DigestVerify(md, s.baseAddress, s.count, m.baseAddress, m.count) == 1
            }
        }
        _ = OpenSSLErrors.drain()
        return ok
    }

    public var description: String { "SigningKey(\(id.short)…, private part not shown)" }
}

enum MemoryBIO {
    static func contents(_ bio: OpaquePointer) -> [UInt8] {
        var pointer: UnsafeMutablePointer<CChar>?
        let length = handoff_BIO_get_mem_data(bio, &pointer)
        guard length > 0, let pointer else { return [] }
        return pointer.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
    }
}
