import CHandoffOpenSSL
import HandoffModel

/// The records two members exchange inside a TLS channel that the account key opened, before any
/// application byte: each proves which device it is. Certificates never travel in the TLS
/// handshake itself, so a stranger — who cannot complete a handshake keyed from the account
/// secret — never sees a device id or the account's root (docs/security.md).
///
///     record   = kind (1 byte) ‖ length (2 bytes, big-endian) ‖ body
///     proof    = kind 1: certificate length (2) ‖ device certificate (DER) ‖ Ed25519 signature (64)
///                [‖ the account's root links: each length (2) ‖ link certificate (DER)]
///     refusal  = kind 2: a `TLSError.Code` raw value (ASCII)
///
/// The signature covers `context ‖ role ‖ exporter`, where the exporter is 32 bytes of this TLS
/// connection's keying material (RFC 8446 §7.5): a proof cannot be replayed on another connection,
/// nor a server's proof reflected as a client's. The client proves first; the server answers with
/// its own proof only once it accepted the client's — so, as before, a client counts itself
/// accepted only when the server's proof arrives. A device whose account key was rotated sends its
/// root chain's links (`RootChain`), absent before any rotation: a device that has not heard of
/// the rotation follows them from the root it knows to the one that issued the certificate.
enum DeviceProof {
    static let headerLength = 3
    static let signatureLength = 64
    /// Our certificates are a few hundred bytes; nobody needs to send more.
    static let maximumBody = 16 * 1024
    static let exporterLabel = "EXPORTER-handoff-device-proof"
    private static let signingContext = Array("handoff device proof v1".utf8)

    enum Kind: UInt8 {
        case proof = 1
        case refusal = 2
    }

    enum Role: UInt8 {
        case client = 1
        case server = 2
    }

    struct Record: Equatable {
        var kind: Kind
        var body: [UInt8]

        var bytes: [UInt8] {
            [kind.rawValue, UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
        }
    }

    /// The length of the body a header announces, or nil for a header that is not ours.
    static func bodyLength(header: [UInt8]) -> (Kind, Int)? {
        guard header.count == headerLength, let kind = Kind(rawValue: header[0]) else { return nil }
        let length = Int(header[1]) << 8 | Int(header[2])
        guard length <= maximumBody else { return nil }
        return (kind, length)
    }

    static func message(role: Role, exporter: [UInt8]) -> [UInt8] {
        signingContext + [role.rawValue] + exporter
    }

    static func proof(identity: DeviceIdentity, links: [[UInt8]] = [], role: Role, exporter: [UInt8]) throws(TLSError) -> Record {
        let der = identity.certificate.der
        let signature = try identity.key.sign(message(role: role, exporter: exporter))
        var body = [UInt8(der.count >> 8), UInt8(der.count & 0xFF)] + der + signature
        for link in links { body += [UInt8(link.count >> 8), UInt8(link.count & 0xFF)] + link }
        guard body.count <= maximumBody else { throw TLSError(.crypto, "the device proof is larger than \(maximumBody) bytes") }
        return Record(kind: .proof, body: body)
    }

    static func refusal(_ code: TLSError.Code) -> Record {
        Record(kind: .refusal, body: Array(code.rawValue.utf8))
    }

    /// A proof's certificate, signature and root links, split; nil when the body is not shaped
    /// like one.
    static func parseProof(_ body: [UInt8]) -> (certificate: [UInt8], signature: [UInt8], links: [[UInt8]])? {
        guard body.count >= 2 else { return nil }
        let length = Int(body[0]) << 8 | Int(body[1])
        guard length > 0, body.count >= 2 + length + signatureLength else { return nil }
        let signatureEnd = 2 + length + signatureLength
        var links: [[UInt8]] = []
        var at = signatureEnd
        while at < body.count {
            guard body.count - at >= 2, links.count < RootChain.maximumLinks else { return nil }
            let n = Int(body[at]) << 8 | Int(body[at + 1])
            guard n > 0, body.count - at - 2 >= n else { return nil }
            links.append(Array(body[(at + 2)..<(at + 2 + n)]))
            at += 2 + n
        }
        return (Array(body[2..<(2 + length)]), Array(body[(2 + length)..<signatureEnd]), links)
    }

    /// What the other side says it refused us for.
    static func refusalError(_ body: [UInt8]) -> TLSError {
        let code = TLSError.Code(rawValue: String(decoding: body.prefix(64), as: UTF8.self)) ?? .refusedByPeer
        switch code {
        // (Not `.revoked`: on a client that code means the *other* device was removed.)
        case .revoked: return TLSError(.refusedByPeer, "the other device refused this one (certificate revoked: it has been removed from the account)")
        case .expired: return TLSError(.refusedByPeer, "the other device refused this one: its certificate is expired or not yet valid (are both clocks right?)")
        default: return TLSError(.refusedByPeer, "the other device refused this one (\(code.rawValue))")
        }
    }

    /// Judges a device certificate against the account's roots in `trust`: the chain, the
    /// validity period, that it is a device (not a CA) named by the id of its own key, not
    /// revoked, and the device we meant to reach. A certificate from a retired root is accepted
    /// only for a device the account lists; one from a root newer than ours only if `links`
    /// (the sender's root chain) follow on from ours to it. Returns the device id, and whether
    /// it has been removed (a server lets a removed device through to tell it so;
    /// `TLSConnection` decides).
    static func judge(
        der: [UInt8], links: [[UInt8]] = [], trust: TrustPolicy, expectedPeer: DeviceID?
    ) -> Result<(Certificate, DeviceID, removed: Bool), TLSError> {
        guard let certificate = try? Certificate(der: der) else {
            return .failure(TLSError(.malformed, "the peer's certificate cannot be read"))
        }
        var code: Int32
        switch verify(certificate, against: trust.stores.current) {
        case .failure(let error): return .failure(error)
        case .success(let verdict): code = verdict
        }
        if code != X509_V_OK, code != X509_V_ERR_CERT_HAS_EXPIRED, code != X509_V_ERR_CERT_NOT_YET_VALID {
            if trust.stores.retired.contains(where: { (try? verify(certificate, against: $0).get()) == X509_V_OK }) {
                // Made before a rotation: fine for a device the account still lists — and for one
                // it removed, which is let through only to be told so (`removed` below).
                guard let id = certificate.keyID, trust.isListed(id) || trust.isRevoked(id) else {
                    return .failure(TLSError(.otherAccount, "the peer's certificate is from a retired account key, for a device the account does not list"))
                }
                code = X509_V_OK
            } else if !links.isEmpty, let newer = trust.chain.following(links), newer.links.count > trust.chain.links.count {
                // Made after a rotation this device has not heard of yet (its state follows), by
                // any root newer than the ones it knows (a device not certified again yet).
                for root in newer.links.dropFirst(trust.chain.links.count).reversed() {
                    // A root already retired there vouches only for devices this one lists.
                    if root !== newer.current, !(certificate.keyID.map(trust.isListed) ?? false) { continue }
                    guard let store = RootStores.store(trusting: root) else { continue }
                    defer { X509_STORE_free(store) }
                    if case .success(let verdict) = verify(certificate, against: store), verdict == X509_V_OK {
                        code = X509_V_OK
                        break
                    }
                }
            }
        }
        switch code {
        case X509_V_OK: break
        case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
            return .failure(TLSError(.selfSigned, "the peer's certificate is self-signed, not issued by this account", detail: text(code)))
        case X509_V_ERR_CERT_HAS_EXPIRED, X509_V_ERR_CERT_NOT_YET_VALID:
            return .failure(TLSError(.expired, "the peer's certificate is expired or not yet valid", detail: text(code)))
        default:
            return .failure(TLSError(.otherAccount, "the peer's certificate was not issued by this account", detail: text(code)))
        }
        guard X509_check_ca(certificate.x509) == 0 else {
            return .failure(TLSError(.otherAccount, "the peer presented a CA certificate instead of a device certificate"))
        }
        guard let id = certificate.keyID, certificate.commonName == id.text else {
            return .failure(TLSError(.wrongDeviceID, "the peer's certificate names a device id that is not its key's"))
        }
        if let expectedPeer, id != expectedPeer {
            return .failure(TLSError(.wrongDeviceID, "the peer is device \(id.short)…, not the \(expectedPeer.short)… it advertised"))
        }
        return .success((certificate, id, trust.isRevoked(id)))
    }

    /// `X509_verify_cert`'s verdict on `certificate` against `store` (`X509_V_OK`, or why not).
    private static func verify(_ certificate: Certificate, against store: OpaquePointer) -> Result<Int32, TLSError> {
        guard let context = X509_STORE_CTX_new() else { return .failure(OpenSSLErrors.failure("cannot allocate a verification context")) }
        defer { X509_STORE_CTX_free(context) }
        guard X509_STORE_CTX_init(context, store, certificate.x509, nil) == 1 else {
            return .failure(OpenSSLErrors.failure("cannot start verifying a certificate"))
        }
        let ok = X509_verify_cert(context) == 1
        let code = ok ? X509_V_OK : X509_STORE_CTX_get_error(context)
        _ = OpenSSLErrors.drain()
        return .success(code == X509_V_OK && !ok ? X509_V_ERR_UNSPECIFIED : code)
    }

    private static func text(_ code: Int32) -> String { String(cString: X509_verify_cert_error_string(Int(code))) }
}

/// What a server makes of a ClientHello before it answers anything (pure; `TLSContext`'s
/// ClientHello callback hands it the raw extensions).
enum ClientHelloCheck {
    enum Decision: Equatable {
        /// The first (our clients send one) PSK identity the client offers, looked up next, and
        /// the ClientHello's random (a hello replayed whole has the same one).
        case offered(identity: [UInt8], random: [UInt8])
        case refused(TLSError.Code, alert: Int32, String)
    }

    /// - Parameters:
    ///   - supportedVersions: the supported_versions extension's body, if any (RFC 8446 §4.2.1).
    ///   - preSharedKey: the pre_shared_key extension's body, if any (RFC 8446 §4.2.11).
    ///   - random: the ClientHello's 32 random bytes (RFC 8446 §4.1.2).
    static func decide(supportedVersions: [UInt8]?, preSharedKey: [UInt8]?, random: [UInt8]) -> Decision {
        guard let versions = supportedVersions, offersTLS13(versions) else {
            return .refused(.protocolVersion, alert: SSL_AD_PROTOCOL_VERSION, "the peer does not speak TLS 1.3")
        }
        guard let psk = preSharedKey else {
            return .refused(.otherAccount, alert: SSL_AD_HANDSHAKE_FAILURE, "the peer did not offer this account's key (a stranger, or not handoff)")
        }
        guard let identity = firstIdentity(psk) else {
            return .refused(.malformed, alert: SSL_AD_DECODE_ERROR, "the peer sent a malformed pre-shared key offer")
        }
        return .offered(identity: identity, random: random)
    }

    static func offersTLS13(_ body: [UInt8]) -> Bool {
        guard let length = body.first, Int(length) == body.count - 1, length % 2 == 0 else { return false }
        return stride(from: 1, to: body.count, by: 2).contains { body[$0] == 0x03 && body[$0 + 1] == 0x04 }
    }

    /// identities<7..2^16-1> = { identity<1..2^16-1>, obfuscated_ticket_age (4) }…, then binders.
    static func firstIdentity(_ body: [UInt8]) -> [UInt8]? {
        guard body.count >= 2 else { return nil }
        let listLength = Int(body[0]) << 8 | Int(body[1])
        guard listLength >= 7, 2 + listLength <= body.count, body.count >= 4 else { return nil }
        let identityLength = Int(body[2]) << 8 | Int(body[3])
        guard identityLength >= 1, 4 + identityLength + 4 <= 2 + listLength else { return nil }
        return Array(body[4..<(4 + identityLength)])
    }
}
