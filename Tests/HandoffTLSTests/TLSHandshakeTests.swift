import CHandoffOpenSSL
import HandoffModel
import Testing

@testable import HandoffTLS

/// An account for tests: a root, and devices issued by it.
struct TestAccount {
    let rootKey: SigningKey
    let root: Certificate
    let secret: [UInt8]
    let trust: TrustPolicy

    init() throws {
        rootKey = try SigningKey.generate()
        root = try Certificate.makeAccountRoot(key: rootKey, notBefore: .now().adding(seconds: -60), notAfter: .now().adding(seconds: 86_400 * 365))
        secret = Crypto.randomBytes(32)
        trust = try TrustPolicy(root: root, accountSecrets: [secret])
    }

    /// The same account as another device sees it, holding other secrets (one that missed, or
    /// learned first of, a removal).
    func trust(secrets: [[UInt8]]) throws -> TrustPolicy {
        try TrustPolicy(root: root, accountSecrets: secrets)
    }

    func device(notBefore: Timestamp = .now().adding(seconds: -60), notAfter: Timestamp = .now().adding(seconds: 86_400)) throws
        -> DeviceIdentity
    {
        let key = try SigningKey.generate()
        let cert = try Certificate.issueDevice(publicKey: key.publicKey, root: root, rootKey: rootKey, notBefore: notBefore, notAfter: notAfter)
        return try DeviceIdentity(key: key, certificate: cert)
    }

    /// A device certificate whose common name is not its key's id (the root signed a lie).
    func lyingDevice() throws -> DeviceIdentity {
        let key = try SigningKey.generate()
        let other = try SigningKey.generate()
        let cert = try Certificate.build(
            subjectKey: key.pkey, commonName: other.id.text, issuer: root, issuerKey: rootKey,
            notBefore: .now().adding(seconds: -60), notAfter: .now().adding(seconds: 3600),
            extensions: [(NID_basic_constraints, "critical,CA:FALSE")]
        )
        return try DeviceIdentity(key: key, certificate: cert)
    }

    static func selfSignedDevice() throws -> DeviceIdentity {
        let key = try SigningKey.generate()
        let cert = try Certificate.build(
            subjectKey: key.pkey, commonName: key.id.text, issuer: nil, issuerKey: key,
            notBefore: .now().adding(seconds: -60), notAfter: .now().adding(seconds: 3600),
            extensions: [(NID_basic_constraints, "critical,CA:FALSE")]
        )
        return try DeviceIdentity(key: key, certificate: cert)
    }
}

struct StaticInvites: JoinPSKLookup {
    let psk: JoinPSK?
    func psk(forIdentity identity: [UInt8]) -> [UInt8]? {
        guard let psk, psk.identity == identity else { return nil }
        return psk.key
    }
}

/// Runs two connections against each other in memory until neither makes progress.
func pump(_ client: TLSConnection, _ server: TLSConnection) -> (client: TLSConnection.HandshakeStatus, server: TLSConnection.HandshakeStatus) {
    var c = client.handshake()
    var s = TLSConnection.HandshakeStatus.inProgress
    for _ in 0..<20 {
        let toServer = client.takeCiphertext()
        server.receive(toServer)
        s = server.handshake()
        let toClient = server.takeCiphertext()
        client.receive(toClient)
        c = client.handshake()
        if toServer.isEmpty && toClient.isEmpty && client.pendingCiphertext == 0 { break }
        if case .failed = s { break }
        if case .failed = c { break }
    }
    return (c, s)
}

func failureCode(_ status: TLSConnection.HandshakeStatus) -> TLSError.Code? {
    if case .failed(let e) = status { return e.code }
    return nil
}

/// Byte strings of `length` that both `a` and `b` contain.
func commonStrings(_ a: [UInt8], _ b: [UInt8], length: Int = 8) -> Set<[UInt8]> {
    guard a.count >= length, b.count >= length else { return [] }
    let windows = Set((0...(a.count - length)).map { Array(a[$0..<($0 + length)]) })
    return Set((0...(b.count - length)).map { Array(b[$0..<($0 + length)]) }).intersection(windows)
}

@Suite(.timeLimit(.minutes(3))) struct TLSHandshakeTests {
    @Test func aValidPairIsAcceptedBothWays() throws {
        let account = try TestAccount()
        let a = try account.device()
        let b = try account.device()
        let server = try TLSConnection(context: .memberServer(identity: a, trust: account.trust))
        let client = try TLSConnection(context: .memberClient(identity: b, trust: account.trust), expectedPeer: a.id)
        let (c, s) = pump(client, server)
        #expect(c == .complete(.member(a.id)))
        #expect(s == .complete(.member(b.id)))
        #expect(server.alpn == HandoffALPN.member)

        try server.write(Array("hello from the server".utf8))
        client.receive(server.takeCiphertext())
        let (status, bytes) = client.read()
        #expect(status == .data(21))
        #expect(String(decoding: bytes, as: UTF8.self) == "hello from the server")

        let big = Crypto.randomBytes(1 << 20)
        try client.write(big)
        server.receive(client.takeCiphertext())
        var received: [UInt8] = []
        while case (.data, let chunk) = server.read() { received += chunk }
        #expect(received == big)

        client.shutdown()
        server.receive(client.takeCiphertext())
        #expect(server.read().0 == .closed)
    }

    @Test func continuationStreamsHalfCloseEachWayAndNoticeTruncation() throws {
        let account = try TestAccount()
        let a = try account.device()
        let b = try account.device()
        let server = try TLSConnection(context: .memberServer(identity: a, trust: account.trust))
        let client = try TLSConnection(context: .memberClient(identity: b, trust: account.trust, alpn: HandoffALPN.stream), expectedPeer: a.id)
        #expect(pump(client, server).server == .complete(.member(b.id)))
        #expect(server.alpn == HandoffALPN.stream)

        // The resumer finishes sending; the originator reads the end, and still sends after it.
        try client.write(Array("request".utf8))
        client.shutdown()
        server.receive(client.takeCiphertext())
        #expect(server.read() == (.data(7), Array("request".utf8)))
        #expect(server.read().0 == .closed)
        let reply = Crypto.randomBytes(300_000)
        try server.write(reply)
        client.receive(server.takeCiphertext())
        var received: [UInt8] = []
        while case (.data, let chunk) = client.read() { received += chunk }
        #expect(received == reply)
        server.shutdown()
        client.receive(server.takeCiphertext())
        #expect(client.read().0 == .closed)

        // A connection that ends without close_notify is a truncated stream, not a short one.
        let server2 = try TLSConnection(context: .memberServer(identity: a, trust: account.trust))
        let client2 = try TLSConnection(context: .memberClient(identity: b, trust: account.trust, alpn: HandoffALPN.stream), expectedPeer: a.id)
        _ = pump(client2, server2)
        try server2.write(Array(repeating: 1, count: 1000))
        client2.receive(server2.takeCiphertext())
        _ = client2.read()
        client2.receiveEOF()
        guard case .failed(let error) = client2.read().0 else {
            Issue.record("a truncated stream read as something else")
            return
        }
        #expect(error.code == .truncated)
    }

    /// A stock TLS client (no PSK) is turned away at its ClientHello: the server's answer is an
    /// alert, with no certificate and no id in it.
    @Test func aClientWithoutTheAccountKeyLearnsNothing() throws {
        let account = try TestAccount()
        let a = try account.device()
        let server = try TLSConnection(context: .memberServer(identity: a, trust: account.trust))
        let client = try TLSConnection(context: .testClient(identity: try account.device(), trust: account.trust, offersPSK: false))
        _ = client.handshake()
        server.receive(client.takeCiphertext())
        #expect(failureCode(server.handshake()) == .otherAccount)
        let answer = server.takeCiphertext()
        #expect(answer.count < 16, "an alert, nothing more: \(answer.count) bytes")
        #expect(commonStrings(answer, a.certificate.der).isEmpty)
        #expect(commonStrings(answer, account.root.der).isEmpty)
        client.receive(answer)
        #expect(failureCode(client.handshake()) == .refusedByPeer)
    }

    /// A ClientHello captured on its way to one device and replayed whole — to that device again,
    /// to it after it restarted, or to another device of the account — gets the answer any
    /// stranger's hello gets: it tells nobody which hosts belong together.
    @Test func aCapturedHelloIsAStrangersAnywhereElse() throws {
        let account = try TestAccount()
        let (a, b, c) = (try account.device(), try account.device(), try account.device())
        func server(_ identity: DeviceIdentity, advertisingAs name: String) throws -> TLSContext {
            let hellos = MemberHelloGuard()
            hellos.advertising(as: name)
            return try .memberServer(identity: identity, trust: account.trust, hellos: hellos)
        }
        func answer(_ context: TLSContext, to hello: [UInt8]) throws -> [UInt8] {
            let connection = try TLSConnection(context: context)
            connection.receive(hello)
            _ = connection.handshake()
            return connection.takeCiphertext()
        }
        func hello(_ trust: TrustPolicy, to addressee: HelloAddressee) throws -> [UInt8] {
            let client = try TLSConnection(context: .memberClient(identity: c, trust: trust), addressee: addressee)
            _ = client.handshake()
            return client.takeCiphertext()
        }
        let (alpha, bravo, alphaRestarted) = (try server(a, advertisingAs: "a1"), try server(b, advertisingAs: "b1"), try server(a, advertisingAs: "a2"))
        let strangers = try answer(alpha, to: try hello(try TestAccount().trust, to: .anyone))
        #expect(strangers.first == 21, "an alert")

        let toAlpha = try hello(account.trust, to: .advert(a.id, instanceName: "a1"))
        #expect(try answer(alpha, to: toAlpha).first == 22, "a ServerHello the first time")
        #expect(try answer(alpha, to: toAlpha) == strangers, "replayed to the same device")
        #expect(try answer(bravo, to: toAlpha) == strangers, "replayed to another device")
        #expect(try answer(alphaRestarted, to: toAlpha) == strangers, "replayed to the device after it restarted")

        let toDevice = try hello(account.trust, to: .device(a.id))
        #expect(try answer(bravo, to: toDevice) == strangers, "addressed to a device, replayed to another")
        #expect(try answer(alphaRestarted, to: toDevice).first == 22, "the device answers whatever its advert")
        #expect(try answer(alphaRestarted, to: toDevice) == strangers, "but once")
    }

    /// A join hello replayed whole to the inviter is a stranger's: it would otherwise tell whoever
    /// recorded it which host holds the invite (a ServerHello each time). And a hello to anyone
    /// reflected back to the device that sent it is a stranger's too.
    @Test func aJoinHelloIsAnsweredOnceAndAHelloIsNeverAnsweredByItsSender() throws {
        let account = try TestAccount()
        let psk = JoinPSK(code: InviteCode(secret: Crypto.randomBytes(16)))
        let inviter = try TLSContext.memberServer(identity: try account.device(), trust: account.trust, joins: StaticInvites(psk: psk))
        func answer(_ context: TLSContext, to hello: [UInt8]) throws -> [UInt8] {
            let connection = try TLSConnection(context: context)
            connection.receive(hello)
            _ = connection.handshake()
            return connection.takeCiphertext()
        }
        func hello(_ context: TLSContext) throws -> [UInt8] {
            let client = try TLSConnection(context: context)
            _ = client.handshake()
            return client.takeCiphertext()
        }
        let wrongCode = try answer(inviter, to: try hello(.joinClient(psk: JoinPSK(code: InviteCode(secret: Crypto.randomBytes(16))))))
        #expect(wrongCode.first == 21, "an alert")
        let join = try hello(.joinClient(psk: psk))
        #expect(try answer(inviter, to: join).first == 22, "a ServerHello the first time")
        #expect(try answer(inviter, to: join) == wrongCode, "replayed: what a wrong code gets")
        #expect(try answer(inviter, to: try hello(.joinClient(psk: psk))).first == 22, "the joiner's next try is answered")

        let device = try account.device()
        let server = try TLSContext.memberServer(identity: device, trust: account.trust)
        let own = try hello(.memberClient(identity: device, trust: account.trust))
        let strangers = try answer(server, to: try hello(.memberClient(identity: try TestAccount().device(), trust: try TestAccount().trust)))
        #expect(try answer(server, to: own) == strangers, "its own hello to anyone, reflected")
        // Issue 54: the same device after a restart (its key read again, nothing remembered).
        let restarted = try TLSContext.memberServer(identity: try DeviceIdentity(key: device.key, certificate: device.certificate), trust: account.trust)
        #expect(try answer(restarted, to: own) == strangers, "its own hello, replayed after a restart")
        let resumed = try hello(.memberClient(identity: device, trust: account.trust))
        #expect(try answer(restarted, to: resumed) == strangers, "any hello of its own")
        #expect(try answer(server, to: try hello(.memberClient(identity: try account.device(), trust: account.trust))).first == 22, "another device's")
        let other = try hello(.memberClient(identity: try account.device(), trust: account.trust))
        #expect(try answer(restarted, to: other).first == 22, "another device's, on the restarted one")
    }

    /// Two connections from the same device share no 8-byte string in their ClientHellos that a
    /// ClientHello of another account's device does not also have (protocol constants).
    @Test func nothingInAClientHelloStaysTheSame() throws {
        let account = try TestAccount()
        let other = try TestAccount()
        let device = try account.device()
        func hello(_ identity: DeviceIdentity, _ trust: TrustPolicy) throws -> [UInt8] {
            let client = try TLSConnection(context: .memberClient(identity: identity, trust: trust))
            _ = client.handshake()
            return client.takeCiphertext()
        }
        let first = try hello(device, account.trust)
        let second = try hello(device, account.trust)
        let stranger = try hello(try other.device(), other.trust)
        // A protocol constant next to one random byte matches across two hellos once in 256: a
        // string 7 of whose bytes are in the stranger's hello is such a constant (the same rule as
        // scripts/stable-strings.py).
        let constant = commonStrings(first, stranger, length: 7)
        let stable = commonStrings(first, second).subtracting(commonStrings(first, stranger)).filter {
            !constant.contains(Array($0.dropLast())) && !constant.contains(Array($0.dropFirst()))
        }
        #expect(stable.isEmpty, "\(stable.count) strings only this device's hellos share")
        #expect(commonStrings(first, device.certificate.der).isEmpty)
    }

    @Test func aSelfSignedClientIsRefused() throws {
        let account = try TestAccount()
        let server = try TLSConnection(context: .memberServer(identity: try account.device(), trust: account.trust))
        let client = try TLSConnection(context: .testClient(identity: try TestAccount.selfSignedDevice(), trust: account.trust))
        let (c, s) = pump(client, server)
        #expect(failureCode(s) == .selfSigned)
        #expect(failureCode(c) == .refusedByPeer, "the client is told: \(c)")
    }

    @Test func aDeviceOfAnotherAccountIsRefusedByEitherSide() throws {
        let mine = try TestAccount()
        let theirs = try TestAccount()
        // Their device, with their account's key: refused at the ClientHello.
        let server = try TLSConnection(context: .memberServer(identity: try mine.device(), trust: mine.trust))
        let client = try TLSConnection(context: .memberClient(identity: try theirs.device(), trust: theirs.trust))
        let (c, s) = pump(client, server)
        #expect(failureCode(s) == .otherAccount)
        #expect(failureCode(c) == .accountKeyUnknown)

        // Our key but their certificate (a secret leaked to another account): refused by the proof.
        let server2 = try TLSConnection(context: .memberServer(identity: try mine.device(), trust: mine.trust))
        let client2 = try TLSConnection(context: .testClient(identity: try theirs.device(), trust: mine.trust))
        #expect(failureCode(pump(client2, server2).server) == .otherAccount)

        // The other way round: that server judges our client's certificate first and says so.
        let foreignServer = try TLSConnection(context: .memberServer(identity: try theirs.device(), trust: theirs.trust(secrets: [mine.secret])))
        let ourClient = try TLSConnection(context: .memberClient(identity: try mine.device(), trust: mine.trust))
        let (c3, s3) = pump(ourClient, foreignServer)
        #expect(failureCode(s3) == .otherAccount)
        #expect(failureCode(c3) == .refusedByPeer)
    }

    /// Right after a removal the account has a new secret; a device that has not heard yet holds
    /// only the previous one. Each side accepts both; a client offers the one the other side knows.
    @Test func devicesOneSecretApartStillMeet() throws {
        let account = try TestAccount()
        let newSecret = Crypto.randomBytes(32)
        let updated = try account.trust(secrets: [newSecret, account.secret])
        let behind = account.trust
        let a = try account.device()
        let b = try account.device()

        // The device that is behind dials the updated one: its (only) secret is the previous one there.
        let (c1, s1) = pump(
            try TLSConnection(context: .memberClient(identity: b, trust: behind)),
            try TLSConnection(context: .memberServer(identity: a, trust: updated)))
        #expect(c1 == .complete(.member(a.id)))
        #expect(s1 == .complete(.member(b.id)))

        // The updated device dials the one that is behind: its current secret is unknown there…
        let (c2, s2) = pump(
            try TLSConnection(context: .memberClient(identity: a, trust: updated)),
            try TLSConnection(context: .memberServer(identity: b, trust: behind)))
        #expect(failureCode(c2) == .accountKeyUnknown)
        #expect(failureCode(s2) == .otherAccount)
        // …and the previous one works (what PeerDialer does next).
        let (c3, _) = pump(
            try TLSConnection(context: .memberClient(identity: a, trust: updated), secretGeneration: 1),
            try TLSConnection(context: .memberServer(identity: b, trust: behind)))
        #expect(c3 == .complete(.member(b.id)))
        #expect(try TLSContext.memberClient(identity: a, trust: updated).secretGenerations == 2)
    }

    /// A removed device gets through the member handshake only as `removedMember`, so that the
    /// server can hand it its removal notice (and nothing else); on a stream connection, and as
    /// a server, it is refused outright.
    @Test func aRevokedDeviceIsSeenOnlyAsRemoved() throws {
        let account = try TestAccount()
        let b = try account.device()
        account.trust.setRevoked([b.id])
        let server = try TLSConnection(context: .memberServer(identity: try account.device(), trust: account.trust))
        let client = try TLSConnection(context: .memberClient(identity: b, trust: account.trust))
        let (c, s) = pump(client, server)
        #expect(s == .complete(.removedMember(b.id)), "\(s)")
        guard case .complete(.member) = c else { Issue.record("client: \(c)"); return }

        let streamServer = try TLSConnection(context: .memberServer(identity: try account.device(), trust: account.trust))
        let streamClient = try TLSConnection(context: .memberClient(identity: b, trust: account.trust, alpn: HandoffALPN.stream))
        let (sc, ss) = pump(streamClient, streamServer)
        #expect(failureCode(ss) == .revoked)
        guard case .failed(let told) = sc else { Issue.record("stream client: \(sc)"); return }
        #expect(told.code == .refusedByPeer && told.message.contains("revoked"), "the removed device is told why: \(told)")

        // A member dialling the removed device refuses it.
        let removedServer = try TLSConnection(context: .memberServer(identity: b, trust: account.trust))
        let member = try TLSConnection(context: .memberClient(identity: try account.device(), trust: account.trust))
        #expect(failureCode(pump(member, removedServer).client) == .revoked)
    }

    @Test func anExpiredCertificateIsRefused() throws {
        let account = try TestAccount()
        let old = try account.device(notBefore: .now().adding(seconds: -7200), notAfter: .now().adding(seconds: -3600))
        let server = try TLSConnection(context: .memberServer(identity: try account.device(), trust: account.trust))
        let client = try TLSConnection(context: .memberClient(identity: old, trust: account.trust))
        let (c, s) = pump(client, server)
        #expect(failureCode(s) == .expired)
        #expect(failureCode(c) == .refusedByPeer)
        if case .failed(let e) = c { #expect(e.message.contains("expired")) }
    }

    @Test func wrongDeviceIDsAreRefused() throws {
        let account = try TestAccount()
        // The server is a valid member, but not the device the client meant to reach.
        let server = try TLSConnection(context: .memberServer(identity: try account.device(), trust: account.trust))
        let client = try TLSConnection(context: .memberClient(identity: try account.device(), trust: account.trust), expectedPeer: try account.device().id)
        #expect(failureCode(pump(client, server).client) == .wrongDeviceID)

        // A certificate whose name is not its key's id.
        let server2 = try TLSConnection(context: .memberServer(identity: try account.device(), trust: account.trust))
        let liar = try TLSConnection(context: .memberClient(identity: try account.lyingDevice(), trust: account.trust))
        #expect(failureCode(pump(liar, server2).server) == .wrongDeviceID)
    }

    @Test func aTLS12ClientIsRefused() throws {
        let account = try TestAccount()
        let server = try TLSConnection(context: .memberServer(identity: try account.device(), trust: account.trust))
        // What an old client sends: a plain OpenSSL client capped at TLS 1.2.
        let legacy = try LegacyClient()
        server.receive(legacy.clientHello())
        #expect(failureCode(server.handshake()) == .protocolVersion)
    }

    @Test func garbageBytesAreRefused() throws {
        let account = try TestAccount()
        for garbage in [Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8), Crypto.randomBytes(512), [0x16, 0x03, 0x01, 0xFF, 0xFF] + Crypto.randomBytes(64)] {
            let server = try TLSConnection(context: .memberServer(identity: try account.device(), trust: account.trust))
            server.receive(garbage)
            let status = server.handshake()
            #expect(failureCode(status) == .malformed || (status == .inProgress && garbage[0] == 0x16), "\(garbage.prefix(8)): \(status)")
        }
    }

    @Test func aTruncatedHandshakeIsRefused() throws {
        let account = try TestAccount()
        let server = try TLSConnection(context: .memberServer(identity: try account.device(), trust: account.trust))
        let client = try TLSConnection(context: .memberClient(identity: try account.device(), trust: account.trust))
        _ = client.handshake()
        let hello = client.takeCiphertext()
        server.receive(Array(hello.prefix(hello.count / 2)))
        #expect(server.handshake() == .inProgress)
        server.receiveEOF()
        #expect(failureCode(server.handshake()) == .truncated)
    }

    @Test func joiningWithTheRightCodeAuthenticatesBothSidesByTheCode() throws {
        let account = try TestAccount()
        let code = InviteCode(secret: Crypto.randomBytes(16))
        let psk = JoinPSK(code: code)
        let server = try TLSConnection(context: .memberServer(identity: try account.device(), trust: account.trust, joins: StaticInvites(psk: psk)))
        let client = try TLSConnection(context: .joinClient(psk: JoinPSK(code: try InviteCode(parsing: code.text.lowercased()))))
        let (c, s) = pump(client, server)
        #expect(c == .complete(.inviter))
        #expect(s == .complete(.joiner(pskIdentity: psk.identity)))
        #expect(server.alpn == HandoffALPN.join)
    }

    @Test func joiningWithAWrongCodeOrNoInviteFails() throws {
        let account = try TestAccount()
        let invited = JoinPSK(code: InviteCode(secret: Crypto.randomBytes(16)))
        for lookup in [StaticInvites(psk: invited), StaticInvites(psk: nil)] {
            let server = try TLSConnection(context: .memberServer(identity: try account.device(), trust: account.trust, joins: lookup))
            let client = try TLSConnection(context: .joinClient(psk: JoinPSK(code: InviteCode(secret: Crypto.randomBytes(16)))))
            let (c, s) = pump(client, server)
            #expect(failureCode(c) == .joinCodeRejected)
            if case .complete = s { Issue.record("server accepted a joiner without the code") }
        }
    }

    @Test func aJoinCodeOpensNothingButAJoin() throws {
        // A join code's PSK with the member protocol is refused: it would skip the device proofs.
        let account = try TestAccount()
        let psk = JoinPSK(code: InviteCode(secret: Crypto.randomBytes(16)))
        let server = try TLSConnection(context: .memberServer(identity: try account.device(), trust: account.trust, joins: StaticInvites(psk: psk)))
        let client = try TLSConnection(context: .joinClientWrongALPN(psk: psk))
        _ = pump(client, server)
        // Our client gives up on its own; a hostile one would go on, so deliver its last flight.
        server.receive(client.takeCiphertext())
        #expect(failureCode(server.handshake()) == .applicationProtocol)
    }
}

/// A plain OpenSSL client capped at TLS 1.2, to produce what an old client sends.
final class LegacyClient {
    let ctx: OpaquePointer
    let ssl: OpaquePointer

    init() throws {
        ctx = SSL_CTX_new(TLS_method())!
        _ = handoff_SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION)
        ssl = SSL_new(ctx)!
        SSL_set_bio(ssl, BIO_new(BIO_s_mem()), BIO_new(BIO_s_mem()))
        SSL_set_connect_state(ssl)
    }

    deinit {
        SSL_free(ssl)
        SSL_CTX_free(ctx)
    }

    func clientHello() -> [UInt8] {
        _ = SSL_do_handshake(ssl)
        let w = SSL_get_wbio(ssl)
        var out = [UInt8](repeating: 0, count: 4096)
        let n = BIO_read(w, &out, 4096)
        return Array(out.prefix(Int(max(0, n))))
    }
}

extension TLSContext {
    static func joinClientWrongALPN(psk: JoinPSK) throws(TLSError) -> TLSContext {
        let c = try TLSContext.joinClient(psk: psk)
        let wire = [UInt8(HandoffALPN.member.utf8.count)] + Array(HandoffALPN.member.utf8)
        _ = wire.withUnsafeBufferPointer { SSL_CTX_set_alpn_protos(c.ctx, $0.baseAddress, UInt32($0.count)) }
        return c
    }
}
