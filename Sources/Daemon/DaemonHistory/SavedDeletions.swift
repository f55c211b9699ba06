import DaemonApps
import DaemonCore
import DaemonLinks
import HandoffAPI
import HandoffModel
import HandoffPeer
import Logging

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
    let links: MemberLinks
    let clock: any DaemonClock
    let logger: Logger

    package init(
        history: HistoryStore, restorations: RestorationStore, registry: ActivityRegistry, links: MemberLinks, clock: any DaemonClock, logger: Logger
    ) {
        self.history = history
        self.restorations = restorations
        self.registry = registry
        self.links = links
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
        // Its own task: applying reads the restoration activities from disk, and the session
        // must not stall meanwhile.
        let (me, peer, from) = (self, talk.peer, talk.session.peerID)
        talk.links.spawn {
            var new: [SavedActivityDeletion] = []
            for deletion in deletions where await me.apply(deletion) != nil { new.append(deletion) }
            guard !new.isEmpty else { return }
            me.logger.info("saved activities deleted on another device", metadata: ["device": "\(peer.name)", "deletions": "\(new.count)"])
            await me.links.broadcast(.savedDeletions(new), except: [from])
        }
    }

    /// `POST /v1/history/delete`.
    package func delete(_ request: DeleteSavedRequest) async throws(DaemonError) -> DeleteSavedResponse {
        let deletion = SavedActivityDeletion(
            at: clock.now(), persistentIdentifiers: request.persistentIdentifiers, types: request.types, everything: request.all
        )
        if let problem = deletion.problem { throw DaemonError(ActivityError(.invalidValue, "cannot delete saved activities: \(problem)")) }
        let done = await apply(deletion) ?? (0, 0, false)
        let told = await links.broadcast(.savedDeletions([deletion]))
        return DeleteSavedResponse(deletion: deletion.id, historyEntries: done.history, restorations: done.restorations, current: done.current, devicesTold: told)
    }

    /// What `deletion` removed here; nil when it was known already.
    private func apply(_ deletion: SavedActivityDeletion) async -> (history: Int, restorations: Int, current: Bool)? {
        guard let removed = await history.apply(deletion, now: clock.now()) else { return nil }
        // What was saved or changed since the deletion was made stays (a device that was away
        // hears it late).
        let tolerance = HistoryStore.tolerance
        let restored = await restorations.remove { deletion.deletes($0, seenAt: $0.updatedAt, tolerance: tolerance) }
        var resigned = false
        if let current = await registry.currentActivity(), deletion.deletes(current, seenAt: current.updatedAt, tolerance: tolerance) {
            resigned = (try? await registry.resignCurrent(ifID: current.id)) != nil
        }
        return (removed, restored, resigned)
    }
}
