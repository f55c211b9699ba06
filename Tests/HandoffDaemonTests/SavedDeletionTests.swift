import DaemonApps
import DaemonCore
import DaemonHistory
import Foundation
import HandoffAPI
import HandoffClient
import HandoffDiscovery
import HandoffModel
import HandoffTestSupport
import Testing

/// Deleting saved activities (docs/apps.md, "Deleting saved activities"): what a deletion names,
/// what it removes on a device, and how it reaches every device of the account — those reachable
/// at once, the others when they are back.
@Suite(.timeLimit(.minutes(3))) struct SavedDeletionTests {
    static func note(_ title: String, persistent: String?, type: String = "org.example.notes.edit") -> Activity {
        Activity(content: ActivityContent(type: type, title: title, persistentIdentifier: persistent), createdAt: .now())
    }

    @Test func whatADeletionNamesAndWhatIsRefused() {
        let byID = SavedActivityDeletion(at: .now(), persistentIdentifiers: ["note-7"])
        #expect(byID.problem == nil && byID.matches(Self.note("a", persistent: "note-7")))
        #expect(!byID.matches(Self.note("b", persistent: "note-8")) && !byID.matches(Self.note("c", persistent: nil)))
        let byType = SavedActivityDeletion(at: .now(), types: ["org.example.notes.edit"])
        #expect(byType.matches(Self.note("d", persistent: nil)) && !byType.matches(Self.note("e", persistent: nil, type: "org.example.other")))
        #expect(SavedActivityDeletion(at: .now(), everything: true).matches(Self.note("f", persistent: nil, type: "org.example.other")))
        for bad in [
            SavedActivityDeletion(at: .now()),
            SavedActivityDeletion(at: .now(), persistentIdentifiers: [""]),
            SavedActivityDeletion(at: .now(), persistentIdentifiers: [String(repeating: "x", count: 513)]),
            SavedActivityDeletion(at: .now(), persistentIdentifiers: (0...64).map { "n\($0)" }),
            SavedActivityDeletion(at: .now(), types: [String(repeating: "t", count: 129)]),
        ] {
            #expect(bad.problem != nil, "\(bad)")
            // Another device cannot make this one take it either.
            var w = ByteWriter()
            bad.encode(into: &w)
            var r = ByteReader(w.bytes)
            #expect(throws: SavedActivityDeletion.Malformed.self) { try SavedActivityDeletion(decoding: &r) }
        }
    }

    /// On one device: the entries it names, seen before it (within the clocks' tolerance), go;
    /// those seen after stay; heard twice, it does nothing; the list of deletions is bounded and
    /// survives a restart.
    @Test func aDeviceAppliesADeletionOnceAndKeepsItToTell() async throws {
        let dir = try TempDirectory.make()
        defer { TempDirectory.remove(dir) }
        let store = HistoryStore(stateDirectory: dir, limits: .init(), events: EventHub(), me: { nil }, logger: TestLogger.make("history"))
        let t0 = Timestamp(secondsSinceEpoch: 1_800_000_000)
        func at(_ seconds: Int64) -> Timestamp { Timestamp(secondsSinceEpoch: 1_800_000_000 + seconds) }
        await store.record(Self.note("old 7", persistent: "note-7"), device: nil, own: true, at: at(-60))
        await store.record(Self.note("other", persistent: "note-8"), device: nil, own: true, at: at(-50))
        // Seen a little after the deletion by this device's clock: within the tolerance, it goes.
        await store.record(Self.note("skewed 7", persistent: "note-7", type: "org.example.notes.view"), device: nil, own: true, at: at(30))
        // Seen well after: content shown again since, it stays.
        await store.record(Self.note("new 7", persistent: "note-7", type: "org.example.notes.list"), device: nil, own: true, at: at(600))
        let deletion = SavedActivityDeletion(at: t0, persistentIdentifiers: ["note-7"])
        #expect(await store.apply(deletion, now: at(700)) == 2)
        #expect(await store.list().entries.map(\.activity.title) == ["new 7", "other"])
        #expect(await store.apply(deletion, now: at(700)) == nil)
        #expect(await store.deletionsToTell() == [deletion])
        await store.flush()
        var st = stat()
        #expect(stat(dir + "/history-deletions", &st) == 0 && st.st_mode & 0o777 == 0o600)
        let again = HistoryStore(stateDirectory: dir, limits: .init(), events: EventHub(), me: { nil }, logger: TestLogger.make("history"))
        #expect(await again.deletionsToTell() == [deletion])
        #expect(await again.apply(deletion, now: at(700)) == nil)

        // Bounded: the newest 128; those older than 90 days are not kept, yet still apply.
        for i in 0..<200 { _ = await again.apply(SavedActivityDeletion(at: at(Int64(i)), types: ["org.example.t\(i)"]), now: at(700)) }
        let kept = await again.deletionsToTell()
        #expect(kept.count == 128 && kept.last?.types == ["org.example.t199"])
        await again.record(Self.note("ancient", persistent: "note-9"), device: nil, own: true, at: at(-100 * 86_400))
        #expect(await again.apply(SavedActivityDeletion(at: at(-95 * 86_400), persistentIdentifiers: ["note-9"]), now: at(700)) == 1)
        let stillKept = await again.deletionsToTell()
        #expect(stillKept.count == 128 && !stillKept.contains { $0.persistentIdentifiers == ["note-9"] })

        // History off: the deletions are still kept (to tell others).
        await again.replace(HistoryStore.Limits(enabled: false))
        #expect(await again.apply(SavedActivityDeletion(at: at(800), everything: true), now: at(900)) == 0)
        #expect(await again.deletionsToTell().last?.everything == true)
    }

    @Test func restorationActivitiesOfADeletedContentGo() async throws {
        let dir = try TempDirectory.make()
        defer { TempDirectory.remove(dir) }
        let store = RestorationStore(stateDirectory: dir, limits: ActivityLimits(), logger: TestLogger.make("restoration"))
        try await store.save(Self.note("seven", persistent: "note-7"), appID: "org.example.Notes", window: "w1")
        try await store.save(Self.note("eight", persistent: "note-8"), appID: "org.example.Notes", window: "w2")
        try await store.save(Self.note("seven too", persistent: "note-7"), appID: "org.example.Other", window: "main")
        let deletion = SavedActivityDeletion(at: .now(), persistentIdentifiers: ["note-7"])
        #expect(await store.remove(where: deletion.matches) == 2)
        #expect(await store.restoration(of: "org.example.Notes").keys.sorted() == ["w2"])
        #expect(await store.restoration(of: "org.example.Other").isEmpty)
    }

    /// A deletion on desk reaches laptop at once (its history entry and its current activity
    /// go); laptop away during the next one hears it when it is back.
    @Test func aDeletionReachesEveryDeviceIncludingOneThatWasAway() async throws {
        let network = DiscoveryNetwork()
        let (a, b) = try await PeerDiscoveryTests.pair(network: network)
        let seven = ActivityContent(type: "org.example.notes.edit", title: "Seven", persistentIdentifier: "note-7")
        let put = try await a.client.send(.becomeCurrent(PutCurrentActivityRequest(content: seven)))
        try await ContinuationTests.waitUntilSeen(put.activity, by: b)
        _ = try await b.client.send(.continueActivity(ContinueRequest(peer: "desk")))
        // Laptop shows note 7 itself too, and note 8 after.
        _ = try await b.client.send(.becomeCurrent(PutCurrentActivityRequest(content: seven)))
        try await waitUntil("laptop's history") { try await b.client.send(.history).entries.count == 2 }

        let done = try await a.client.send(.deleteSaved(DeleteSavedRequest(persistentIdentifiers: ["note-7"])))
        #expect(done.historyEntries == 1 && done.current && done.devicesTold == 1, "\(done)")
        await expectFailure(.noCurrentActivity) { _ = try await a.client.send(.currentActivity) }
        try await waitUntil("laptop to hear it") { try await b.client.send(.history).entries.isEmpty }
        await expectFailure(.noCurrentActivity) { _ = try await b.client.send(.currentActivity) }

        // Laptop away; desk deletes note 8, which laptop had.
        _ = try await b.client.send(.becomeCurrent(PutCurrentActivityRequest(content: ActivityContent(type: "org.example.notes.edit", title: "Eight", persistentIdentifier: "note-8"))))
        try await waitUntil("laptop's history") { try await b.client.send(.history).entries.count == 1 }
        try await b.stop()
        let away = try await a.client.send(.deleteSaved(DeleteSavedRequest(persistentIdentifiers: ["note-8"])))
        #expect(away.devicesTold == 0)
        // Back: the session's first words carry it.
        let back = try await TestDaemon.start(directory: b.directory, network: network)
        try await waitUntil("laptop, back, to hear the deletion") { try await back.client.send(.history).entries.isEmpty }
        await expectFailure(.noCurrentActivity) { _ = try await back.client.send(.currentActivity) }

        await expectFailure(.invalidValue) { _ = try await a.client.send(.deleteSaved(DeleteSavedRequest())) }
        try await a.finish()
        try await back.finish()
    }
}
