import Foundation
import HandoffAPI
import HandoffClient
import HandoffDaemon
import HandoffModel
import HandoffTestSupport
import Testing

/// A device's membership as its user sees it: removed (and told so, at once or at its next
/// contact), leaving, renamed — between real daemons in this process.
@Suite(.timeLimit(.minutes(3))) struct MembershipTests {
    /// B has a session with A: removed on A, B knows at once — who, when, how to rejoin — and
    /// refuses to continue without trying the network.
    @Test func aRemovedDeviceIsToldAtOnce() async throws {
        let (a, b) = try await AccountTests.pair()
        _ = try await b.client.send(.sync(SyncRequest(peer: a.peerAddress)))
        let bID = try await b.client.send(.account).deviceID
        _ = try await a.client.send(.removeDevice("laptop"))
        try await Rig.waitFor("B to be told") { try await b.client.send(.account).removal != nil }
        let removal = try #require(try await b.client.send(.account).removal)
        #expect(removal.byName == "desk" && removal.accountName == "Ana's devices" && removal.reason == .removed, "\(removal)")
        #expect(removal.sentence.hasPrefix("removed from \"Ana's devices\" by desk at "), "\(removal.sentence)")
        let message = await expectFailure(.revoked) { _ = try await b.client.send(.continueActivity(ContinueRequest(peer: "desk"))) }
        #expect(message.contains("removed from") && message.contains("by desk") && message.contains("handoffctl account leave"), "\(message)")
        await expectFailure(.revoked) { _ = try await b.client.send(.sync(SyncRequest(peer: a.peerAddress))) }
        #expect(try await a.client.send(.devices).revoked.first { $0.id == bID }?.byName == "desk")
        #expect(try await b.client.send(.status).account?.removal != nil)
        for d in [a, b] { try await d.finish() }
    }

    /// C was off when it was removed: it learns at its next contact, and remembers it after a
    /// restart. Then it leaves, and joins again as a new device.
    @Test func aRemovedDeviceLearnsAtItsNextContactThenRejoins() async throws {
        let (a, _) = try await AccountTests.pair()
        let (c, joined) = try await AccountTests.joinNew(a, name: "phone")
        try await c.stop()
        _ = try await a.client.send(.removeDevice("phone"))

        var again = try await TestDaemon.start(directory: c.directory)
        #expect(try await again.client.send(.account).removal == nil, "not told yet")
        let message = await expectFailure(.revoked) { _ = try await again.client.send(.sync(SyncRequest(peer: a.peerAddress))) }
        #expect(message.contains("removed from") && message.contains("by desk"), "\(message)")
        #expect(try await again.client.send(.account).removal?.byName == "desk")
        try await again.stop()
        again = try await TestDaemon.start(directory: c.directory)
        #expect(try await again.client.send(.account).removal?.byName == "desk", "kept across a restart")
        await expectFailure(.revoked) { _ = try await again.client.send(.continueActivity(ContinueRequest(peer: "desk"))) }

        let left = try await again.client.send(.leaveAccount())
        #expect(left.accountName == "Ana's devices" && left.told.isEmpty)
        await expectFailure(.noAccount) { _ = try await again.client.send(.account) }
        #expect(!FileManager.default.fileExists(atPath: again.stateDirectory + "/account"), "keys and state are gone")
        let (code2, updates2) = try await AccountTests.invite(a)
        let rejoined = try await AccountTests.join(again, a, code: code2, name: "phone")
        _ = try await updates2.next()
        #expect(rejoined.deviceID != joined.deviceID && rejoined.removal == nil)
        _ = try await again.client.send(.sync(SyncRequest(peer: a.peerAddress)))
        try await again.finish()
        try await a.finish()
    }

    /// B was off while C was removed, so it holds only the account's previous secret: A still
    /// reaches it (its current key is unknown there, then the previous one works), B learns the
    /// removal and the new secret, and from then on both use the new one.
    @Test func aDeviceThatMissedARemovalStillMeetsTheOthers() async throws {
        let (a, b) = try await AccountTests.pair()
        let (c, phone) = try await AccountTests.joinNew(a, name: "phone")
        try await b.stop()
        _ = try await a.client.send(.removeDevice("phone"))

        let back = try await TestDaemon.start(directory: b.directory)
        #expect(try await back.client.send(.devices).revoked.isEmpty, "not heard yet")
        _ = try await a.client.send(.sync(SyncRequest(peer: back.peerAddress)))
        try await Rig.waitFor("B to learn the removal") { try await back.client.send(.devices).revoked.contains { $0.id == phone.deviceID } }
        _ = try await back.client.send(.sync(SyncRequest(peer: a.peerAddress)))
        // C holds the previous secret too, but not a certificate the others accept any more.
        await expectFailure(.revoked) { _ = try await c.client.send(.sync(SyncRequest(peer: back.peerAddress))) }
        for d in [a, back, c] { try await d.finish() }
    }

    /// Leaving tells the device holding the account key, which removes the leaver ("left");
    /// the key holder itself leaves only last, or when forced.
    @Test func leavingTellsTheKeyHolder() async throws {
        let (a, b) = try await AccountTests.pair()
        _ = try await b.client.send(.sync(SyncRequest(peer: a.peerAddress)))
        let bID = try await b.client.send(.account).deviceID
        await expectFailure(.accountExists) { _ = try await a.client.send(.leaveAccount()) }
        let left = try await b.client.send(.leaveAccount())
        #expect(left.removedByKeyHolder && left.told == ["desk"], "\(left)")
        let record = try #require(try await a.client.send(.devices).revoked.first { $0.id == bID })
        #expect(record.reason == .left && record.byName == "laptop", "\(record)")
        #expect(try await a.client.send(.account).deviceCount == 1)
        let alone = try await a.client.send(.leaveAccount())
        #expect(alone.accountName == "Ana's devices")
        for d in [a, b] { try await d.finish() }
    }

    @Test func theKeyHolderLeavesOthersBehindOnlyWhenForced() async throws {
        let (a, b) = try await AccountTests.pair()
        let message = await expectFailure(.accountExists) { _ = try await a.client.send(.leaveAccount()) }
        #expect(message.contains("laptop") && message.contains("--abandon") && message.contains("handoffctl account recovery-code"), "\(message)")
        _ = try await a.client.send(.leaveAccount(LeaveRequest(force: true)))
        await expectFailure(.noAccount) { _ = try await a.client.send(.account) }
        #expect(try await b.client.send(.account).deviceCount == 2, "the others keep the account")
        for d in [a, b] { try await d.finish() }
    }

    /// Names live in the signed account state: the key holder renames any device, a device
    /// renames itself through the key holder, and every device with a session learns at once.
    @Test func renamesSpreadToTheOtherDevices() async throws {
        let (a, b) = try await AccountTests.pair()
        _ = try await b.client.send(.sync(SyncRequest(peer: a.peerAddress)))
        let bID = try await b.client.send(.account).deviceID
        let renamed = try await a.client.send(.renameDevice(RenameDeviceRequest(device: "laptop", name: "travel laptop")))
        #expect(renamed.id == bID && renamed.name == "travel laptop" && !renamed.isThisDevice)
        try await Rig.waitFor("B to learn its new name") { try await b.client.send(.account).deviceName == "travel laptop" }
        #expect(try await b.client.send(.devices).devices.first { $0.isThisDevice }?.name == "travel laptop")

        let mine = try await b.client.send(.renameDevice(RenameDeviceRequest(name: "laptop")))
        #expect(mine.name == "laptop" && mine.isThisDevice)
        #expect(try await a.client.send(.devices).devices.first { $0.id == bID }?.name == "laptop")
        #expect(try await a.client.send(.peers).peers.first { $0.id == bID }?.name == "laptop", "peers shows the new name")
        try await Rig.waitFor("A renamed itself, on B") {
            _ = try? await a.client.send(.renameDevice(RenameDeviceRequest(name: "big desk")))
            return try await b.client.send(.peers).peers.first?.name == "big desk"
        }

        await expectFailure(.notAccountAdmin) { _ = try await b.client.send(.renameDevice(RenameDeviceRequest(device: "big desk", name: "x"))) }
        await expectFailure(.accountExists) { _ = try await a.client.send(.renameDevice(RenameDeviceRequest(device: "laptop", name: "Big Desk"))) }
        await expectFailure(.badRequest) { _ = try await a.client.send(.renameDevice(RenameDeviceRequest(name: "two\nlines"))) }
        try await a.stop()
        let message = await expectFailure(.unreachable) { _ = try await b.client.send(.renameDevice(RenameDeviceRequest(name: "tablet"))) }
        #expect(message.contains("account key"), "\(message)")
        #expect(try await b.client.send(.account).deviceName == "laptop", "unchanged when the key holder is away")
        try await b.finish()
        TempDirectory.remove(a.directory)
    }
}
