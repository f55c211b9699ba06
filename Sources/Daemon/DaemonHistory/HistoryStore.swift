#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonCore
import HandoffAPI
import HandoffModel
import HandoffSystem
import Logging
import ServiceLifecycle

/// The recent activities this device saw (docs/apps.md, "History"): its own, each in the last
/// version it had while current, and the other devices' it fetched (continued). Continuation
/// streams are never kept, only the activity. Newest first, bounded in count and bytes (the
/// oldest go first), in one file under the state directory: 0600, one JSON entry per line,
/// written atomically. Off (`[history] enabled = false`) nothing is kept and the file goes.
///
/// It follows the daemon's events (`EventHub`) — the current activity as it changes, and each
/// continuation's activity — in order, in this service's one task: nobody waits for its disk.
package actor HistoryStore: Service {
    package struct Limits: Sendable, Equatable {
        package var enabled: Bool
        package var maximumEntries: Int
        package var maximumBytes: Int

        package static let defaultEntries = 100
        package static let defaultBytes = 1 << 20

        package init(enabled: Bool = true, maximumEntries: Int = Limits.defaultEntries, maximumBytes: Int = Limits.defaultBytes) {
            self.enabled = enabled
            self.maximumEntries = maximumEntries
            self.maximumBytes = maximumBytes
        }
    }

    package static let fileName = "history"

    private let path: String
    private var limits: Limits
    /// This device, as its entries name it (nil before it has an account).
    private let me: @Sendable () async -> LocalEvent.PeerRef?
    private let logger: Logger
    /// Newest first, each with the bytes of its line.
    private var entries: [(entry: HistoryEntry, bytes: Int)]
    /// What the daemon does, from the service's start: what is kept is taken from here.
    private let events: EventHub
    private var subscription: AsyncStream<LocalEvent>
    /// New limits, taken in turn.
    private let limitChanges: AsyncStream<Limits>
    private let post: AsyncStream<Limits>.Continuation

    /// Saves are fsync'd: on the disk thread, never on the event loop.
    package nonisolated var unownedExecutor: UnownedSerialExecutor { DiskThread.shared.asUnownedSerialExecutor() }

    package init(stateDirectory: String, limits: Limits, events: EventHub, me: @escaping @Sendable () async -> LocalEvent.PeerRef?, logger: Logger) {
        path = stateDirectory + "/" + Self.fileName
        self.limits = limits
        self.events = events
        // Subscribed now: nothing published before the service runs is missed.
        subscription = events.subscribe()
        self.me = me
        self.logger = logger
        entries = limits.enabled ? Self.load(path, limits: limits, logger: logger) : []
        if !limits.enabled { PrivateFiles.remove(path) }
        (limitChanges, post) = AsyncStream.makeStream(of: Limits.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// New limits (a reloaded handoffd.toml): applied by the service's task.
    package nonisolated func change(to limits: Limits) {
        post.yield(limits)
    }

    /// Keeps what the events say was seen, until shutdown.
    package func run() async {
        let limitChanges = self.limitChanges
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask {
                    for await limits in limitChanges { await self.replace(limits) }
                }
                await self.follow()
                group.cancelAll()
            }
        }
    }

    /// The events, for as long as the daemon runs; a subscription that fell too far behind (the
    /// hub ends it) is taken again.
    private func follow() async {
        while !Task.isCancelled {
            for await event in subscription {
                switch event.body {
                case .currentActivityChanged(let activity):
                    record(activity, device: await me(), own: true, at: activity.updatedAt)
                case .continued(_, let activity, let peer, _):
                    record(activity, device: peer, own: false, at: event.at)
                default:
                    break
                }
            }
            subscription = events.subscribe()
        }
    }

    /// Keeps `activity`, newest first (an earlier version of it goes), within the limits.
    package func record(_ activity: Activity, device: LocalEvent.PeerRef?, own: Bool, at: Timestamp) {
        guard limits.enabled else { return }
        let entry = HistoryEntry(activity: activity, device: device, own: own, seenAt: at)
        guard let line = Self.line(entry) else { return }
        entries.removeAll { $0.entry.activity.id == activity.id && $0.entry.device?.id == device?.id }
        entries.insert((entry, line.count), at: 0)
        trim()
        save()
    }

    package func list() -> HistoryResponse {
        HistoryResponse(entries: entries.map(\.entry), enabled: limits.enabled)
    }

    /// New limits (a reloaded handoffd.toml): what no longer fits goes; off, everything does.
    package func replace(_ new: Limits) {
        limits = new
        guard new.enabled else {
            entries = []
            PrivateFiles.remove(path)
            return
        }
        let before = entries.count
        trim()
        if entries.count != before { save() }
    }

    private func trim() {
        var total = 0
        var kept = 0
        for (_, bytes) in entries {
            guard kept < limits.maximumEntries, total + bytes <= limits.maximumBytes else { break }
            total += bytes
            kept += 1
        }
        entries.removeLast(entries.count - kept)
    }

    private func save() {
        do {
            let bytes = entries.flatMap { Self.line($0.entry) ?? [] }
            try PrivateFiles.writeAtomically(bytes, to: path)
        } catch {
            // History is a convenience: a full disk loses it, never the request that made it.
            logger.warning("cannot save the history", metadata: ["error": "\(error)"])
        }
    }

    /// One entry as its line: the local API's JSON and a newline.
    static func line(_ entry: HistoryEntry) -> [UInt8]? {
        guard let json = try? LocalAPIJSON.encoder().encode(entry) else { return nil }
        return Array(json) + [UInt8(ascii: "\n")]
    }

    /// What the file holds, within the limits; a line that does not read is skipped (and said).
    static func load(_ path: String, limits: Limits, logger: Logger) -> [(entry: HistoryEntry, bytes: Int)] {
        let bytes: [UInt8]?
        do {
            bytes = try PrivateFiles.read(path, maximumSize: limits.maximumBytes + 64 * 1024)
        } catch {
            let aside = PrivateFiles.quarantine(path)
            logger.warning("the history is unreadable; moved it aside", metadata: ["path": "\(aside)", "error": "\(error)"])
            return []
        }
        guard let bytes else { return [] }
        var entries: [(entry: HistoryEntry, bytes: Int)] = []
        var skipped = 0
        for line in bytes.split(separator: UInt8(ascii: "\n")) where entries.count < limits.maximumEntries {
            if let entry = try? LocalAPIJSON.decoder().decode(HistoryEntry.self, from: Data(line)) {
                entries.append((entry, line.count + 1))
            } else {
                skipped += 1
            }
        }
        if skipped > 0 { logger.warning("lines of the history did not read; skipped", metadata: ["lines": "\(skipped)"]) }
        return entries
    }
}
