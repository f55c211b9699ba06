import Foundation
import HandoffAPI
import HandoffClient
import HandoffDaemon
import HandoffDiscovery
import HandoffModel
import HandoffTestSupport
import Testing

/// Discovery, the fast path and `continue`, between daemons in this process on an in-memory
/// "link" (the real DNS-SD path is tested between simulated hosts: EndToEndTests).
@Suite(.timeLimit(.minutes(3))) struct PeerDiscoveryTests {
    /// Waits (up to 10 s) until `daemon`'s peer list satisfies `condition`.
    @discardableResult
    static func waitForPeers(
        _ daemon: TestDaemon, _ what: String, sourceLocation: SourceLocation = #_sourceLocation, until condition: (PeersResponse) -> Bool
    ) async throws -> PeersResponse {
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            let peers = try await daemon.client.send(.peers)
            if condition(peers) { return peers }
            guard ContinuousClock.now < deadline else {
                Issue.record("timed out waiting for \(what): \(peers)", sourceLocation: sourceLocation)
                throw TestFailure("timed out waiting for \(what)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// A and B in one account on a shared network; B joined by finding A's invite on the network.
    /// `configure`: for both daemons.
    static func pair(
        network: DiscoveryNetwork = DiscoveryNetwork(), configure: (inout DaemonConfiguration) -> Void = { _ in }
    ) async throws -> (TestDaemon, TestDaemon) {
        let a = try await TestDaemon.start(network: network, configure: configure)
        _ = try await a.client.send(.createAccount(CreateAccountRequest(deviceName: "desk")))
        let b = try await TestDaemon.start(network: network, configure: configure)
        let updates = try await a.client.subscribe(.invite)
        let code = try #require(try await updates.next()?.invite?.code)
        // No --peer: B finds the inviter by the join tag in its advert.
        _ = try await b.client.send(.joinAccount(JoinAccountRequest(code: code, deviceName: "laptop")))
        _ = try await updates.next()
        return (a, b)
    }

    @Test func membersFindEachOtherAndSeeActivitiesAsTheyChange() async throws {
        let (a, b) = try await Self.pair()
        let aID = try await a.client.send(.account).deviceID
        let bID = try await b.client.send(.account).deviceID
        try await Self.waitForPeers(b, "A reachable") { $0.peers.contains { $0.id == aID && $0.reachable } }
        let fromA = try await Self.waitForPeers(a, "B reachable") { $0.peers.contains { $0.id == bID && $0.reachable } }
        let bSeen = try #require(fromA.peers.first { $0.id == bID })
        #expect(bSeen.name == "laptop")
        #expect(bSeen.foundVia == ["mdns"])
        #expect(abs(try #require(bSeen.clockOffsetSeconds)) < 5, "the same clock, give or take a handshake")
        #expect(fromA.strangers == 0)

        let content = ActivityContent(
            type: "com.example.editor.edit", title: "Report", userInfo: ["page": .int(3), "draft": .data(Data("text".utf8))],
            webpageURL: "https://example.com/r"
        )
        let put = try await a.client.send(.becomeCurrent(PutCurrentActivityRequest(content: content)))
        try await Self.waitForPeers(b, "A's activity") { $0.peers.first { $0.id == aID }?.activity?.id == put.activity.id }

        let continued = try await b.client.send(.continueActivity(ContinueRequest(peer: "desk")))
        #expect(continued.activity == put.activity, "exactly A's activity, every field")
        #expect(continued.peerID == aID)
        let byPrefix = try await b.client.send(.continueActivity(ContinueRequest(peer: String(aID.text.prefix(8)))))
        #expect(byPrefix.activity.id == put.activity.id)

        _ = try await a.client.send(.resignCurrent)
        try await Self.waitForPeers(b, "A resigned") { $0.peers.first { $0.id == aID }?.activity == nil }
        await expectFailure(.noCurrentActivity) { _ = try await b.client.send(.continueActivity(ContinueRequest(peer: "desk"))) }
        await expectFailure(.unknownPeer) { _ = try await b.client.send(.continueActivity(ContinueRequest(peer: "nobody"))) }
        await expectFailure(.unknownPeer) { _ = try await b.client.send(.continueActivity(ContinueRequest(peer: "laptop"))) }
        for d in [a, b] { try await d.finish() }
    }

    @Test func strangersAreCountedNotShownAndNeverContacted() async throws {
        let network = DiscoveryNetwork()
        let (a, b) = try await Self.pair(network: network)
        let c = try await TestDaemon.start(network: network)
        _ = try await c.client.send(.createAccount(CreateAccountRequest(name: "someone else", deviceName: "intruder")))
        _ = try await c.client.send(.becomeCurrent(PutCurrentActivityRequest(content: ActivityContent(type: "com.example.secret", title: "C's secret"))))
        _ = try await a.client.send(.becomeCurrent(PutCurrentActivityRequest(content: ActivityContent(type: "com.example.mine", title: "A's"))))
        let seen = try await Self.waitForPeers(b, "C counted") { $0.strangers == 1 && $0.peers.count == 1 }
        #expect(!seen.peers.contains { $0.name == "intruder" })
        let fromC = try await Self.waitForPeers(c, "A and B counted") { $0.strangers == 2 }
        #expect(fromC.peers.isEmpty)
        #expect(try await c.client.send(.status).reachablePeers == 0, "nobody dialled a stranger")
        await expectFailure(.unknownPeer) { _ = try await c.client.send(.continueActivity(ContinueRequest(peer: "desk"))) }
        await expectFailure(.refused) { _ = try await c.client.send(.continueActivity(ContinueRequest(peer: a.peerAddress))) }
        for d in [a, b, c] { try await d.finish() }
    }

    @Test func aStoppedPeerDisappearsAndARemovedOneIsDropped() async throws {
        let network = DiscoveryNetwork()
        let (a, b) = try await Self.pair(network: network)
        let aID = try await a.client.send(.account).deviceID
        let bID = try await b.client.send(.account).deviceID
        try await Self.waitForPeers(a, "B reachable") { $0.peers.contains { $0.id == bID && $0.reachable } }

        // A removes B: the session closes, B is gone from A's list, and B cannot continue from A.
        _ = try await a.client.send(.removeDevice(bID.text))
        try await Self.waitForPeers(a, "B gone") { !$0.peers.contains { $0.id == bID } }
        // The account secret changed with the removal: B cannot even read A's adverts any more…
        try await Self.waitForPeers(b, "A unseen from B") { !$0.peers.contains { $0.id == aID } }
        // …and B was told over the session before it closed (A's new advert, unreadable to B, may
        // reach B before that message on a loaded machine): it says so, however it asks.
        try await Rig.waitFor("B told of its removal") { try await b.client.send(.account).removal?.byName == "desk" }
        await expectFailure(.revoked) { _ = try await b.client.send(.continueActivity(ContinueRequest(peer: "desk"))) }
        await expectFailure(.revoked) { _ = try await b.client.send(.continueActivity(ContinueRequest(peer: a.peerAddress))) }
        try await a.stop()
        try await Self.waitForPeers(b, "A gone after it stopped") { !$0.peers.contains { $0.id == aID } }
        try await b.finish()
        TempDirectory.remove(a.directory)
    }

    @Test func staticPeersWorkWithoutDiscovery() async throws {
        // Two separate "links": A and B cannot see each other's adverts.
        let (a, b) = try await Self.pair()
        try await b.stop()
        let bAgain = try await TestDaemon.start(directory: b.directory) { $0.staticPeers = [a.peerAddress] }
        let aID = try await a.client.send(.account).deviceID
        // A may dial B back first (it knows B from before); the static entry follows.
        let seen = try await Self.waitForPeers(bAgain, "A via static") { $0.peers.contains { $0.id == aID && $0.reachable && !$0.foundVia.isEmpty } }
        #expect(seen.peers.first { $0.id == aID }?.foundVia == ["static"])
        let put = try await a.client.send(.becomeCurrent(PutCurrentActivityRequest(content: ActivityContent(type: "com.example.s", title: "static"))))
        try await Self.waitForPeers(bAgain, "the activity over the static session") { $0.peers.first?.activity?.id == put.activity.id }
        #expect(try await bAgain.client.send(.continueActivity(ContinueRequest(peer: a.peerAddress))).activity == put.activity)
        #expect(try await bAgain.client.send(.status).discovery.staticPeers == [a.peerAddress])
        for d in [a, bAgain] { try await d.finish() }
    }

    @Test func continueReportsExpiredActivities() async throws {
        let clock = ManualDaemonClock()
        let (a, b) = try await Self.pair(configure: { $0.clock = clock })
        var content = ActivityContent(type: "com.example.brief", title: "soon gone")
        // Far enough ahead that a loaded machine shows it before the real time of day passes it.
        let expiry = Timestamp.now().adding(seconds: 60)
        content.expirationDate = expiry
        _ = try await a.client.send(.becomeCurrent(PutCurrentActivityRequest(content: content)))
        try await Self.waitForPeers(b, "A's activity") { $0.peers.first?.activity != nil }
        clock.advance(seconds: clock.now().microseconds(until: expiry) / 1_000_000 + 1)
        try await Self.waitForPeers(b, "the expiry shown") { $0.peers.first?.activity == nil }
        await expectFailure(.noCurrentActivity) { _ = try await b.client.send(.continueActivity(ContinueRequest(peer: "desk"))) }
        for d in [a, b] { try await d.finish() }
    }
}
