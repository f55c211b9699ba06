import Foundation
import HandoffAPI
import HandoffDiscovery
import HandoffModel
import HandoffTLS
import HandoffTestSupport
import Testing

@testable import DaemonCore
@testable import DaemonDiscovery

/// A device that starts dials the others where it last reached them, at once, without waiting for
/// discovery (docs/discovery.md, "First contact"): `DialMemory`, `MemberSessions.dialRemembered`.
@Suite(.timeLimit(.minutes(3))) struct RememberedDialTests {
    static let desk = DeviceID(digest: Array(repeating: 1, count: 32))
    static let phone = DeviceID(digest: Array(repeating: 2, count: 32))

    @Test func whereADeviceWasReachedIsKeptPrivatelyAcrossRuns() throws {
        let dir = try TempDirectory.make()
        defer { TempDirectory.remove(dir) }
        let path = dir + "/dialled"
        let memory = DialMemory(path: path)
        #expect(memory.all.isEmpty, "no file yet")
        let desk = DialMemory.Entry(device: Self.desk, host: "10.0.0.1", port: 47810, instance: "desk-a1", via: "10.0.0.9")
        memory.remember(desk)
        memory.remember(DialMemory.Entry(device: Self.phone, host: "fe80::1%eth0", port: 47811, instance: "phone-b2", via: "fe80::9%eth0"))
        var st = stat()
        #expect(stat(path, &st) == 0 && st.st_mode & 0o777 == 0o600)
        #expect(DialMemory(path: path).all.map(\.device) == [Self.desk, Self.phone].sorted())

        memory.forget(Self.phone)
        #expect(DialMemory(path: path).all == [desk], "a removed device is forgotten in the file too")
    }

    /// Dialled at start: only devices of the account now (the others are forgotten), and only
    /// from the network this device had the session on — never from another one (a café's), where
    /// the same addresses dialled at every start would follow the device around.
    @Test func onlyMembersAreDialledAndOnlyFromTheNetworkOfThen() async throws {
        let dir = try TempDirectory.make()
        defer { TempDirectory.remove(dir) }
        let memory = DialMemory(path: dir + "/dialled")
        memory.remember(DialMemory.Entry(device: Self.desk, host: "10.0.0.1", port: 47810, instance: "desk-a1", via: "10.0.0.9"))
        memory.remember(DialMemory.Entry(device: Self.phone, host: "fe80::1%eth0", port: 47811, instance: "phone-b2", via: "fe80::9%eth0"))
        let directory = PeerDirectory(events: EventHub(), dialMemory: memory)
        let both: Set<DeviceID> = [Self.desk, Self.phone]
        #expect(await directory.rememberedDials(members: both, here: ["192.168.5.20"]).isEmpty, "another network")
        #expect(await directory.rememberedDials(members: both, here: ["10.0.0.9", "fe80::9"]).map(\.id) == [Self.desk, Self.phone].sorted())
        let onlyDesk = await directory.rememberedDials(members: [Self.desk], here: ["10.0.0.9", "fe80::9"])
        #expect(onlyDesk.map(\.id) == [Self.desk] && onlyDesk.first?.addressee == .advert(Self.desk, instanceName: "desk-a1"))
        #expect(DialMemory(path: dir + "/dialled").all.map(\.device) == [Self.desk], "the removed phone is forgotten on disk")
    }

    /// A member says its advert's name once per session (and when it changes, daily): what it says
    /// more often on one session is not written down again and again; a new session's is at once.
    @Test func anAdvertNameIsTakenAtMostEveryTenSeconds() async {
        let memory = DialMemory(path: nil)
        let directory = PeerDirectory(events: EventHub(), dialMemory: memory)
        let t0 = Timestamp(microsecondsSinceEpoch: 1_800_000_000_000_000)
        await directory.sessionUp(Self.desk, name: "desk", address: "10.0.0.1", local: "10.0.0.9", now: t0)
        await directory.advertised(Self.desk, instanceName: "first", port: 47810, now: t0)
        await directory.advertised(Self.desk, instanceName: "second", port: 47810, now: Timestamp(microsecondsSinceEpoch: t0.microsecondsSinceEpoch + 1_000_000))
        #expect(memory.all.map(\.instance) == ["first"])
        await directory.advertised(Self.desk, instanceName: "third", port: 47810, now: Timestamp(microsecondsSinceEpoch: t0.microsecondsSinceEpoch + 11_000_000))
        #expect(memory.all.map(\.instance) == ["third"] && memory.all.first?.via == "10.0.0.9")
        // A new session (the device restarted under a new name a moment later): taken at once.
        let t1 = Timestamp(microsecondsSinceEpoch: t0.microsecondsSinceEpoch + 12_000_000)
        await directory.sessionUp(Self.desk, name: "desk", address: "10.0.0.1", local: "10.0.0.9", now: t1)
        await directory.advertised(Self.desk, instanceName: "fourth", port: 47810, now: t1)
        #expect(memory.all.map(\.instance) == ["fourth"])
    }

    /// A cache: what cannot be read is nothing remembered, and the daemon starts as without it.
    @Test(arguments: [
        "not json", "{\"devices\":[{\"device\":\"nope\",\"host\":\"10.0.0.1\",\"port\":1,\"instance\":\"x\"}]}", "", String(repeating: " ", count: 70_000),
    ])
    func anUnreadableFileIsNothingRemembered(_ text: String) throws {
        let dir = try TempDirectory.make()
        defer { TempDirectory.remove(dir) }
        try text.write(toFile: dir + "/dialled", atomically: true, encoding: .utf8)
        #expect(DialMemory(path: dir + "/dialled").all.isEmpty)
    }

    @Test func aPortOutOfRangeIsNotDialled() throws {
        let dir = try TempDirectory.make()
        defer { TempDirectory.remove(dir) }
        let text = "{\"devices\":[{\"device\":\"\(Self.desk)\",\"host\":\"10.0.0.1\",\"port\":70000,\"instance\":\"x\",\"via\":\"10.0.0.9\"}]}"
        try text.write(toFile: dir + "/dialled", atomically: true, encoding: .utf8)
        #expect(DialMemory(path: dir + "/dialled").all.isEmpty)
    }

    /// What a device says of its own advert on each session: never a port it does not listen on
    /// (an advert published before the listener had its port says 0), which the other would refuse.
    @Test func anAdvertWithoutItsPortIsNotTold() async {
        let directory = PeerDirectory(events: EventHub())
        await directory.advertising(PeerDirectory.OwnAdvert(instanceName: "q7xk2mbv0a4hj9ts", port: 0))
        #expect(await directory.ownAdvert == nil)
        await directory.advertising(PeerDirectory.OwnAdvert(instanceName: "q7xk2mbv0a4hj9ts", port: 47810))
        #expect(await directory.ownAdvert?.port == 47810)
    }

    /// A device restarts where discovery finds nothing (another network), and the other's advert
    /// of before is all it has: it reaches the other at the address it remembered. Then the
    /// other restarts so too, and reaches it by what it said of its new advert (`advertName`).
    @Test func devicesThatStartReachEachOtherWithoutDiscovery() async throws {
        let network = DiscoveryNetwork()
        let a = try await TestDaemon.start(network: network)
        _ = try await a.client.send(.createAccount(CreateAccountRequest(deviceName: "desk")))
        let b = try await TestDaemon.start(network: network)
        let invites = try await a.client.subscribe(.invite)
        let code = try #require(try await invites.next()?.invite?.code)
        _ = try await b.client.send(.joinAccount(JoinAccountRequest(code: code, deviceName: "laptop")))
        let (aID, bID) = (try await a.client.send(.account).deviceID, try await b.client.send(.account).deviceID)
        try await waitUntil("A and B reach each other") {
            let (fromA, fromB) = (try await a.client.send(.peers).peers, try await b.client.send(.peers).peers)
            return fromA.contains { $0.id == bID && $0.reachable } && fromB.contains { $0.id == aID && $0.reachable }
        }
        // Whichever side dialled, each remembers the other: its session's address, its advert's port and name.
        try await waitUntil("each to remember the other") {
            DialMemory(path: a.stateDirectory + "/dialled").all.map(\.device) == [bID]
                && DialMemory(path: b.stateDirectory + "/dialled").all.map(\.device) == [aID]
        }
        let remembered = try #require(DialMemory(path: b.stateDirectory + "/dialled").all.first)
        #expect(remembered.host == "127.0.0.1" && remembered.port == a.daemon.peerPort)

        try await b.stop()
        try await waitUntil("A to see B go") { try await !a.client.send(.peers).peers.contains { $0.reachable } }
        let back = try await TestDaemon.start(directory: b.directory, network: DiscoveryNetwork())
        try await waitUntil("B to reach A at once, on its own") {
            try await back.client.send(.peers).peers.contains { $0.id == aID && $0.reachable }
        }

        // A never saw B's new advert (B is on another network now): B said its name and port over
        // the session. So A, restarted on a network of its own too, reaches B as B runs now.
        try await waitUntil("A to remember B as it runs now") {
            DialMemory(path: a.stateDirectory + "/dialled").all.first?.port == back.daemon.peerPort
        }
        try await a.stop()
        let aBack = try await TestDaemon.start(directory: a.directory, network: DiscoveryNetwork())
        try await waitUntil("A to reach B, both restarted") {
            try await aBack.client.send(.peers).peers.contains { $0.id == bID && $0.reachable }
        }
        try await back.finish()
        try await aBack.finish()
    }
}
