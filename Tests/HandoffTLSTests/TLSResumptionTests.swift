import HandoffModel
import Testing

@testable import HandoffTLS

/// Resuming (docs/security.md, "Resuming a session"): two devices that proved themselves to each
/// other open their next connection in one round trip, without device proofs, with a key only
/// the two of them hold; anything that changes who may be trusted makes them prove in full again.
/// Each device has its own `TrustPolicy` here, as each daemon does.
@Suite(.timeLimit(.minutes(3))) struct TLSResumptionTests {
    struct Pair {
        let account: TestAccount
        let a: DeviceIdentity
        let b: DeviceIdentity
        let serverTrust: TrustPolicy
        let clientTrust: TrustPolicy
        /// One server context, as a daemon has: its hello guard remembers what it answered.
        let serverContext: TLSContext

        init() throws {
            account = try TestAccount()
            (a, b) = (try account.device(), try account.device())
            serverTrust = try account.trust(secrets: [account.secret])
            clientTrust = try account.trust(secrets: [account.secret])
            serverContext = try .memberServer(identity: a, trust: serverTrust)
        }

        private init(_ other: Pair, restartingServer: Void) throws {
            (account, a, b, clientTrust) = (other.account, other.a, other.b, other.clientTrust)
            serverTrust = try account.trust(secrets: [account.secret])
            serverContext = try .memberServer(identity: a, trust: serverTrust)
        }

        /// The server as it is after a restart: nothing of the last sessions kept.
        func restartingServer() throws -> Pair { try Pair(self, restartingServer: ()) }

        func server() throws -> TLSConnection { try TLSConnection(context: serverContext) }
        /// Addressed to `a` alone, as the daemon's dials are (a resuming hello is never to anyone).
        func client(resume: Bool) throws -> TLSConnection {
            try TLSConnection(context: .memberClient(identity: b, trust: clientTrust), expectedPeer: a.id, addressee: .device(a.id), resume: resume)
        }
    }

    @Test func aSecondConnectionTakesOneRoundTripAndNoProofs() throws {
        let pair = try Pair()
        let (firstClient, firstServer) = (try pair.client(resume: true), try pair.server())
        // Nothing to resume yet: the offer is the account's, and the devices prove themselves.
        #expect(pump(firstClient, firstServer) == (.complete(.member(pair.a.id)), .complete(.member(pair.b.id))))
        #expect(!firstClient.resumed && !firstServer.resumed)
        #expect(MemberContextProbe.canResume(pair.clientTrust, pair.a.id))

        for _ in 0..<2 {  // and again: each connection leaves the key for the next
            let (client, server) = (try pair.client(resume: true), try pair.server())
            #expect(client.handshake() == .inProgress)
            server.receive(client.takeCiphertext())
            #expect(server.handshake() == .inProgress)
            client.receive(server.takeCiphertext())
            // One round trip: the client knows whom it reached as soon as the server's flight is in.
            #expect(client.handshake() == .complete(.member(pair.a.id)))
            try client.write(Array("hello".utf8))
            server.receive(client.takeCiphertext())
            #expect(server.handshake() == .complete(.member(pair.b.id)))
            #expect(server.read() == (.data(5), Array("hello".utf8)), "application data right after the client's Finished")
            #expect(client.resumed && server.resumed)
        }
    }

    @Test func aDeviceThatForgotIsProvenToInFullOnTheNextTry() throws {
        var pair = try Pair()
        _ = pump(try pair.client(resume: true), try pair.server())
        pair = try pair.restartingServer()
        let (client, server) = (try pair.client(resume: true), try pair.server())
        #expect(failureCode(pump(client, server).client) == .accountKeyUnknown, "answered like any unknown key")
        #expect(!MemberContextProbe.canResume(pair.clientTrust, pair.a.id))
        let (again, server2) = (try pair.client(resume: true), try pair.server())
        #expect(pump(again, server2) == (.complete(.member(pair.a.id)), .complete(.member(pair.b.id))))
        #expect(!again.resumed)
    }

    @Test func aRemovalOrANewSecretEndsResuming() throws {
        let pair = try Pair()
        _ = pump(try pair.client(resume: true), try pair.server())
        pair.serverTrust.setRevoked([pair.b.id])
        let (client, server) = (try pair.client(resume: true), try pair.server())
        #expect(failureCode(pump(client, server).client) == .accountKeyUnknown, "the removed device cannot resume")

        let fresh = try Pair()
        _ = pump(try fresh.client(resume: true), try fresh.server())
        fresh.clientTrust.setRevoked([fresh.a.id])
        #expect(!MemberContextProbe.canResume(fresh.clientTrust, fresh.a.id))

        let rotated = try Pair()
        _ = pump(try rotated.client(resume: true), try rotated.server())
        rotated.clientTrust.setAccountSecrets([Crypto.randomBytes(32), rotated.account.secret])
        #expect(!MemberContextProbe.canResume(rotated.clientTrust, rotated.a.id))
        rotated.clientTrust.setAccountSecrets([Crypto.randomBytes(32)])
        _ = pump(try rotated.client(resume: true), try rotated.server())  // fails: other secrets now
        #expect(!MemberContextProbe.canResume(rotated.clientTrust, rotated.a.id))
    }

    /// A resuming hello, captured and replayed, is a stranger's: resuming tells an eavesdropper
    /// nothing a full hello would not.
    @Test func aReplayedResumingHelloIsRefused() throws {
        let pair = try Pair()
        _ = pump(try pair.client(resume: true), try pair.server())
        let client = try pair.client(resume: true)
        _ = client.handshake()
        let hello = client.takeCiphertext()
        #expect(hello.count > 0)
        let first = try pair.server()
        first.receive(hello)
        #expect(first.handshake() == .inProgress)
        let replay = try pair.server()
        replay.receive(hello)
        #expect(failureCode(replay.handshake()) != nil, "the same hello, to the same device")
    }

    /// A resuming hello from b to a, sent back to b's own listener, is refused: each direction
    /// has its own keys, so b cannot be made to talk to itself thinking it reached a.
    @Test func aReflectedResumingHelloIsRefused() throws {
        let pair = try Pair()
        // b must also answer: a server context for b, on the client's trust.
        _ = pump(try pair.client(resume: true), try pair.server())
        let bServer = try TLSConnection(context: .memberServer(identity: pair.b, trust: pair.clientTrust))
        let client = try TLSConnection(
            context: .memberClient(identity: pair.b, trust: pair.clientTrust), expectedPeer: pair.a.id, addressee: .anyone, resume: true
        )
        #expect(failureCode(pump(client, bServer).server) != nil)
        #expect(bServer.peer == nil)
    }

    /// A day after a device last proved itself in full it proves itself again, however often it
    /// resumed meanwhile: each resumption carries the time of the proof forward.
    @Test func resumingDoesNotPutOffTheNextFullProof() {
        var book = ResumptionBook()
        let (me, other) = (DeviceID(digest: Array(repeating: 1, count: 32)), DeviceID(digest: Array(repeating: 2, count: 32)))
        let proven = ContinuousClock.now
        book.remember(Crypto.randomBytes(32), me: me, role: .client, proof: .init(device: other, provenAt: proven), now: proven)
        var now = proven
        for _ in 0..<30 {  // a resumption every hour, each leaving a new secret
            now = now + .seconds(3600)
            guard let (_, proof) = book.offer(for: other, to: .device(other), salt: Crypto.randomBytes(16), now: now) else { break }
            #expect(proof.provenAt == proven)
            book.remember(Crypto.randomBytes(32), me: me, role: .client, proof: proof, now: now)
        }
        #expect(now - proven <= .seconds(86_400), "resumed past a day after the proof")
        #expect(book.offer(for: other, to: .device(other), salt: Crypto.randomBytes(16), now: proven + .seconds(86_401)) == nil)
        #expect(!book.holds(other, now: proven + .seconds(86_401)))
    }

    /// Bounded: four per device, 64 devices, the least recently proven going first.
    @Test func theBookIsBounded() {
        var book = ResumptionBook()
        let start = ContinuousClock.now
        let me = DeviceID(digest: Array(repeating: 0xEE, count: 32))
        let ids = (0..<70).map { DeviceID(digest: Array(repeating: UInt8($0), count: 32)) }
        var firstSecrets: [[UInt8]] = []
        for (i, id) in ids.enumerated() {
            for _ in 0..<6 {
                let secret = Crypto.randomBytes(32)
                if i == 69 { firstSecrets.append(secret) }
                book.remember(secret, me: me, role: .server, proof: .init(device: id, provenAt: start + .seconds(i)), now: start + .seconds(i))
            }
        }
        #expect(!book.holds(ids[0], now: start + .seconds(70)), "the oldest devices went first")
        #expect(book.holds(ids[69], now: start + .seconds(70)))
        // Of device 69's six secrets only the last four answer its hellos.
        let answers = firstSecrets.map { secret -> Bool in
            let offer = AccountKeys(resumptionSecret: secret, from: ids[69], to: me).offer(to: .device(me))
            return book.psk(forIdentity: offer.identity, addressedTo: [.device(me)], now: start + .seconds(70)) != nil
        }
        #expect(answers == [false, false, true, true, true, true])
    }
}

/// What `TLSContext.canResume` answers, from a trust policy.
enum MemberContextProbe {
    static func canResume(_ trust: TrustPolicy, _ device: DeviceID) -> Bool { trust.canResume(with: device) }
}
