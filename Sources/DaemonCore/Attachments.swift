#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffModel
import Synchronization

/// Originating apps attached to their current activity (`POST /v1/activity/current/attach`): what
/// NSUserActivity's delegate hears — `willSave` before a needsSave activity leaves, `wasContinued`
/// after another device took it — and, for apps that serve them, requests for continuation streams.
///
/// An attachment ends when its activity stops being current, or when the app disconnects (which
/// withdraws the activity if the app asked for that).
package final class Attachments: Sendable {
    private struct Attachment {
        var activityID: UUID
        var serveStreams: Bool
        var resignOnDetach: Bool
        var continuation: AsyncStream<AttachEvent>.Continuation
    }

    private let state = Mutex<(attachments: [Int: Attachment], nextID: Int)>(([:], 0))
    private let events: EventHub

    package init(events: EventHub) {
        self.events = events
    }

    /// What an app leaving while its activity is still current means for the activity.
    package enum Departure: Sendable {
        /// It asked for the activity to go with it (`resignOnDetach`).
        case resign(UUID)
        /// It served the activity's streams, and no attached app does any more: the activity
        /// must stop offering them, or other devices would be promised streams nobody serves.
        case streamsGone(UUID)
    }

    /// Attaches to `request.activityID`, which the caller checked is current. `onDetach` runs when
    /// the app goes away while the activity is still its own, and that changes the activity.
    package func attach(_ request: AttachRequest, onDetach: @escaping @Sendable (Departure) -> Void) -> AsyncStream<AttachEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: AttachEvent.self, bufferingPolicy: .bufferingOldest(256))
        let attachment = Attachment(
            activityID: request.activityID, serveStreams: request.serveStreams, resignOnDetach: request.resignOnDetach, continuation: continuation
        )
        let id = state.withLock { s in
            defer { s.nextID += 1 }
            s.attachments[s.nextID] = attachment
            return s.nextID
        }
        continuation.yield(AttachEvent(at: .now(), .attached(activityID: request.activityID)))
        continuation.onTermination = { [weak self] _ in
            // Still registered means the app left (an ended activity removes it first).
            guard let (gone, othersServe) = self?.state.withLock({ s -> (Attachment, Bool)? in
                guard let gone = s.attachments.removeValue(forKey: id) else { return nil }
                return (gone, s.attachments.values.contains { $0.activityID == gone.activityID && $0.serveStreams })
            }) else { return }
            if gone.resignOnDetach {
                onDetach(.resign(gone.activityID))
            } else if gone.serveStreams, !othersServe {
                onDetach(.streamsGone(gone.activityID))
            }
        }
        return stream
    }

    /// How many apps are attached.
    package var count: Int { state.withLock { $0.attachments.count } }

    /// The current activity changed: attachments to any other one end.
    package func currentChanged(to current: UUID?, reason: String) {
        let ended = state.withLock { s -> [Attachment] in
            let gone = s.attachments.filter { $0.value.activityID != current }
            for key in gone.keys { s.attachments[key] = nil }
            return Array(gone.values)
        }
        for a in ended {
            a.continuation.yield(AttachEvent(at: .now(), .ended(activityID: a.activityID, reason: reason)))
            a.continuation.finish()
        }
    }

    /// Asks the apps attached to `activityID` to save; false when none is attached (no point waiting).
    package func willSave(_ activityID: UUID, peer: LocalEvent.PeerRef) -> Bool {
        events.publish(LocalEvent(at: .now(), .willSave(activityID: activityID, peer: peer)))
        return send(.willSave(activityID: activityID, peerID: peer.id, peerName: peer.name)) { $0.activityID == activityID } > 0
    }

    package func wasContinued(_ activityID: UUID, peer: LocalEvent.PeerRef) {
        events.publish(LocalEvent(at: .now(), .wasContinued(activityID: activityID, peer: peer)))
        _ = send(.wasContinued(activityID: activityID, peerID: peer.id, peerName: peer.name)) { $0.activityID == activityID }
    }

    /// Offers a stream to the newest attached app that serves them; false when there is none.
    package func requestStream(_ streamID: UUID, activityID: UUID, peer: LocalEvent.PeerRef) -> Bool {
        let target = state.withLock { s in
            s.attachments.filter { $0.value.activityID == activityID && $0.value.serveStreams }.max { $0.key < $1.key }?.value
        }
        guard let target else { return false }
        if case .enqueued = target.continuation.yield(AttachEvent(at: .now(), .streamRequested(streamID: streamID, peerID: peer.id, peerName: peer.name))) {
            return true
        }
        return false
    }

    func servesStreams(_ activityID: UUID) -> Bool {
        state.withLock { s in s.attachments.values.contains { $0.activityID == activityID && $0.serveStreams } }
    }

    private func send(_ body: AttachEvent.Body, to matching: (Attachment) -> Bool) -> Int {
        let targets = state.withLock { s in s.attachments.values.filter(matching) }
        let event = AttachEvent(at: .now(), body)
        for t in targets { t.continuation.yield(event) }
        return targets.count
    }

    /// Daemon shutdown.
    package func finishAll() {
        let all = state.withLock { s in
            defer { s.attachments.removeAll() }
            return Array(s.attachments.values)
        }
        all.forEach { $0.continuation.finish() }
    }
}
