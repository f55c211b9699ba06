import CHandoffOpenSSL
import HandoffModel

/// An `SSL_CTX` configured the one way handoff uses TLS: 1.3 only, X25519, no session cache or
/// tickets, ALPN required, and either mutual certificate authentication against the account root or
/// (joins only) an external PSK. Freed with this object.
///
/// Sendable: after construction the `SSL_CTX` is only read (OpenSSL allows creating connections
/// from one context on many threads); what changes at run time lives in `TrustPolicy`.
public final class TLSContext: @unchecked Sendable {
    public enum Role: Sendable { case server, client }

    let ctx: OpaquePointer
    public let role: Role
    let trust: TrustPolicy?
    let joinLookup: (any JoinPSKLookup)?
    let joinPSK: JoinPSK?
    let identity: DeviceIdentity?
    /// The PSK identity handed to OpenSSL by pointer must outlive every handshake (FACTS.md).
    private let pskIdentityStorage: UnsafeMutableBufferPointer<UInt8>?
    let alpn: [UInt8]

    /// Lazily created once per process: the ex_data slot where each SSL finds its TLSConnection.
    static let connectionIndex: Int32 = handoff_SSL_get_ex_new_index()

    private init(
        role: Role,
        identity: DeviceIdentity?,
        trust: TrustPolicy?,
        joinLookup: (any JoinPSKLookup)?,
        joinPSK: JoinPSK?,
        alpn: [String],
        ciphersuites: String,
        maximumVersion: Int32 = TLS1_3_VERSION
    ) throws(TLSError) {
        guard let ctx = SSL_CTX_new(TLS_method()) else { throw OpenSSLErrors.failure("cannot create a TLS context") }
        self.ctx = ctx
        self.role = role
        self.identity = identity
        self.trust = trust
        self.joinLookup = joinLookup
        self.joinPSK = joinPSK
        self.alpn = alpn.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }
        if let joinPSK {
            let storage = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: joinPSK.identity.count)
            _ = storage.initialize(from: joinPSK.identity)
            pskIdentityStorage = storage
        } else {
            pskIdentityStorage = nil
        }

        var ok =
            handoff_SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) == 1
            && handoff_SSL_CTX_set_max_proto_version(ctx, maximumVersion) == 1
            && handoff_SSL_CTX_set1_groups_list(ctx, "X25519:P-256") == 1
            && SSL_CTX_set_ciphersuites(ctx, ciphersuites) == 1
            && SSL_CTX_set_num_tickets(ctx, 0) == 1
        // No auto-chaining: peers already hold the account root, and strangers need not see it.
        _ = handoff_SSL_CTX_set_mode(ctx, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS | SSL_MODE_NO_AUTO_CHAIN))
        _ = handoff_SSL_CTX_set_session_cache_mode(ctx, Int(SSL_SESS_CACHE_OFF))
        // Our chains are one certificate of a few hundred bytes; nobody needs to send 100 KB.
        _ = handoff_SSL_CTX_set_max_cert_list(ctx, 16 * 1024)
        SSL_CTX_set_options(ctx, handoff_SSL_OP_hardening())

        if let identity {
            ok = ok && SSL_CTX_use_certificate(ctx, identity.certificate.x509) == 1
                && SSL_CTX_use_PrivateKey(ctx, identity.key.pkey) == 1
                && SSL_CTX_check_private_key(ctx) == 1
        }
        if let trust {
            ok = ok && X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), trust.root.x509) == 1
        }
        guard ok else { throw OpenSSLErrors.failure("cannot configure the TLS context") }

        // Certificates are always asked for and checked by our callback; a join client refuses any
        // certificate (the inviter must prove the code, not show a certificate we cannot judge yet).
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, TLSContext.verifyCallback)

        switch role {
        case .server:
            // OpenSSL will not accept a PSK session under SSL_VERIFY_PEER without a session-id context.
            let sidContext = Array("handoff".utf8)
            guard SSL_CTX_set_session_id_context(ctx, sidContext, UInt32(sidContext.count)) == 1 else {
                throw OpenSSLErrors.failure("cannot set the session id context")
            }
            SSL_CTX_set_alpn_select_cb(ctx, TLSContext.alpnSelectCallback, nil)
            if joinLookup != nil {
                SSL_CTX_set_psk_find_session_callback(ctx, TLSContext.pskFindCallback)
            }
        case .client:
            let rc = self.alpn.withUnsafeBufferPointer { SSL_CTX_set_alpn_protos(ctx, $0.baseAddress, UInt32($0.count)) }
            guard rc == 0 else { throw OpenSSLErrors.failure("cannot set ALPN") }
            if joinPSK != nil {
                SSL_CTX_set_psk_use_session_callback(ctx, TLSContext.pskUseCallback)
            }
        }
    }

    deinit {
        SSL_CTX_free(ctx)
        pskIdentityStorage?.deallocate()
    }

    // MARK: Kinds of context

    /// The peer listener: member handshakes, and joins while an invite is pending.
    public static func memberServer(identity: DeviceIdentity, trust: TrustPolicy, joins: (any JoinPSKLookup)? = nil)
        throws(TLSError) -> TLSContext
    {
        try TLSContext(
            role: .server,
            identity: identity,
            trust: trust,
            joinLookup: joins,
            joinPSK: nil,
            alpn: [HandoffALPN.member, HandoffALPN.stream, HandoffALPN.join],
            ciphersuites: "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384"
        )
    }

    /// Dialling another device of the account: a session (`HandoffALPN.member`), or a
    /// continuation stream (`HandoffALPN.stream`).
    public static func memberClient(identity: DeviceIdentity, trust: TrustPolicy, alpn: String = HandoffALPN.member) throws(TLSError) -> TLSContext {
        try TLSContext(
            role: .client,
            identity: identity,
            trust: trust,
            joinLookup: nil,
            joinPSK: nil,
            alpn: [alpn],
            ciphersuites: "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384"
        )
    }

    /// Joining an account with a code. SHA-256 suites only, or the server may skip the PSK (FACTS.md).
    public static func joinClient(psk: JoinPSK) throws(TLSError) -> TLSContext {
        try TLSContext(
            role: .client,
            identity: nil,
            trust: nil,
            joinLookup: nil,
            joinPSK: psk,
            alpn: [HandoffALPN.join],
            ciphersuites: "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256"
        )
    }

    /// For tests: a client that is otherwise a member client but stops at TLS 1.2, or presents no
    /// certificate, or presents `identity` against some other trust.
    static func testClient(identity: DeviceIdentity?, trust: TrustPolicy?, maximumVersion: Int32 = TLS1_3_VERSION)
        throws(TLSError) -> TLSContext
    {
        try TLSContext(
            role: .client,
            identity: identity,
            trust: trust,
            joinLookup: nil,
            joinPSK: nil,
            alpn: [HandoffALPN.member],
            ciphersuites: "TLS_AES_128_GCM_SHA256",
            maximumVersion: maximumVersion
        )
    }

    // MARK: Callbacks (C function pointers: no captures; context comes through ex_data)

    static let verifyCallback: @convention(c) (Int32, OpaquePointer?) -> Int32 = { preverifyOK, store in
        guard let store,
            let ssl = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()),
            let connection = TLSConnection.from(ssl: OpaquePointer(ssl))
        else { return 0 }
        return connection.verify(preverifyOK: preverifyOK == 1, store: store) ? 1 : 0
    }

    static let alpnSelectCallback:
        @convention(c) (
            OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?,
            UnsafePointer<UInt8>?, UInt32, UnsafeMutableRawPointer?
        ) -> Int32 = { _, out, outLength, input, inputLength, _ in
            guard let out, let outLength, let input else { return SSL_TLSEXT_ERR_ALERT_FATAL }
            var i = 0
            let offered = UnsafeBufferPointer(start: input, count: Int(inputLength))
            while i < offered.count {
                let length = Int(offered[i])
                guard i + 1 + length <= offered.count else { break }
                let name = String(decoding: offered[(i + 1)..<(i + 1 + length)], as: UTF8.self)
                if HandoffALPN.certified.contains(name) || name == HandoffALPN.join {
                    out.pointee = input + i + 1
                    outLength.pointee = UInt8(length)
                    return SSL_TLSEXT_ERR_OK
                }
                i += 1 + length
            }
            return SSL_TLSEXT_ERR_ALERT_FATAL
        }

    static let pskFindCallback:
        @convention(c) (
            OpaquePointer?, UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<OpaquePointer?>?
        ) -> Int32 = { ssl, identity, identityLength, sessionOut in
            guard let ssl, let sessionOut else { return 0 }
            sessionOut.pointee = nil
            guard let connection = TLSConnection.from(ssl: ssl), let identity else { return 1 }
            let presented = Array(UnsafeBufferPointer(start: identity, count: identityLength))
            connection.presentedPSKIdentity = presented
            guard let key = connection.context.joinLookup?.psk(forIdentity: presented) else {
                connection.presentedUnknownPSK = true
                return 1
            }
            guard let session = TLSContext.pskSession(ssl: ssl, key: key) else { return 0 }
            sessionOut.pointee = session
            return 1
        }

    static let pskUseCallback:
        @convention(c) (
            OpaquePointer?, OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<Int>?,
            UnsafeMutablePointer<OpaquePointer?>?
        ) -> Int32 = { ssl, _, idOut, idLengthOut, sessionOut in
            guard let ssl, let idOut, let idLengthOut, let sessionOut,
                let connection = TLSConnection.from(ssl: ssl),
                let psk = connection.context.joinPSK,
                let storage = connection.context.pskIdentityStorage,
                let session = TLSContext.pskSession(ssl: ssl, key: psk.key)
            else { return 0 }
            idOut.pointee = UnsafePointer(storage.baseAddress)
            idLengthOut.pointee = storage.count
            sessionOut.pointee = session
            return 1
        }

    /// A TLS 1.3 session carrying an external PSK for TLS_AES_128_GCM_SHA256.
    static func pskSession(ssl: OpaquePointer, key: [UInt8]) -> OpaquePointer? {
        let suite: [UInt8] = [0x13, 0x01]
        guard let cipher = SSL_CIPHER_find(ssl, suite), let session = SSL_SESSION_new() else { return nil }
        let ok =
            key.withUnsafeBufferPointer { SSL_SESSION_set1_master_key(session, $0.baseAddress, $0.count) } == 1
            && SSL_SESSION_set_cipher(session, cipher) == 1
            && SSL_SESSION_set_protocol_version(session, TLS1_3_VERSION) == 1
        guard ok else {
            SSL_SESSION_free(session)
            return nil
        }
        return session
    }
}
