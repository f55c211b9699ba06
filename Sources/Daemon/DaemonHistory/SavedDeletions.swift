import DaemonApps
import DaemonCore
import DaemonSessions
import HandoffAPI
import HandoffModel
import HandoffPeer
import Logging
import Synchronization

/// Saved activities deleted account-wide (docs/apps.md, "Deleting saved activities"): a deletion
/// made here (`delete`, the local API) or heard from another device (`savedDeletions`) removes
/// what it names from the history, the windows' restoration activities and, if it is one, the
/// current activity; each new one goes on at once to every device with a session, and every
/// session that opens hears all this device knows, so a device that was away catches up — from
/// whichever device it next talks to.
package struct SavedDeletions: PeerMessageHandler {
    let history: HistoryStore
    let restorations: RestorationStore
    let registry: ActivityRegistry
    let sessions: MemberSessions
    let clock: any DaemonClock
    let logger: Logger

    package init(
        history: HistoryStore, restorations: RestorationStore, registry: ActivityRegistry, sessions: MemberSessions, clock: any DaemonClock, logger: Logger
    ) {
        self.history = history
        self.restorations = restorations
        self.registry = registry
        self.sessions = sessions
        self.clock = clock
        self.logger = logger
    }

    package var kinds: Set<PeerMessage.Kind> { [.savedDeletions] }

    package func opened(_ talk: PeerTalk) async throws {
        let known = await history.deletionsToTell(now: clock.now())
        if !known.isEmpty { try await talk.send(.savedDeletions(known)) }
    }

    package func handle(_ message: PeerMessage, _ talk: PeerTalk) async throws {
        guard case .savedDeletions(let deletions) = message else { return }
        let (me, peer, from) = (self, talk.peer, talk.session.peerID)
        let work = { @Sendable () async in
            var told: [SavedActivityDeletion] = []
            for deletion in deletions {
                // One this device does not keep is applied, and told no further.
                if let done = await me.apply(deletion), done.kept { told.append(deletion) }
            }
            guard !told.isEmpty else { return }
            me.logger.info("saved activities deleted on another device", metadata: ["device": "\(peer.name)", "deletions": "\(told.count)"])
            await me.sessions.broadcast(.savedDeletions(told), except: [from])
        }
        // Applying reads the restoration activities from disk: in a task of its own, so the
        // session does not stall — a few at a time; beyond that, in the session's own turn,
        // which holds up a device that sends faster than they are applied.
        guard inFlight.start() else { return await work() }
        talk.sessions.spawn {
            await work()
            me.inFlight.end()
        }
    }

    /// Deletion messages being applied in tasks of their own.
    let inFlight = InFlight()

    final class InFlight: Sendable {
        static let most = 2
        private let count = Mutex(0)

        func start() -> Bool {
            count.withLock { n in
                guard n < Self.most else { return false }
                n += 1
                return true
            }
        }

        func end() { count.withLock { $0 -= 1 } }
    }

    /// `POST /v1/history/delete`.
    package func delete(_ request: DeleteSavedRequest) async throws(DaemonError) -> DeleteSavedResponse {
        let deletion = SavedActivityDeletion(
            at: clock.now(), persistentIdentifiers: request.persistentIdentifiers, types: request.types, everything: request.all
        )
        if let problem = deletion.problem { throw DaemonError(ActivityError(.invalidValue, "cannot delete saved activities: \(problem)")) }
        let done = await apply(deletion) ?? Done(history: 0, restorations: 0, current: false, kept: false)
        let told = await sessions.broadcast(.savedDeletions([deletion]))
        return DeleteSavedResponse(deletion: deletion.id, historyEntries: done.history, restorations: done.restorations, current: done.current, devicesTold: told)
    }

    struct Done {
        var history: Int
        var restorations: Int
        var current: Bool
        /// Kept, to tell the other devices (`HistoryStore.Applied.kept`).
        var kept: Bool
    }

    /// What `deletion` removed here; nil when it was known already.
    private func apply(_ deletion: SavedActivityDeletion) async -> Done? {
        let now = clock.now()
        guard let applied = await history.apply(deletion, now: now) else { return nil }
        // What was saved or changed since the deletion was made stays (a device that was away
        // hears it late); one dated in this device's future counts as made now.
        let effective = deletion.applying(at: now)
        let tolerance = HistoryStore.tolerance
        let restored = await restorations.remove { effective.deletes($0, seenAt: $0.updatedAt, tolerance: tolerance) }
        var resigned = false
        if let current = await registry.currentActivity(), effective.deletes(current, seenAt: current.updatedAt, tolerance: tolerance) {
            resigned = (try? await registry.resignCurrent(ifID: current.id)) != nil
        }
        return Done(history: applied.removed, restorations: restored, current: resigned, kept: applied.kept)
    }
}
