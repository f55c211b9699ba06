import CHandoffOpenSSL
import HandoffModel

/// An `SSL_CTX` configured the one way handoff uses TLS: 1.3 only, X25519, no session cache or
/// tickets, ALPN required, and always an external PSK with an ephemeral key exchange: keyed from the
/// account secret between members (a fresh identity per connection, `AccountKeys`), from what two
/// devices' last session derived (`ResumptionBook`), or from a join code. No certificate is ever
/// part of the handshake: members prove which device they are inside the channel (`DeviceProof`),
/// unless they resumed. Freed with this object.
///
/// Sendable: after construction the `SSL_CTX` is only read (OpenSSL allows creating connections
/// from one context on many threads); what changes at run time lives in `TrustPolicy`.
public final class TLSContext: @unchecked Sendable {
    public enum Role: Sendable { case server, client }

    let ctx: OpaquePointer
    public let role: Role
    let trust: TrustPolicy?
    /// (Member server) what member hellos must be addressed to, and which were answered already.
    let hellos: MemberHelloGuard?
    let joinLookup: (any JoinPSKLookup)?
    let joinPSK: JoinPSK?
    let identity: DeviceIdentity?
    /// (Tests) a client that offers no PSK at all, as any stock TLS client does.
    let offersPSK: Bool
    let alpn: [UInt8]

    /// Lazily created once per process: the ex_data slot where each SSL finds its TLSConnection.
    static let connectionIndex: Int32 = handoff_SSL_get_ex_new_index()

    /// Both suites hash with SHA-256, as the PSKs are made for (docs/platform.md: otherwise the server may
    /// skip the PSK).
    static let pskSuites = "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256"

    private init(
        role: Role,
        identity: DeviceIdentity?,
        trust: TrustPolicy?,
        hellos: MemberHelloGuard? = nil,
        joinLookup: (any JoinPSKLookup)?,
        joinPSK: JoinPSK?,
        alpn: [String],
        offersPSK: Bool = true,
        maximumVersion: Int32 = TLS1_3_VERSION
    ) throws(TLSError) {
        guard let ctx = SSL_CTX_new(TLS_method()) else { throw OpenSSLErrors.failure("cannot create a TLS context") }
        self.ctx = ctx
        self.role = role
        self.identity = identity
        self.trust = trust
        self.hellos = hellos
        self.joinLookup = joinLookup
        self.joinPSK = joinPSK
        self.offersPSK = offersPSK
        self.alpn = alpn.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }

        let ok =
            handoff_SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) == 1
            && handoff_SSL_CTX_set_max_proto_version(ctx, maximumVersion) == 1
            && handoff_SSL_CTX_set1_groups_list(ctx, "X25519:P-256") == 1
            && SSL_CTX_set_ciphersuites(ctx, Self.pskSuites) == 1
            && SSL_CTX_set_num_tickets(ctx, 0) == 1
        _ = handoff_SSL_CTX_set_mode(ctx, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS | SSL_MODE_NO_AUTO_CHAIN))
        _ = handoff_SSL_CTX_set_session_cache_mode(ctx, Int(SSL_SESS_CACHE_OFF))
        SSL_CTX_set_options(ctx, handoff_SSL_OP_hardening())
        guard ok else { throw OpenSSLErrors.failure("cannot configure the TLS context") }

        switch role {
        case .server:
            // Strangers are turned away at their ClientHello; no certificate is ever asked for.
            SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nil)
            // OpenSSL will not accept a PSK session without a session-id context.
            let sidContext = Array("handoff".utf8)
            guard SSL_CTX_set_session_id_context(ctx, sidContext, UInt32(sidContext.count)) == 1 else {
                throw OpenSSLErrors.failure("cannot set the session id context")
            }
            SSL_CTX_set_client_hello_cb(ctx, TLSContext.clientHelloCallback, nil)
            SSL_CTX_set_alpn_select_cb(ctx, TLSContext.alpnSelectCallback, nil)
            SSL_CTX_set_psk_find_session_callback(ctx, TLSContext.pskFindCallback)
        case .client:
            // A server that shows a certificate instead of using our PSK is not one of ours.
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, TLSContext.verifyCallback)
            let rc = self.alpn.withUnsafeBufferPointer { SSL_CTX_set_alpn_protos(ctx, $0.baseAddress, UInt32($0.count)) }
            guard rc == 0 else { throw OpenSSLErrors.failure("cannot set ALPN") }
            if offersPSK {
                SSL_CTX_set_psk_use_session_callback(ctx, TLSContext.pskUseCallback)
            }
        }
    }

    deinit {
        SSL_CTX_free(ctx)
    }

    /// How many account secrets a member client can offer a key from (`TLSConnection`'s
    /// `secretGeneration`): 2 while the previous secret is kept, else 1.
    public var secretGenerations: Int { trust?.secretGenerations ?? 1 }

    /// (Member client) whether a session with `device` left a key to resume with.
    public func canResume(with device: DeviceID) -> Bool {
        trust?.canResume(with: device) ?? false
    }

    /// (Member server) the key for a member PSK identity made by one of our secrets (or one of
    /// our resumption secrets: then with the device that holds it), addressed to this device,
    /// and not seen before; nil for anything else (answered like a wrong key).
    func memberKey(forIdentity identity: [UInt8]) -> MemberPSK? {
        guard let trust, let hellos, let me = self.identity else { return nil }
        let key = trust.psk(forMemberIdentity: identity, addressedTo: hellos.addressees(for: me.id))
        // One of this device's own hellos — reflected back, or replayed after a restart — is a
        // stranger's: answering it would say that the two addresses are one device.
        let own = me.madeHello(salt: AccountKeys.salt(ofIdentity: identity))
        // Looked up for every identity (remembered only for ours), so a replay costs what a stranger's hello does.
        let fresh = hellos.firstUse(ofSalt: AccountKeys.salt(ofIdentity: identity), remember: key != nil)
        return fresh && !own ? key : nil
    }

    /// (Server) the key of a pending invite's PSK identity, the first time this ClientHello comes:
    /// a join hello replayed whole is a stranger's, or it would tell whoever recorded it which
    /// host holds the invite (docs/security.md, "A captured ClientHello").
    func joinKey(forIdentity identity: [UInt8], hello random: [UInt8]) -> [UInt8]? {
        guard let key = joinLookup?.psk(forIdentity: identity) else { return nil }
        return hellos?.firstUse(ofSalt: random) ?? true ? key : nil
    }

    // MARK: Kinds of context

    /// The peer listener: member handshakes, and joins while an invite is pending.
    public static func memberServer(
        identity: DeviceIdentity, trust: TrustPolicy, hellos: MemberHelloGuard = MemberHelloGuard(), joins: (any JoinPSKLookup)? = nil
    ) throws(TLSError) -> TLSContext {
        try TLSContext(
            role: .server, identity: identity, trust: trust, hellos: hellos, joinLookup: joins, joinPSK: nil,
            alpn: [HandoffALPN.member, HandoffALPN.stream, HandoffALPN.join]
        )
    }

    /// Dialling another device of the account: a session (`HandoffALPN.member`), or a
    /// continuation stream (`HandoffALPN.stream`). Its hellos' salts carry this device's mark
    /// (`DeviceIdentity.helloSalt`), so a hello reflected back to it is a stranger's.
    public static func memberClient(
        identity: DeviceIdentity, trust: TrustPolicy, alpn: String = HandoffALPN.member
    ) throws(TLSError) -> TLSContext {
        try TLSContext(role: .client, identity: identity, trust: trust, hellos: nil, joinLookup: nil, joinPSK: nil, alpn: [alpn])
    }

    /// Joining an account with a code.
    public static func joinClient(psk: JoinPSK) throws(TLSError) -> TLSContext {
        try TLSContext(role: .client, identity: nil, trust: nil, joinLookup: nil, joinPSK: psk, alpn: [HandoffALPN.join])
    }

    /// For tests: a member client that offers no PSK (as a stock TLS client would), or stops at
    /// TLS 1.2.
    static func testClient(identity: DeviceIdentity, trust: TrustPolicy, offersPSK: Bool = true, maximumVersion: Int32 = TLS1_3_VERSION)
        throws(TLSError) -> TLSContext
    {
        try TLSContext(
            role: .client, identity: identity, trust: trust, joinLookup: nil, joinPSK: nil,
            alpn: [HandoffALPN.member], offersPSK: offersPSK, maximumVersion: maximumVersion
        )
    }

    // MARK: Callbacks (C function pointers: no captures; context comes through ex_data)

    /// (Client) any certificate at all: our servers never show one.
    static let verifyCallback: @convention(c) (Int32, OpaquePointer?) -> Int32 = { _, store in
        guard let store,
            let ssl = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()),
            let connection = TLSConnection.from(ssl: OpaquePointer(ssl))
        else { return 0 }
        connection.refuseServerCertificate()
        return 0
    }

    /// (Server) the first look at a ClientHello, before OpenSSL answers anything: a client that
    /// does not speak TLS 1.3, or offers no PSK this device knows, is refused with an alert and
    /// learns nothing more — no certificate, no identifier.
    static let clientHelloCallback: @convention(c) (OpaquePointer?, UnsafeMutablePointer<Int32>?, UnsafeMutableRawPointer?) -> Int32 = {
        ssl, alert, _ in
        guard let ssl, let alert, let connection = TLSConnection.from(ssl: ssl) else { return SSL_CLIENT_HELLO_ERROR }
        var versions: UnsafePointer<UInt8>?
        var versionsLength = 0
        var psk: UnsafePointer<UInt8>?
        var pskLength = 0
        let hasVersions = SSL_client_hello_get0_ext(ssl, UInt32(TLSEXT_TYPE_supported_versions), &versions, &versionsLength) == 1
        let hasPSK = SSL_client_hello_get0_ext(ssl, UInt32(TLSEXT_TYPE_psk), &psk, &pskLength) == 1
        var random: UnsafePointer<UInt8>?
        let randomLength = SSL_client_hello_get0_random(ssl, &random)
        let decision = ClientHelloCheck.decide(
            supportedVersions: hasVersions ? Array(UnsafeBufferPointer(start: versions, count: versionsLength)) : nil,
            preSharedKey: hasPSK ? Array(UnsafeBufferPointer(start: psk, count: pskLength)) : nil,
            random: Array(UnsafeBufferPointer(start: random, count: randomLength))
        )
        switch connection.accept(decision) {
        case .success:
            return SSL_CLIENT_HELLO_SUCCESS
        case .failure(let refusal):
            alert.pointee = refusal.alert
            return SSL_CLIENT_HELLO_ERROR
        }
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
                if HandoffALPN.all.contains(name) {
                    out.pointee = input + i + 1
                    outLength.pointee = UInt8(length)
                    return SSL_TLSEXT_ERR_OK
                }
                i += 1 + length
            }
            return SSL_TLSEXT_ERR_ALERT_FATAL
        }

    /// (Server) the PSK the ClientHello callback accepted.
    static let pskFindCallback:
        @convention(c) (
            OpaquePointer?, UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<OpaquePointer?>?
        ) -> Int32 = { ssl, identity, identityLength, sessionOut in
            guard let ssl, let sessionOut else { return 0 }
            sessionOut.pointee = nil
            guard let connection = TLSConnection.from(ssl: ssl), let identity,
                let key = connection.acceptedKey(forIdentity: Array(UnsafeBufferPointer(start: identity, count: identityLength)))
            else { return 0 }
            guard let session = TLSContext.pskSession(ssl: ssl, key: key) else { return 0 }
            sessionOut.pointee = session
            return 1
        }

    /// (Client) the join code's PSK, or this connection's fresh member offer.
    static let pskUseCallback:
        @convention(c) (
            OpaquePointer?, OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<Int>?,
            UnsafeMutablePointer<OpaquePointer?>?
        ) -> Int32 = { ssl, _, idOut, idLengthOut, sessionOut in
            guard let ssl, let idOut, let idLengthOut, let sessionOut,
                let connection = TLSConnection.from(ssl: ssl),
                let offer = connection.pskOffer,
                let session = TLSContext.pskSession(ssl: ssl, key: offer.key)
            else { return 0 }
            idOut.pointee = UnsafePointer(offer.identity.baseAddress)
            idLengthOut.pointee = offer.identity.count
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
