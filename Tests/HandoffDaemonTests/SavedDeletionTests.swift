import DaemonApps
import DaemonCore
import DaemonHistory
import Foundation
import HandoffAPI
import HandoffClient
import HandoffDiscovery
import HandoffModel
import HandoffPeer
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
        // Both: an app's own content (that id, of its types); another app's with the same id stays.
        let own = SavedActivityDeletion(at: .now(), persistentIdentifiers: ["1"], types: ["org.example.notes.edit"])
        #expect(own.matches(Self.note("g", persistent: "1")) && !own.matches(Self.note("h", persistent: "1", type: "org.example.mail.read")))
        #expect(!own.matches(Self.note("i", persistent: "2")))
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
        // Times about now: a deletion dated far from this device's clock is not kept (below).
        let base = Timestamp.now().microsecondsSinceEpoch / 1_000_000 - 1000
        let t0 = Timestamp(secondsSinceEpoch: base)
        func at(_ seconds: Int64) -> Timestamp { Timestamp(secondsSinceEpoch: base + seconds) }
        await store.record(Self.note("old 7", persistent: "note-7"), device: nil, own: true, at: at(-60))
        await store.record(Self.note("other", persistent: "note-8"), device: nil, own: true, at: at(-50))
        // Seen a little after the deletion by this device's clock: within the tolerance, it goes.
        await store.record(Self.note("skewed 7", persistent: "note-7", type: "org.example.notes.view"), device: nil, own: true, at: at(30))
        // Seen well after: content shown again since, it stays.
        await store.record(Self.note("new 7", persistent: "note-7", type: "org.example.notes.list"), device: nil, own: true, at: at(600))
        let deletion = SavedActivityDeletion(at: t0, persistentIdentifiers: ["note-7"])
        #expect(await store.apply(deletion, now: at(700)) == HistoryStore.Applied(removed: 2, kept: true))
        #expect(await store.list().entries.map(\.activity.title) == ["new 7", "other"])
        #expect(await store.apply(deletion, now: at(700)) == nil)
        #expect(await store.deletionsToTell(now: at(700)) == [deletion])
        await store.flush()
        var st = stat()
        #expect(stat(dir + "/history-deletions", &st) == 0 && st.st_mode & 0o777 == 0o600)
        let again = HistoryStore(stateDirectory: dir, limits: .init(), events: EventHub(), me: { nil }, logger: TestLogger.make("history"))
        #expect(await again.deletionsToTell(now: at(700)) == [deletion])
        #expect(await again.apply(deletion, now: at(700)) == nil)

        // Bounded: the newest 128.
        for i in 0..<200 { _ = await again.apply(SavedActivityDeletion(at: at(Int64(i)), types: ["org.example.t\(i)"]), now: at(700)) }
        let kept = await again.deletionsToTell(now: at(700))
        #expect(kept.count == 128 && kept.last?.types == ["org.example.t199"])

        // What this device does not keep is applied, but neither kept nor told on (else it would
        // go round for ever): older than the oldest of the full list, older than the lifetime,
        // or dated in this device's future — the far future included, which must not overflow,
        // and which deletes as if made now.
        await again.record(Self.note("old one", persistent: nil, type: "org.example.old"), device: nil, own: true, at: at(-2000))
        #expect(await again.apply(SavedActivityDeletion(at: at(-1), types: ["org.example.old"]), now: at(700)) == HistoryStore.Applied(removed: 1, kept: false))
        #expect(await again.apply(SavedActivityDeletion(at: at(-91 * 86_400), types: ["org.example.old"]), now: at(700))?.kept == false)
        await again.record(Self.note("seen later", persistent: nil, type: "org.example.later"), device: nil, own: true, at: at(650))
        for future in [at(700 + 3600), Timestamp(microsecondsSinceEpoch: .max), Timestamp(microsecondsSinceEpoch: .min)] {
            #expect(await again.apply(SavedActivityDeletion(at: future, types: ["org.example.later"]), now: at(700))?.kept == false)
        }
        #expect(!(await again.list().entries.contains { $0.activity.title == "seen later" }))
        let stillKept = await again.deletionsToTell(now: at(700))
        #expect(stillKept.count == 128 && !stillKept.contains { $0.types == ["org.example.old"] || $0.types == ["org.example.later"] })
        // An entry a kept deletion names is not recorded again (its event came late, or it was
        // reopened from the history).
        let late = Activity(content: ActivityContent(type: "org.example.t150", title: "late"), createdAt: at(100))
        await again.record(late, device: nil, own: true, at: at(900))
        #expect(!(await again.list().entries.contains { $0.activity.title == "late" }))

        // History off: the deletions are still kept (to tell others).
        await again.replace(HistoryStore.Limits(enabled: false))
        #expect(await again.apply(SavedActivityDeletion(at: at(800), everything: true), now: at(900)) == HistoryStore.Applied(removed: 0, kept: true))
        #expect(await again.deletionsToTell(now: at(900)).last?.everything == true)
    }

    /// However many and large the deletions, all a device keeps fit one peer frame.
    @Test func theDeletionsKeptFitOneFrame() async throws {
        let dir = try TempDirectory.make()
        defer { TempDirectory.remove(dir) }
        let store = HistoryStore(stateDirectory: dir, limits: .init(), events: EventHub(), me: { nil }, logger: TestLogger.make("history"))
        let now = Timestamp.now()
        for i in 0..<40 {
            let ids = (0..<64).map { "\(i)-\($0)-" + String(repeating: "p", count: 500) }
            _ = await store.apply(SavedActivityDeletion(at: now.adding(seconds: Int64(i - 100)), persistentIdentifiers: ids), now: now)
        }
        let kept = await store.deletionsToTell(now: now)
        let (kind, payload) = PeerMessage.savedDeletions(kept).encodedPayload()
        #expect(kept.count > 10 && kept.count < 40 && payload.count <= 512 * 1024 + 8, "\(kept.count) deletions, \(payload.count) bytes")
        #expect(try PeerMessage(kind: kind, payload: payload) == .savedDeletions(kept))
        #expect(kept.last?.persistentIdentifiers.first?.hasPrefix("39-") == true, "the newest are kept")
        // One older than all kept, with the list held by its bytes (not its count): applied, not
        // kept, so not told on.
        let older = SavedActivityDeletion(at: now.adding(seconds: -500), persistentIdentifiers: (0..<64).map { "old-\($0)-" + String(repeating: "p", count: 500) })
        #expect(await store.apply(older, now: now)?.kept == false)
        #expect(await store.deletionsToTell(now: now) == kept)
        // A deletion made here does not stop what is shown after it from being kept.
        _ = await store.apply(SavedActivityDeletion(at: now, everything: true), now: now)
        let after = Activity(content: ActivityContent(type: "org.example.notes.edit", title: "after"), createdAt: now.adding(microseconds: 1000))
        await store.record(after, device: nil, own: true, at: now.adding(microseconds: 1000))
        #expect(await store.list().entries.map(\.activity.title) == ["after"])
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
        try await waitUntil("laptop to hear it: its history and current activity gone") {
            let current = try? await b.client.send(.currentActivity)
            return try await b.client.send(.history).entries.isEmpty && current == nil
        }

        // Laptop away; desk deletes note 8, which laptop had.
        _ = try await b.client.send(.becomeCurrent(PutCurrentActivityRequest(content: ActivityContent(type: "org.example.notes.edit", title: "Eight", persistentIdentifier: "note-8"))))
        try await waitUntil("laptop's history") { try await b.client.send(.history).entries.count == 1 }
        try await b.stop()
        let away = try await a.client.send(.deleteSaved(DeleteSavedRequest(persistentIdentifiers: ["note-8"])))
        #expect(away.devicesTold == 0)
        // Back: the session's first words carry it.
        let back = try await TestDaemon.start(directory: b.directory, network: network)
        try await waitUntil("laptop, back, to hear the deletion: its history and current activity gone") {
            let current = try? await back.client.send(.currentActivity)
            return try await back.client.send(.history).entries.isEmpty && current == nil
        }

        await expectFailure(.invalidValue) { _ = try await a.client.send(.deleteSaved(DeleteSavedRequest())) }
        try await a.finish()
        try await back.finish()
    }
}
