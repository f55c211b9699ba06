import Foundation
import HandoffAPI
import HandoffClient
import DaemonAccounts
@testable import HandoffDaemon
import HandoffModel
import HandoffTestSupport
import Testing

/// Accounts between real daemons in this process, talking TLS over loopback.
@Suite(.timeLimit(.minutes(3))) struct AccountTests {
    /// Starts an invite on `inviter` and returns its code and the subscription that reports the outcome.
    static func invite(_ inviter: TestDaemon) async throws -> (code: String, updates: NDJSONSubscription<InviteUpdate>) {
        let updates = try await inviter.client.subscribe(.invite)
        let first = try #require(try await updates.next())
        let invite = try #require(first.invite)
        return (invite.code, updates)
    }

    static func join(_ joiner: TestDaemon, _ inviter: TestDaemon, code: String, name: String) async throws -> AccountInfo {
        try await joiner.client.send(.joinAccount(JoinAccountRequest(code: code, peer: inviter.peerAddress, deviceName: name)))
    }

    /// A new daemon, joined to `inviter`'s account as `name`, once the inviter saw it join.
    static func joinNew(_ inviter: TestDaemon, name: String) async throws -> (TestDaemon, AccountInfo) {
        let joiner = try await TestDaemon.start()
        let (code, updates) = try await invite(inviter)
        let info = try await join(joiner, inviter, code: code, name: name)
        _ = try await updates.next()
        return (joiner, info)
    }

    /// A with an account, B joined to it.
    static func pair() async throws -> (TestDaemon, TestDaemon) {
        let a = try await TestDaemon.start()
        _ = try await a.client.send(.createAccount(CreateAccountRequest(name: "Ana's devices", deviceName: "desk")))
        let (b, _) = try await joinNew(a, name: "laptop")
        return (a, b)
    }

    @Test func createInviteJoinListRemoveRefuse() async throws {
        let a = try await TestDaemon.start()
        let created = try await a.client.send(.createAccount(CreateAccountRequest(name: "Ana's devices", deviceName: "desk")))
        #expect(created.isAdmin)
        #expect(created.deviceCount == 1)
        #expect(try mode(a.stateDirectory + "/account") == 0o600, "the file with the keys")
        #expect(try mode(a.stateDirectory) == 0o700)

        let b = try await TestDaemon.start()
        await expectFailure(.noAccount) { _ = try await b.client.send(.account) }
        let (code, updates) = try await Self.invite(a)
        let joined = try await Self.join(b, a, code: code, name: "laptop")
        #expect(joined.accountID == created.accountID)
        #expect(!joined.isAdmin)
        #expect(joined.deviceCount == 2)
        let outcome = try #require(try await updates.next())
        #expect(outcome.joined?.id == joined.deviceID)
        #expect(outcome.joined?.name == "laptop")

        for d in [a, b] {
            let list = try await d.client.send(.devices)
            #expect(Set(list.devices.map(\.id)) == [created.deviceID, joined.deviceID])
            #expect(list.devices.filter(\.isThisDevice).count == 1)
        }
        let synced = try await b.client.send(.sync(SyncRequest(peer: a.peerAddress)))
        #expect(synced.peerID == created.deviceID)
        #expect(synced.peerName == "desk")

        let removed = try await a.client.send(.removeDevice(String(joined.deviceID.text.prefix(10))))
        #expect(removed.id == joined.deviceID)
        #expect(try await a.client.send(.devices).revoked.map(\.id) == [joined.deviceID])
        await expectFailure(.revoked) { _ = try await b.client.send(.sync(SyncRequest(peer: a.peerAddress))) }
        try await a.finish()
        try await b.finish()
    }

    @Test func codesThatAreMistypedWrongUsedOrExpiredAreRefusedClearly() async throws {
        let clock = ManualDaemonClock()
        let a = try await TestDaemon.start { $0.clock = clock }
        _ = try await a.client.send(.createAccount(CreateAccountRequest(deviceName: "desk")))
        let b = try await TestDaemon.start()
        let c = try await TestDaemon.start()
        let (code, updates) = try await Self.invite(a)

        // A typo is caught before anything is sent.
        var typo = Array(code)
        typo[0] = typo[0] == "7" ? "8" : "7"
        await expectFailure(.invalidCode) { _ = try await Self.join(b, a, code: String(typo), name: "b") }
        // A well-formed code that no invite matches.
        let stranger = InviteCode(secret: (0..<16).map { _ in UInt8.random(in: 0...255) }).text
        await expectFailure(.codeRejected) { _ = try await Self.join(b, a, code: stranger, name: "b") }
        // The right one works once…
        _ = try await Self.join(b, a, code: code.lowercased(), name: "b")
        #expect(try await updates.next()?.joined != nil)
        // …and only once.
        await expectFailure(.inviteUsed) { _ = try await Self.join(c, a, code: code, name: "c") }

        // An invite nobody used runs out, says so to the inviter, and then to a late joiner.
        let (late, lateUpdates) = try await Self.invite(a)
        clock.advance(seconds: 601)
        #expect(try await lateUpdates.next()?.expired == true)
        await expectFailure(.inviteExpired) { _ = try await Self.join(c, a, code: late, name: "c") }
        await expectFailure(.accountExists) { _ = try await Self.join(b, a, code: late, name: "b") }
        for d in [a, b, c] { try await d.finish() }
    }

    @Test func wrongCodesAreRateLimitedPerAddress() async throws {
        let clock = ManualDaemonClock()
        let a = try await TestDaemon.start {
            $0.admissionLimits.joinFailures = 3
            $0.admissionLimits.penaltySeconds = 5
            $0.clock = clock
        }
        _ = try await a.client.send(.createAccount(CreateAccountRequest(deviceName: "desk")))
        let b = try await TestDaemon.start()
        let (code, updates) = try await Self.invite(a)
        for _ in 0..<3 {
            let wrong = InviteCode(secret: (0..<16).map { _ in UInt8.random(in: 0...255) }).text
            await expectFailure(.codeRejected) { _ = try await Self.join(b, a, code: wrong, name: "b") }
        }
        // Shut out, even with the right code, and told so (exit 34, as `account join --help` says)…
        await expectFailure(.rateLimited) { _ = try await Self.join(b, a, code: code, name: "b") }
        // …until the penalty is over.
        clock.advance(seconds: 4)
        await expectFailure(.rateLimited) { _ = try await Self.join(b, a, code: code, name: "b") }
        clock.advance(seconds: 2)
        _ = try await Self.join(b, a, code: code, name: "b")
        #expect(try await updates.next()?.joined != nil)
        for d in [a, b] { try await d.finish() }
    }

    @Test func onlyTheAccountKeyHolderInvitesAndRemoves() async throws {
        let (a, b) = try await Self.pair()
        await expectFailure(.notAccountAdmin) { _ = try await b.client.subscribe(.invite) }
        let aID = try await a.client.send(.account).deviceID
        await expectFailure(.notAccountAdmin) { _ = try await b.client.send(.removeDevice(aID.text)) }
        await expectFailure(.unknownDevice) { _ = try await a.client.send(.removeDevice("zzzz")) }
        await expectFailure(.badRequest) { _ = try await a.client.send(.removeDevice(aID.text)) }
        await expectFailure(.accountExists) { _ = try await a.client.send(.createAccount(CreateAccountRequest())) }
        for d in [a, b] { try await d.finish() }
    }

    @Test func aRevocationSpreadsThroughAnyDeviceThatKnowsIt() async throws {
        let (a, b) = try await Self.pair()
        let (c, cInfo) = try await Self.joinNew(a, name: "phone")
        // B learns about C only by talking to A.
        #expect(try await b.client.send(.sync(SyncRequest(peer: a.peerAddress))).updated)
        #expect(try await c.client.send(.sync(SyncRequest(peer: b.peerAddress))).peerName == "laptop", "B accepts C")

        // B and A keep the session the sync opened: the removal reaches B at once, over it…
        _ = try await a.client.send(.removeDevice(cInfo.deviceID.text))
        try await Rig.waitFor("B to hear of the removal") { try await b.client.send(.devices).revoked.map(\.id) == [cInfo.deviceID] }
        // …and a sync finds nothing newer.
        #expect(try await b.client.send(.sync(SyncRequest(peer: a.peerAddress))).updated == false)
        // Either refuses C now.
        await expectFailure(.revoked) { _ = try await c.client.send(.sync(SyncRequest(peer: b.peerAddress))) }
        await expectFailure(.revoked) { _ = try await c.client.send(.sync(SyncRequest(peer: a.peerAddress))) }
        for d in [a, b, c] { try await d.finish() }
    }

    @Test func devicesOfAnotherAccountAreRefusedBothWays() async throws {
        let (a, b) = try await Self.pair()
        let d = try await TestDaemon.start()
        _ = try await d.client.send(.createAccount(CreateAccountRequest(name: "someone else")))
        await expectFailure(.refused) { _ = try await d.client.send(.sync(SyncRequest(peer: a.peerAddress))) }
        await expectFailure(.refused) { _ = try await b.client.send(.sync(SyncRequest(peer: d.peerAddress))) }
        await expectFailure(.unreachable) { _ = try await b.client.send(.sync(SyncRequest(peer: "127.0.0.1:1"))) }
        await expectFailure(.unknownPeer) { _ = try await b.client.send(.sync(SyncRequest(peer: "no such device"))) }
        await expectFailure(.badPeerAddress) { _ = try await b.client.send(.sync(SyncRequest(peer: "[fe80::1"))) }
        for x in [a, b, d] { try await x.finish() }
    }

    /// `continue HOST:PORT` and `account sync HOST:PORT` to a device that already has a session
    /// use that session (there is one per pair), and both take every form of PEER.
    @Test func everyFormOfPeerReachesTheOneSession() async throws {
        let (a, b) = try await Self.pair()
        let aID = try await a.client.send(.account).deviceID
        _ = try await a.client.send(.becomeCurrent(PutCurrentActivityRequest(content: ActivityContent(type: "com.example.forms", title: "Forms"))))
        for peer in [a.peerAddress, a.peerAddress, "desk", "DESK", String(aID.text.prefix(6))] {
            let continued = try await b.client.send(.continueActivity(ContinueRequest(peer: peer)))
            #expect(continued.peerID == aID && continued.activity.title == "Forms", "continue \(peer)")
            let synced = try await b.client.send(.sync(SyncRequest(peer: peer)))
            #expect(synced.peerID == aID && !synced.updated, "sync \(peer)")
        }
        #expect(try await a.client.send(.status).reachablePeers == 1)
        #expect(try await b.client.send(.peers).peers.filter(\.reachable).map(\.id) == [aID], "one session, still up")
        for d in [a, b] { try await d.finish() }
    }

    @Test func theAccountSurvivesARestart() async throws {
        let (a, b) = try await Self.pair()
        let before = try await b.client.send(.account)
        try await b.stop()
        let again = try await TestDaemon.start(directory: b.directory)
        #expect(try await again.client.send(.account) == before)
        _ = try await again.client.send(.sync(SyncRequest(peer: a.peerAddress)))
        for d in [a, again] { try await d.finish() }
    }

    @Test func aCancelledInviteIsForgotten() async throws {
        let a = try await TestDaemon.start()
        _ = try await a.client.send(.createAccount(CreateAccountRequest()))
        let b = try await TestDaemon.start()
        var pending: (code: String, updates: NDJSONSubscription<InviteUpdate>)? = try await Self.invite(a)
        let code = pending!.code
        pending = nil  // the inviter hangs up (Ctrl-C)
        try await waitUntil("the invite forgotten") { a.daemon.invites.newestPending() == nil }
        await expectFailure(.codeRejected) { _ = try await Self.join(b, a, code: code, name: "b") }
        for d in [a, b] { try await d.finish() }
    }
}
