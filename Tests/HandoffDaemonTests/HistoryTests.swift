import DaemonCore
import DaemonHistory
import Foundation
import HandoffAPI
import HandoffClient
import HandoffDaemon
import HandoffModel
import HandoffTestSupport
import Testing

/// History (docs/apps.md, "History"): what a device keeps of the activities it saw — its own and
/// those it fetched — newest first, within bounds, on disk, and none when it is off.
@Suite(.timeLimit(.minutes(3))) struct HistoryTests {
    static func activity(_ title: String, persistent: String? = nil, bytes: Int = 0) -> Activity {
        Activity(
            content: ActivityContent(
                type: "org.example.notes.edit", title: title, userInfo: bytes > 0 ? ["text": .string(String(repeating: "x", count: bytes))] : [:],
                persistentIdentifier: persistent
            ),
            createdAt: .now()
        )
    }

    static let desk = LocalEvent.PeerRef(id: DeviceID(digest: [UInt8](repeating: 1, count: 32)), name: "desk")

    @Test func newestFirstWithinBoundsAndKeptOnDisk() async throws {
        let dir = try TempDirectory.make()
        defer { TempDirectory.remove(dir) }
        let limits = HistoryStore.Limits(maximumEntries: 3)
        let store = HistoryStore(stateDirectory: dir, limits: limits, events: EventHub(), me: { nil }, logger: TestLogger.make("history"))
        let first = Self.activity("one", persistent: "note-1")
        for (i, a) in [first, Self.activity("two"), Self.activity("three")].enumerated() {
            await store.record(a, device: Self.desk, own: false, at: Timestamp(secondsSinceEpoch: Int64(i)))
        }
        // Seen again: its older entry goes, it comes first.
        var updated = first
        updated.content.title = "one, edited"
        await store.record(updated, device: Self.desk, own: false, at: Timestamp(secondsSinceEpoch: 10))
        await store.record(Self.activity("four"), device: nil, own: true, at: Timestamp(secondsSinceEpoch: 11))
        let titles = await store.list().entries.map(\.activity.title)
        #expect(titles == ["four", "one, edited", "three"])
        await store.flush()

        // On disk, 0600, read back the same; a line that does not read is skipped.
        var st = stat()
        #expect(stat(dir + "/history", &st) == 0 && st.st_mode & 0o777 == 0o600)
        let again = HistoryStore(stateDirectory: dir, limits: limits, events: EventHub(), me: { nil }, logger: TestLogger.make("history"))
        #expect(await again.list() == store.list())
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: dir + "/history"))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("{not json\n".utf8))
        try handle.close()
        #expect(await HistoryStore(stateDirectory: dir, limits: limits, events: EventHub(), me: { nil }, logger: TestLogger.make("history")).list().entries.count == 3)

        // Bytes bound too: one large activity pushes the older ones out; one larger than the
        // whole bound is not kept, and the others stay.
        await again.replace(HistoryStore.Limits(maximumEntries: 3, maximumBytes: 65_536))
        await again.record(Self.activity("big", bytes: 65_000), device: Self.desk, own: false, at: Timestamp(secondsSinceEpoch: 12))
        #expect(await again.list().entries.map(\.activity.title) == ["big"])
        await again.record(Self.activity("huge", bytes: 70_000), device: Self.desk, own: false, at: Timestamp(secondsSinceEpoch: 13))
        #expect(await again.list().entries.map(\.activity.title) == ["big"])

        // The same content again from the same device (a document saved anew: the same
        // persistentIdentifier) replaces its entry; from another device it does not.
        await again.replace(HistoryStore.Limits(maximumEntries: 10))
        let laptop = LocalEvent.PeerRef(id: DeviceID(digest: [UInt8](repeating: 2, count: 32)), name: "laptop")
        for (title, device) in [("v1", Self.desk), ("v2", Self.desk), ("v1 there", laptop)] {
            await again.record(Self.activity(title, persistent: "home:notes.txt"), device: device, own: false, at: .now())
        }
        #expect(await again.list().entries.map(\.activity.title) == ["v1 there", "v2", "big"])

        // Off: nothing kept, the file gone.
        await again.replace(HistoryStore.Limits(enabled: false))
        await again.record(Self.activity("five"), device: nil, own: true, at: .now())
        #expect(await again.list() == HistoryResponse(entries: [], enabled: false))
        #expect(!FileManager.default.fileExists(atPath: dir + "/history"))
    }

    @Test func aDeviceKeepsItsOwnActivitiesAndThoseItFetched() async throws {
        let (a, b) = try await ContinuationTests.pair()
        let note = ActivityContent(type: "org.example.notes.edit", title: "Draft", persistentIdentifier: "note-7")
        let first = try await a.client.send(.becomeCurrent(PutCurrentActivityRequest(content: note)))
        var edited = note
        edited.title = "Draft, edited"
        _ = try await a.client.send(.becomeCurrent(PutCurrentActivityRequest(id: first.activity.id, content: edited)))
        let second = try await a.client.send(.becomeCurrent(PutCurrentActivityRequest(content: ActivityContent(type: "org.example.notes.edit", title: "Other"))))
        try await waitUntil("A's history to hold both") { try await a.client.send(.history).entries.count == 2 }
        let own = try await a.client.send(.history)
        #expect(own.enabled && own.entries.map(\.activity.title) == ["Other", "Draft, edited"])
        #expect(own.entries.allSatisfy { $0.own && $0.device?.name == "desk" })
        #expect(own.entries[1].activity.content.persistentIdentifier == "note-7")

        try await ContinuationTests.waitUntilSeen(second.activity, by: b)
        _ = try await b.client.send(.continueActivity(ContinueRequest(peer: "desk", delivery: .returnToCaller)))
        try await waitUntil("B's history to hold what it fetched") { try await !b.client.send(.history).entries.isEmpty }
        let fetched = try await b.client.send(.history).entries
        #expect(fetched.count == 1 && fetched[0].activity == second.activity && !fetched[0].own && fetched[0].device?.name == "desk")
        for d in [a, b] { try await d.finish() }
    }
}
