#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonCore
import HandoffAPI
import HandoffModel
import HandoffPeer
import HandoffSystem
import Logging
import ServiceLifecycle

/// The recent activities this device saw (docs/apps.md, "History"): its own, each in the last
/// version it had while current, and the other devices' it fetched (continued). Continuation
/// streams are never kept, only the activity. Newest first, bounded in count and bytes (the
/// oldest go first), in one file under the state directory: 0600, one JSON entry per line,
/// written atomically at most once a second while activities change (and at shutdown). Off
/// (`[history] enabled = false`) nothing is kept and the file goes.
///
/// It follows the daemon's events (`EventHub`) — the current activity as it changes, and each
/// continuation's activity — in order, in this service's one task; it writes on a thread of its
/// own: neither a request nor the other features' saves wait for its disk.
package actor HistoryStore: Service {
    package struct Limits: Sendable, Equatable {
        package var enabled: Bool
        package var maximumEntries: Int
        package var maximumBytes: Int

        package static let defaultEntries = 100
        package static let defaultBytes = 1 << 20
        /// What `max_bytes` may be at most: all of it is read back in one answer (the local
        /// API's client takes 64 MiB at most, D-Bus messages less).
        package static let largestBytes = 16 << 20

        package init(enabled: Bool = true, maximumEntries: Int = Limits.defaultEntries, maximumBytes: Int = Limits.defaultBytes) {
            self.enabled = enabled
            self.maximumEntries = maximumEntries
            self.maximumBytes = maximumBytes
        }
    }

    package static let fileName = "history"
    /// The deletions this device made or heard (`SavedActivityDeletion`), kept to tell every
    /// device it next talks to, history on or off.
    package static let deletionsFileName = "history-deletions"
    /// How many of them are kept (the newest), for how long at most, and how many bytes they
    /// take together as a peer message carries them: all of them fit one frame (1 MiB).
    static let deletionsKept = PeerMessage.maximumSavedDeletions
    static let deletionsLifetime: Int64 = 90 * 24 * 3600
    static let deletionsBytes = 512 * 1024
    /// A deletion made on another device removes what this device saw up to this long after it,
    /// by this device's clock: the two clocks may differ by a little (doctor says when by more).
    static let clockTolerance: Int64 = 120

    private let path: String
    private var limits: Limits
    /// This device, as its entries name it (nil before it has an account). Not async: an async
    /// closure runs off this actor's thread and back — two wake-ups of two threads for every
    /// event the history keeps (docs/benchmarks.md, "handoffctl's share of continue").
    private let me: @Sendable () -> LocalEvent.PeerRef?
    private let logger: Logger
    /// Newest first, each with its line as the file holds it.
    private var entries: [(entry: HistoryEntry, line: [UInt8])]
    /// Oldest first.
    private var deletions: [SavedActivityDeletion]
    private var deletionsDirty = false
    /// What was recorded since the file was last written.
    private var dirty = false
    /// Nudges the saver (`run`): the file follows at most once a second while things change.
    private let saves: AsyncStream<Void>
    private let save: AsyncStream<Void>.Continuation
    /// What the daemon does, from the service's start: what is kept is taken from here.
    private let events: EventHub
    private var subscription: AsyncStream<LocalEvent>
    /// New limits, taken in turn.
    private let limitChanges: AsyncStream<Limits>
    private let post: AsyncStream<Limits>.Continuation

    /// Saves are fsync'd: on a disk thread of its own, never on the event loop, nor holding up
    /// the current activity's and the account's saves on the shared one.
    package nonisolated var unownedExecutor: UnownedSerialExecutor { Self.thread.asUnownedSerialExecutor() }
    static let thread = DiskThread(name: "handoff-history")

    package init(stateDirectory: String, limits: Limits, events: EventHub, me: @escaping @Sendable () -> LocalEvent.PeerRef?, logger: Logger) {
        path = stateDirectory + "/" + Self.fileName
        self.limits = limits
        self.events = events
        // Subscribed now: nothing published before the service runs is missed.
        subscription = events.subscribe(only: Self.follows)
        self.me = me
        self.logger = logger
        entries = limits.enabled ? Self.load(path, limits: limits, logger: logger) : []
        deletions = Self.loadDeletions(stateDirectory + "/" + Self.deletionsFileName, logger: logger)
        if !limits.enabled { Self.removeFiles(path) }
        (limitChanges, post) = AsyncStream.makeStream(of: Limits.self, bufferingPolicy: .bufferingNewest(1))
        (saves, save) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// How often the file is written at most while activities change: each change of the
    /// current activity (a focus, an app's update) would otherwise rewrite it.
    static let saveInterval: Duration = .seconds(1)

    /// New limits (a reloaded handoffd.toml): applied by the service's task.
    package nonisolated func change(to limits: Limits) {
        post.yield(limits)
    }

    /// Keeps what the events say was seen, until shutdown; what is not on disk yet is written
    /// then.
    package func run() async {
        let (limitChanges, saves) = (self.limitChanges, self.saves)
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask {
                    for await limits in limitChanges { await self.replace(limits) }
                }
                group.addTask {
                    for await _ in saves {
                        await self.flush()
                        guard (try? await QuietSleep.sleep(for: Self.saveInterval)) != nil else { return }
                    }
                }
                await self.follow()
                group.cancelAll()
            }
        }
        flush()
    }

    /// The events the history follows: the others do not wake its thread.
    static let follows: @Sendable (LocalEvent) -> Bool = { event in
        switch event.body {
        case .currentActivityChanged, .continued: true
        default: false
        }
    }

    /// The events, for as long as the daemon runs; a subscription that fell too far behind (the
    /// hub ends it) is taken again.
    private func follow() async {
        while !Task.isCancelled {
            for await event in subscription {
                switch event.body {
                case .currentActivityChanged(let activity):
                    record(activity, device: me(), own: true, at: activity.updatedAt)
                case .continued(_, let activity, let peer, _):
                    // A link reopened here this device's own activity (docs/apps.md, "Links").
                    let own = peer.id == me()?.id
                    record(activity, device: peer, own: own, at: event.at)
                default:
                    break
                }
            }
            subscription = events.subscribe(only: Self.follows)
        }
    }

    /// Keeps `activity`, newest first, within the limits. What it replaces goes: an earlier
    /// version of it, or — from the same device — an activity of the same type with the same
    /// `persistentIdentifier` (the same content: a document saved again).
    package func record(_ activity: Activity, device: LocalEvent.PeerRef?, own: Bool, at: Timestamp) {
        guard limits.enabled else { return }
        // Deleted already (a deletion that came before the event saying it was seen, or an
        // activity reopened from the history): not kept again. No tolerance here: what was
        // shown after a deletion is kept.
        if deletions.contains(where: { $0.deletes(activity, seenAt: min(at, activity.updatedAt).adding(microseconds: 1), tolerance: .zero) }) { return }
        let entry = HistoryEntry(activity: activity, device: device, own: own, seenAt: at)
        guard let line = Self.line(entry) else { return }
        guard line.count <= limits.maximumBytes else {
            logger.notice("an activity is larger than [history] max_bytes; not kept", metadata: ["activity": "\(activity.id.lowercasedString)", "bytes": "\(line.count)"])
            return
        }
        entries.removeAll { Self.replaces(entry, $0.entry) }
        entries.insert((entry, line), at: 0)
        trim()
        dirty = true
        save.yield()
    }

    /// Whether `new` replaces `old`: the same activity seen from the same side (this device's,
    /// or the same other device's), or the same content (type and `persistentIdentifier`) there.
    static func replaces(_ new: HistoryEntry, _ old: HistoryEntry) -> Bool {
        guard new.own == old.own, new.own || new.device?.id == old.device?.id else { return false }
        if new.activity.id == old.activity.id { return true }
        guard let id = new.activity.content.persistentIdentifier, new.activity.type == old.activity.type else { return false }
        return id == old.activity.content.persistentIdentifier
    }

    package func list() -> HistoryResponse {
        HistoryResponse(entries: entries.map(\.entry), enabled: limits.enabled)
    }

    /// The newest entry of that content (`savedActivity(for:)` in HandoffKit).
    package func newest(persistentIdentifier: String) -> HistoryEntry? {
        entries.first { $0.entry.activity.content.persistentIdentifier == persistentIdentifier }?.entry
    }

    /// The newest entry a link names: one from the link's device first, else any.
    package func newest(naming target: LinkTarget) -> HistoryEntry? {
        let named = entries.lazy.map(\.entry).filter { target.names($0.activity) }
        return named.first { ($0.device?.id ?? target.device) == target.device } ?? named.first
    }

    /// What applying a deletion did.
    package struct Applied: Sendable, Equatable {
        /// The history entries that went.
        package var removed: Int
        /// Whether it is kept, to tell the other devices: false for one this device does not
        /// keep (older than the lifetime, or than what a full list holds; dated in its future),
        /// so that no deletion goes round for ever.
        package var kept: Bool

        package init(removed: Int, kept: Bool) {
            self.removed = removed
            self.kept = kept
        }
    }

    /// Applies `deletion` (docs/apps.md, "Deleting saved activities"), made here or heard from
    /// another device: the entries it names that were seen before it was made (within
    /// `clockTolerance`; one dated in this device's future counts as made now) go, so that what
    /// was seen since stays. Nil when it was heard already: nothing to do, nothing to tell.
    package func apply(_ deletion: SavedActivityDeletion, now: Timestamp = .now()) -> Applied? {
        prune(now: now)
        guard !deletions.contains(where: { $0.id == deletion.id }) else { return nil }
        var kept = false
        if Self.isFresh(deletion.at, now: now) {
            deletions.append(deletion)
            deletions.sort { $0.at < $1.at }
            deletions = Self.bounded(deletions)
            kept = deletions.contains { $0.id == deletion.id }
            deletionsDirty = true
        }
        let effective = deletion.applying(at: now)
        let before = entries.count
        entries.removeAll { effective.deletes($0.entry.activity, seenAt: $0.entry.seenAt, tolerance: Self.tolerance) }
        if entries.count != before { dirty = true }
        save.yield()
        return Applied(removed: before - entries.count, kept: kept)
    }

    static let tolerance = Duration.seconds(clockTolerance)

    /// Within the lifetime, and not after `now` by more than the clocks' tolerance.
    static func isFresh(_ at: Timestamp, now: Timestamp) -> Bool {
        at >= now.adding(seconds: -deletionsLifetime) && at <= now.adding(seconds: clockTolerance)
    }

    /// The newest that fit the count and the bytes.
    static func bounded(_ sorted: [SavedActivityDeletion]) -> [SavedActivityDeletion] {
        var kept: [SavedActivityDeletion] = []
        var bytes = 0
        for deletion in sorted.reversed() {
            var w = ByteWriter()
            deletion.encode(into: &w)
            guard kept.count < deletionsKept, bytes + w.bytes.count <= deletionsBytes else { break }
            bytes += w.bytes.count
            kept.append(deletion)
        }
        return kept.reversed()
    }

    private func prune(now: Timestamp) {
        let before = deletions.count
        deletions.removeAll { $0.at < now.adding(seconds: -Self.deletionsLifetime) }
        if deletions.count != before { deletionsDirty = true }
    }

    /// The deletions to tell another device, oldest first.
    package func deletionsToTell(now: Timestamp = .now()) -> [SavedActivityDeletion] {
        prune(now: now)
        return deletions
    }

    /// Forgets the deletions (this device left its account: another account's devices have
    /// nothing to hear of them).
    package func forgetDeletions() {
        deletions = []
        deletionsDirty = true
        save.yield()
    }

    /// New limits (a reloaded handoffd.toml): what no longer fits goes; off, everything does.
    package func replace(_ new: Limits) {
        limits = new
        guard new.enabled else {
            entries = []
            dirty = false
            Self.removeFiles(path)
            return
        }
        let before = entries.count
        trim()
        if entries.count != before {
            dirty = true
            save.yield()
        }
    }

    /// The file, and what a crash or an unreadable file left beside it (they hold activities too).
    static func removeFiles(_ path: String) {
        PrivateFiles.remove(path)
        PrivateFiles.remove(path + ".unreadable")
        let directory = PrivateFiles.parentDirectory(of: path)
        let prefix = String(path.split(separator: "/").last ?? "") + ".tmp-"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] where name.hasPrefix(prefix) {
            PrivateFiles.remove(directory + "/" + name)
        }
    }

    private func trim() {
        var total = 0
        var kept = 0
        for (_, line) in entries {
            guard kept < limits.maximumEntries, total + line.count <= limits.maximumBytes else { break }
            total += line.count
            kept += 1
        }
        entries.removeLast(entries.count - kept)
    }

    /// Writes what changed since the last write.
    package func flush() {
        if deletionsDirty {
            deletionsDirty = false
            do {
                try PrivateFiles.writeAtomically(Array(try JSONEncoder().encode(deletions)), to: deletionsPath)
            } catch {
                logger.warning("cannot save the deletions of saved activities", metadata: ["error": "\(error)"])
            }
        }
        guard dirty, limits.enabled else { return }
        dirty = false
        do {
            try PrivateFiles.writeAtomically(entries.flatMap(\.line), to: path)
        } catch {
            // History is a convenience: a full disk loses it, never the request that made it.
            logger.warning("cannot save the history", metadata: ["error": "\(error)"])
        }
    }

    private var deletionsPath: String { PrivateFiles.parentDirectory(of: path) + "/" + Self.deletionsFileName }

    /// The deletions kept; none when the file is unreadable (moved aside).
    static func loadDeletions(_ path: String, logger: Logger) -> [SavedActivityDeletion] {
        do {
            guard let bytes = try PrivateFiles.read(path, maximumSize: 16 << 20) else { return [] }
            let read = try JSONDecoder().decode([SavedActivityDeletion].self, from: Data(bytes))
            return bounded(read.filter { $0.problem == nil && isFresh($0.at, now: .now()) }.sorted { $0.at < $1.at })
        } catch {
            let aside = PrivateFiles.quarantine(path)
            logger.warning("the deletions of saved activities are unreadable; moved them aside", metadata: ["path": "\(aside)", "error": "\(error)"])
            return []
        }
    }

    /// One entry as its line: the local API's JSON and a newline.
    static func line(_ entry: HistoryEntry) -> [UInt8]? {
        guard let json = try? LocalAPIJSON.encoder().encode(entry) else { return nil }
        return Array(json) + [UInt8(ascii: "\n")]
    }

    /// What the file holds, within the limits; a line that does not read is skipped (and said).
    static func load(_ path: String, limits: Limits, logger: Logger) -> [(entry: HistoryEntry, line: [UInt8])] {
        let bytes: [UInt8]?
        do {
            // As large as the largest limit allows: a lower one set since trims what is read.
            bytes = try PrivateFiles.read(path, maximumSize: Limits.largestBytes + 64 * 1024)
        } catch {
            let aside = PrivateFiles.quarantine(path)
            logger.warning("the history is unreadable; moved it aside", metadata: ["path": "\(aside)", "error": "\(error)"])
            return []
        }
        guard let bytes else { return [] }
        var entries: [(entry: HistoryEntry, line: [UInt8])] = []
        var skipped = 0
        var total = 0
        for line in bytes.split(separator: UInt8(ascii: "\n")) where entries.count < limits.maximumEntries {
            guard let entry = try? LocalAPIJSON.decoder().decode(HistoryEntry.self, from: Data(line)) else {
                skipped += 1
                continue
            }
            guard total + line.count + 1 <= limits.maximumBytes else { break }
            total += line.count + 1
            entries.append((entry, Array(line) + [UInt8(ascii: "\n")]))
        }
        if skipped > 0 { logger.warning("lines of the history did not read; skipped", metadata: ["lines": "\(skipped)"]) }
        return entries
    }
}
