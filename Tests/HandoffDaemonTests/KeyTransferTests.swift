import Foundation
import HandoffAPI
import HandoffClient
import HandoffDiscovery
import HandoffModel
import HandoffTestSupport
import Testing

@testable import DaemonAccounts

/// The account key handed from one device to another (docs/security.md, "Handing the key over"):
/// offered on the key holder, accepted on the other device, deleted on the first only once the
/// other wrote it. Three daemons in this process; the offer's rules as a table below.
@Suite(.timeLimit(.minutes(3))) struct KeyTransferTests {
    @Test func theKeyHolderHandsTheKeyToAMemberWhoThenRemovesItAndInvites() async throws {
        let network = DiscoveryNetwork()
        let a = try await TestDaemon.start(network: network)
        _ = try await a.client.send(.createAccount(CreateAccountRequest(deviceName: "desk")))
        var joined: [TestDaemon] = []
        for name in ["laptop", "phone"] {
            let d = try await TestDaemon.start(network: network)
            let invites = try await a.client.subscribe(.invite)
            let code = try #require(try await invites.next()?.invite?.code)
            _ = try await d.client.send(.joinAccount(JoinAccountRequest(code: code, deviceName: name)))
            joined.append(d)
        }
        let (b, c) = (joined[0], joined[1])
        let bID = try await b.client.send(.account).deviceID

        // Nothing to accept yet; only the key holder offers; not to itself.
        await expectFailure(.notFound) { _ = try await b.client.send(.acceptKey) }
        await expectFailure(.notAccountAdmin) { _ = try await c.client.subscribe(.transferKey(KeyTransferRequest(device: "laptop"))).next() }
        await expectFailure(.unknownPeer) { _ = try await a.client.subscribe(.transferKey(KeyTransferRequest(device: "desk"))).next() }

        // Offered to B: B's account says so; C, not offered, cannot take it.
        try await Self.waitForSession(a, b)
        let updates = try await a.client.subscribe(.transferKey(KeyTransferRequest(device: "laptop")))
        let offered = try #require(try await updates.next()?.offered)
        #expect(offered.deviceID == bID && offered.deviceName == "laptop")
        try await waitUntil("B hears the offer") { try await b.client.send(.account).keyOffer?.deviceName == "desk" }
        await expectFailure(.notFound) { _ = try await c.client.send(.acceptKey) }
        #expect(try await a.client.send(.account).isAdmin)

        // B accepts: it holds the key; A hears that B wrote it, and deletes its copy.
        let taken = try await b.client.send(.acceptKey)
        #expect(taken.isAdmin && taken.keyHolder == bID && taken.keyOffer == nil)
        let transferred = try #require(try await updates.next()?.transferred)
        #expect(!transferred.isAdmin && transferred.keyHolder == bID)
        try await waitUntil("C learns who holds the key") { try await c.client.send(.account).keyHolder == bID }
        await expectFailure(.notAccountAdmin) { _ = try await a.client.subscribe(.invite) }

        // The new holder removes the old one and invites another device.
        let aID = try await a.client.send(.account).deviceID
        _ = try await b.client.send(.removeDevice(aID.text))
        let invites = try await b.client.subscribe(.invite)
        let code = try #require(try await invites.next()?.invite?.code)
        let d = try await TestDaemon.start(network: network)
        let dJoined = try await d.client.send(.joinAccount(JoinAccountRequest(code: code, deviceName: "tablet")))
        #expect(dJoined.deviceCount == 3 && dJoined.keyHolder == bID)
        for daemon in [a, b, c, d] { try await daemon.finish() }
    }

    /// Hanging up before the other device accepted withdraws the offer, and the device offered it
    /// hears so: nothing to accept there any more; the key holder keeps the key.
    @Test func aWithdrawnOfferIsGoneOnBothDevices() async throws {
        let (a, b) = try await ContinuationTests.pair()
        try await Self.waitForSession(a, b)
        do {
            let updates = try await a.client.subscribe(.transferKey(KeyTransferRequest(device: try await b.client.send(.account).deviceName)))
            _ = try #require(try await updates.next()?.offered)
            try await waitUntil("B hears the offer") { try await b.client.send(.account).keyOffer != nil }
            #expect(try await a.client.send(.account).keyOfferedTo != nil)
            updates.close()
        }
        try await waitUntil("A withdraws the offer when the asker hangs up") { try await a.client.send(.account).keyOfferedTo == nil }
        try await waitUntil("B hears that it was withdrawn") { try await b.client.send(.account).keyOffer == nil }
        await expectFailure(.notFound) { _ = try await b.client.send(.acceptKey) }
        #expect(try await a.client.send(.account).isAdmin)
        #expect(try await b.client.send(.account).isAdmin == false)
        for d in [a, b] { try await d.finish() }
    }

    /// The key went, and the other device never said it stored it (here: it cannot write its
    /// account file): the key holder signs nothing, and says why, until the hand-over is given up.
    @Test func aHandOverWithoutReceiptBlocksSigningUntilCancelled() async throws {
        let (a, b) = try await ContinuationTests.pair()
        try await Self.waitForSession(a, b)
        let bID = try await b.client.send(.account).deviceID
        // B's account file cannot be replaced any more (a directory where it goes; even root
        // cannot rename a file over that).
        let file = b.stateDirectory + "/account"
        try FileManager.default.removeItem(atPath: file)
        try FileManager.default.createDirectory(atPath: file + "/held", withIntermediateDirectories: true)
        do {
            let updates = try await a.client.subscribe(.transferKey(KeyTransferRequest(device: try await b.client.send(.account).deviceName)))
            _ = try #require(try await updates.next()?.offered)
            try await waitUntil("B hears the offer") { try await b.client.send(.account).keyOffer != nil }
            await expectFailure(.internalError) { _ = try await b.client.send(.acceptKey) }
            updates.close()
        }
        let holder = try await a.client.send(.account)
        #expect(holder.keyHandedTo == bID && holder.isAdmin)
        let blocked = await expectFailure(.notAccountAdmin) { _ = try await a.client.subscribe(.invite) }
        #expect(blocked.contains("has not said yet that it stored it"), "\(blocked)")
        // Within the receipt window a sync with B does not settle it (B could still be storing).
        _ = try await a.client.send(.sync(SyncRequest(peer: bID.text)))
        #expect(try await a.client.send(.account).keyHandedTo == bID)

        let cancelled = try #require(try await a.client.subscribe(.transferKey(KeyTransferRequest(device: "", cancel: true))).next()?.cancelled)
        #expect(cancelled.keyHandedTo == nil && cancelled.isAdmin)
        _ = try #require(try await a.client.subscribe(.invite).next()?.invite)
        await expectFailure(.notFound) { _ = try await a.client.subscribe(.transferKey(KeyTransferRequest(device: "", cancel: true))).next() }
        for d in [a, b] { try await d.finish() }
    }

    /// `a` has a session with `b` (an offer is made over one).
    static func waitForSession(_ a: TestDaemon, _ b: TestDaemon) async throws {
        let id = try await b.client.send(.account).deviceID
        try await waitUntil("A reaches B") { try await a.client.send(.peers).peers.contains { $0.id == id && $0.reachable } }
    }

    static let t0 = Timestamp(microsecondsSinceEpoch: 1_800_000_000_000_000)
    static let bravo = AccountState.Device(id: DeviceID(digest: Array(repeating: 2, count: 32)), name: "bravo", addedAt: t0)
    static let charlie = AccountState.Device(id: DeviceID(digest: Array(repeating: 3, count: 32)), name: "charlie", addedAt: t0)

    static func refusal(_ result: Result<KeyTransfers.Outgoing, KeyTransfers.Refusal>) -> KeyTransfers.Refusal? {
        if case .failure(let refusal) = result { return refusal }
        return nil
    }

    /// Who may take an offer, and when; once the key left, nothing else is offered or signed
    /// until its receipt (or a newer state) settles it.
    @Test func anOfferIsTakenOnlyByItsDeviceBeforeItExpires() {
        var transfers = KeyTransfers()
        let offer = transfers.offer(to: Self.bravo, now: Self.t0, lifetimeSeconds: 60)!
        #expect(Self.refusal(transfers.acceptance(of: offer.offerID, by: Self.charlie.id, now: Self.t0)) == .noSuchOffer)
        #expect(Self.refusal(transfers.acceptance(of: UUID(), by: Self.bravo.id, now: Self.t0)) == .noSuchOffer)
        #expect(Self.refusal(transfers.acceptance(of: offer.offerID, by: Self.bravo.id, now: Self.t0.adding(seconds: 60))) == .expired)
        #expect((try? transfers.acceptance(of: offer.offerID, by: Self.bravo.id, now: Self.t0.adding(seconds: 59)).get())?.offerID == offer.offerID)
        #expect(!transfers.isHandingOver)

        // The key left: a second acceptance (the answer was lost) gets the same, even late; no
        // new offer, no withdrawal, and no receipt from another device, until bravo's receipt.
        let state = SignedAccountState(stateBytes: [1], signature: [2])
        transfers.handedOver(offer.offerID, signed: state, secret: [3])
        #expect(transfers.isHandingOver)
        #expect((try? transfers.acceptance(of: offer.offerID, by: Self.bravo.id, now: Self.t0.adding(seconds: 600)).get())?.handedOver?.signed == state)
        #expect(transfers.offer(to: Self.charlie, now: Self.t0) == nil)
        transfers.withdraw(offer.offerID)
        #expect(transfers.isHandingOver)
        #expect(transfers.stored(offer.offerID, by: Self.charlie.id) == nil)
        #expect(transfers.stored(offer.offerID, by: Self.bravo.id)?.handedOver?.signed == state)
        #expect(!transfers.isHandingOver)

        // Withdrawn before it was accepted: gone.
        let second = transfers.offer(to: Self.charlie, now: Self.t0)!
        transfers.withdraw(second.offerID)
        #expect(Self.refusal(transfers.acceptance(of: second.offerID, by: Self.charlie.id, now: Self.t0)) == .noSuchOffer)
    }

    /// An offer to this device lasts what it says, never more than five minutes from when it came.
    @Test func anOfferToThisDeviceLastsAtMostItsLifetime() {
        var transfers = KeyTransfers()
        let id = UUID()
        let expired = transfers.offered(id, from: Self.bravo, expiresAt: Self.t0, now: Self.t0)
        let offered = transfers.offered(id, from: Self.bravo, expiresAt: Self.t0.adding(seconds: 86_400), now: Self.t0)
        let again = transfers.offered(id, from: Self.bravo, expiresAt: Self.t0.adding(seconds: 86_400), now: Self.t0)
        #expect(!expired && offered && !again)
        #expect(transfers.incomingOffer(now: Self.t0.adding(seconds: 299))?.from.deviceName == "bravo")
        #expect(transfers.incomingOffer(now: Self.t0.adding(seconds: 300)) == nil)
    }
}
