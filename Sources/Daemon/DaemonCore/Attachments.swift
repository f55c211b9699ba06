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
        /// Hands the app an event; false when it could not take it (it left, or is too far behind).
        var deliver: @Sendable (AttachEvent) -> Bool
        var finish: @Sendable () -> Void
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
        let id = add(
            Attachment(
                activityID: request.activityID, serveStreams: request.serveStreams, resignOnDetach: request.resignOnDetach,
                deliver: { if case .enqueued = continuation.yield($0) { true } else { false } }, finish: { continuation.finish() }
            )
        )
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

    /// Attaches a registered app's window to its activity, which the caller made current
    /// (docs/apps.md): `deliver` gets what an attached app would, and it serves the activity's
    /// streams when the activity offers them. It ends like any attachment when the activity stops
    /// being current, or with `detach` (the window's app did not hold it after all, or its
    /// activity changed whether it offers streams).
    package func attachWindow(activityID: UUID, serveStreams: Bool, deliver: @escaping @Sendable (AttachEvent.Body) -> Bool) -> Int {
        add(Attachment(activityID: activityID, serveStreams: serveStreams, resignOnDetach: false, deliver: { deliver($0.body) }, finish: {}))
    }

    package func detach(_ id: Int) {
        state.withLock { s in s.attachments[id] = nil }
    }

    private func add(_ attachment: Attachment) -> Int {
        state.withLock { s in
            defer { s.nextID += 1 }
            s.attachments[s.nextID] = attachment
            return s.nextID
        }
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
            _ = a.deliver(AttachEvent(at: .now(), .ended(activityID: a.activityID, reason: reason)))
            a.finish()
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
        return target.deliver(AttachEvent(at: .now(), .streamRequested(streamID: streamID, peerID: peer.id, peerName: peer.name)))
    }

    func servesStreams(_ activityID: UUID) -> Bool {
        state.withLock { s in s.attachments.values.contains { $0.activityID == activityID && $0.serveStreams } }
    }

    /// How many of the matching apps took the event.
    private func send(_ body: AttachEvent.Body, to matching: (Attachment) -> Bool) -> Int {
        let targets = state.withLock { s in s.attachments.values.filter(matching) }
        let event = AttachEvent(at: .now(), body)
        return targets.count { $0.deliver(event) }
    }

    /// Daemon shutdown.
    package func finishAll() {
        let all = state.withLock { s in
            defer { s.attachments.removeAll() }
            return Array(s.attachments.values)
        }
        all.forEach { $0.finish() }
    }
}
