import CHandoffOpenSSL
import HandoffModel

#if canImport(Glibc)
import Glibc
#endif

/// An X.509 certificate held by OpenSSL (an `X509`, freed with this object). Immutable once built,
/// so it is shared freely between threads.
///
/// What handoff puts in certificates is deliberately plain: the subject's common name is the device
/// id (the account id for the root), and nothing names the user, the host or the account.
public final class Certificate: @unchecked Sendable {
    let x509: OpaquePointer

    init(owning x509: OpaquePointer) {
        self.x509 = x509
    }

    deinit {
        X509_free(x509)
    }

    /// The account root: self-signed, a CA for device certificates only (path length 0).
    public static func makeAccountRoot(key: SigningKey, notBefore: Timestamp, notAfter: Timestamp) throws(TLSError)
        -> Certificate
    {
        try makeRoot(key: key, issuer: nil, issuerKey: key, notBefore: notBefore, notAfter: notAfter)
    }

    /// A link of the account's root chain (`RootChain`): a CA certificate for the next root key,
    /// issued by the current root, shaped like the first root (path length 0: no CA under it).
    public static func makeRootLink(key: SigningKey, issuer: Certificate, issuerKey: SigningKey, notBefore: Timestamp, notAfter: Timestamp) throws(TLSError)
        -> Certificate
    {
        try makeRoot(key: key, issuer: issuer, issuerKey: issuerKey, notBefore: notBefore, notAfter: notAfter)
    }

    private static func makeRoot(key: SigningKey, issuer: Certificate?, issuerKey: SigningKey, notBefore: Timestamp, notAfter: Timestamp) throws(TLSError)
        -> Certificate
    {
        try build(
            subjectKey: key.pkey,
            commonName: key.id.text,
            issuer: issuer,
            issuerKey: issuerKey,
            notBefore: notBefore,
            notAfter: notAfter,
            extensions: [
                (NID_basic_constraints, "critical,CA:TRUE,pathlen:0"),
                (NID_key_usage, "critical,keyCertSign,cRLSign"),
                (NID_subject_key_identifier, "hash"),
            ] + (issuer == nil ? [] : [(NID_authority_key_identifier, "keyid:always")])
        )
    }

    /// Whether the key `publicKey` (raw Ed25519) signed this certificate.
    public func isIssued(byKey publicKey: [UInt8]) -> Bool {
        guard let key = publicKey.withUnsafeBufferPointer({ EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, $0.baseAddress, $0.count) }) else {
            _ = OpenSSLErrors.drain()
            return false
        }
        defer { EVP_PKEY_free(key) }
        let ok = X509_verify(x509, key) == 1
        _ = OpenSSLErrors.drain()
        return ok
    }

    /// A device certificate for `devicePublicKey` (raw Ed25519), signed by the account root.
    public static func issueDevice(
        publicKey devicePublicKey: [UInt8],
        root: Certificate,
        rootKey: SigningKey,
        notBefore: Timestamp,
        notAfter: Timestamp
    ) throws(TLSError) -> Certificate {
        guard
            let deviceKey = devicePublicKey.withUnsafeBufferPointer({
                EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, $0.baseAddress, $0.count)
            })
        else { throw OpenSSLErrors.failure("the device's public key is not an Ed25519 key") }
        defer { EVP_PKEY_free(deviceKey) }
        return try build(
            subjectKey: deviceKey,
            commonName: DeviceID(digest: Crypto.sha256(devicePublicKey)).text,
            issuer: root,
            issuerKey: rootKey,
            notBefore: notBefore,
            notAfter: notAfter,
            extensions: [
                (NID_basic_constraints, "critical,CA:FALSE"),
                (NID_key_usage, "critical,digitalSignature"),
                (NID_ext_key_usage, "serverAuth,clientAuth"),
                (NID_subject_key_identifier, "hash"),
                (NID_authority_key_identifier, "keyid:always"),
            ]
        )
    }

    /// Tests build odd certificates (self-signed devices, wrong common names) through this.
    static func build(
        subjectKey: OpaquePointer,
        commonName: String,
        issuer: Certificate?,
        issuerKey: SigningKey,
        notBefore: Timestamp,
        notAfter: Timestamp,
        extensions: [(Int32, String)]
    ) throws(TLSError) -> Certificate {
        guard let x = X509_new() else { throw OpenSSLErrors.failure("cannot allocate a certificate") }
        let cert = Certificate(owning: x)
        var serial = Crypto.randomBytes(16)
        serial[0] &= 0x7F  // positive
        guard let bn = BN_bin2bn(serial, Int32(serial.count), nil) else { throw OpenSSLErrors.failure("serial") }
        defer { BN_free(bn) }
        guard let name = X509_NAME_new() else { throw OpenSSLErrors.failure("name") }
        defer { X509_NAME_free(name) }
        let ok =
            X509_set_version(x, 2) == 1
            && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != nil
            && ASN1_TIME_set(X509_getm_notBefore(x), time_t(notBefore.microsecondsSinceEpoch / 1_000_000)) != nil
            && ASN1_TIME_set(X509_getm_notAfter(x), time_t(notAfter.microsecondsSinceEpoch / 1_000_000)) != nil
            && X509_set_pubkey(x, subjectKey) == 1
            && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, commonName, -1, -1, 0) == 1
            && X509_set_subject_name(x, name) == 1
            && X509_set_issuer_name(x, issuer.map { X509_get_subject_name($0.x509) } ?? name) == 1
        guard ok else { throw OpenSSLErrors.failure("cannot fill in the certificate") }

        var ctx = X509V3_CTX()
        handoff_X509V3_set_ctx_nodb(&ctx)
        X509V3_set_ctx(&ctx, issuer?.x509 ?? x, x, nil, nil, 0)
        for (nid, value) in extensions {
            guard let ext = X509V3_EXT_conf_nid(nil, &ctx, nid, value) else {
                throw OpenSSLErrors.failure("cannot build certificate extension \(value)")
            }
            defer { X509_EXTENSION_free(ext) }
            guard X509_add_ext(x, ext, -1) == 1 else { throw OpenSSLErrors.failure("cannot add extension") }
        }
        guard X509_sign(x, issuerKey.pkey, nil) > 0 else { throw OpenSSLErrors.failure("cannot sign the certificate") }
        return cert
    }

    // MARK: Reading and writing

    public convenience init(der: [UInt8]) throws(TLSError) {
        let x: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var p: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_X509(nil, &p, buffer.count)
        }
        guard let x else { throw OpenSSLErrors.failure("not a DER certificate") }
        self.init(owning: x)
    }

    public convenience init(pem: [UInt8]) throws(TLSError) {
        let x: OpaquePointer? = pem.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_X509(bio, nil, nil, nil)
        }
        guard let x else { throw OpenSSLErrors.failure("not a PEM certificate") }
        self.init(owning: x)
    }

    public var der: [UInt8] {
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_X509(x509, &out)
        guard length > 0, let out else { return [] }
        defer { handoff_OPENSSL_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }

    public var pem: [UInt8] {
        guard let bio = BIO_new(BIO_s_mem()) else { return [] }
        defer { BIO_free(bio) }
        guard PEM_write_bio_X509(bio, x509) == 1 else { return [] }
        return MemoryBIO.contents(bio)
    }

    // MARK: What it says

    /// The raw Ed25519 public key, or nil for any other key type.
    public var publicKey: [UInt8]? {
        guard let key = X509_get0_pubkey(x509), EVP_PKEY_get_id(key) == EVP_PKEY_ED25519 else { return nil }
        var length = 32
        var out = [UInt8](repeating: 0, count: 32)
        guard EVP_PKEY_get_raw_public_key(key, &out, &length) == 1 else { return nil }
        return Array(out.prefix(length))
    }

    /// The id derived from the certificate's key — the only id we believe.
    public var keyID: DeviceID? {
        publicKey.map { DeviceID(digest: Crypto.sha256($0)) }
    }

    public var commonName: String? {
        let name = X509_get_subject_name(x509)
        var buffer = [CChar](repeating: 0, count: 256)
        let n = X509_NAME_get_text_by_NID(name, NID_commonName, &buffer, Int32(buffer.count))
        guard n > 0 else { return nil }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    public var notAfter: Timestamp? { Certificate.timestamp(X509_get0_notAfter(x509)) }
    public var notBefore: Timestamp? { Certificate.timestamp(X509_get0_notBefore(x509)) }

    static func timestamp(_ time: UnsafePointer<ASN1_TIME>?) -> Timestamp? {
        guard let time else { return nil }
        var t = tm()
        guard ASN1_TIME_to_tm(time, &t) == 1 else { return nil }
        return Timestamp(secondsSinceEpoch: Int64(timegm(&t)))
    }
}
