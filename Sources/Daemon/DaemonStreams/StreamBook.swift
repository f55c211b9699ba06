#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonCore
import HandoffAPI
import HandoffModel
import Synchronization

/// What this device remembers about continuations and their streams, from both ends:
///
/// - resuming: each continuation (which device, which activity, where to reach it), so that its
///   app can open streams with the continuation id;
/// - originating: which device continued which activity (only those may ask for its streams), and
///   the streams asked for that wait for the originating app to take them;
/// - every stream's state and byte counts, so that an app whose byte pipe ended can ask whether it
///   got everything.
///
/// Kept in memory only: a restart of handoffd ends every stream anyway.
package final class StreamBook: Sendable {
    package struct Continuation: Sendable {
        var id: UUID
        var peer: LocalEvent.PeerRef
        var activityID: UUID
        var supportsStreams: Bool
        /// The address `continue` was given, if it was given one (else the directory's).
        var address: PeerAddress?
        /// Settled once the other device was told its activity was continued (`activityContinued`,
        /// sent after the local caller has its answer): a stream is asked for only after that,
        /// so that the originating app hears `wasContinued` before the stream it serves.
        var originTold: Once<Void>?

        package init(id: UUID, peer: LocalEvent.PeerRef, activityID: UUID, supportsStreams: Bool, address: PeerAddress?, originTold: Once<Void>? = nil) {
            self.id = id
            self.peer = peer
            self.activityID = activityID
            self.supportsStreams = supportsStreams
            self.address = address
            self.originTold = originTold
        }
    }

    /// A stream asked for by another device, waiting for the originating app.
    struct Offer: Sendable {
        var record: StreamRecord
        var connection: StreamConnection
        /// Settled true when the app takes the stream, false when the wait for it ends.
        var taken: Once<Bool>
    }

    private struct State {
        var continuations: [UUID: Continuation] = [:]
        var continuationOrder: [UUID] = []
        var grants: Set<Grant> = []
        var records: [UUID: StreamRecord] = [:]
        var recordOrder: [UUID] = []
        var offers: [UUID: Offer] = [:]
    }

    private struct Grant: Hashable {
        var peer: DeviceID
        var activityID: UUID
    }

    static let rememberedContinuations = 256
    static let rememberedStreams = 256

    private let state = Mutex(State())
    private let events: EventHub

    package init(events: EventHub) {
        self.events = events
    }

    // MARK: Resuming side

    package func record(_ continuation: Continuation) {
        state.withLock { s in
            s.continuations[continuation.id] = continuation
            s.continuationOrder.append(continuation.id)
            while s.continuationOrder.count > StreamBook.rememberedContinuations {
                s.continuations[s.continuationOrder.removeFirst()] = nil
            }
        }
    }

    func continuation(_ id: UUID) -> Continuation? {
        state.withLock { $0.continuations[id] }
    }

    // MARK: Originating side

    /// `peer` received `activityID`: it may ask for that activity's streams.
    package func grant(_ peer: DeviceID, activityID: UUID) {
        _ = state.withLock { $0.grants.insert(Grant(peer: peer, activityID: activityID)) }
    }

    func isGranted(_ peer: DeviceID, activityID: UUID) -> Bool {
        state.withLock { $0.grants.contains(Grant(peer: peer, activityID: activityID)) }
    }

    /// Forgets grants for activities other than `current` (they can no longer be streamed from).
    package func keepGrants(for current: UUID?) {
        state.withLock { s in s.grants = s.grants.filter { $0.activityID == current } }
    }

    func offer(_ offer: Offer) {
        state.withLock { $0.offers[offer.record.id] = offer }
    }

    /// Takes a waiting offer (the originating app came for it); nil if there is none (any more).
    func claim(_ streamID: UUID) -> Offer? {
        state.withLock { $0.offers.removeValue(forKey: streamID) }
    }

    // MARK: Streams

    func register(_ record: StreamRecord) {
        state.withLock { s in
            s.records[record.id] = record
            s.recordOrder.append(record.id)
            // Forget the oldest finished streams beyond the limit; open ones stay.
            var index = 0
            while s.recordOrder.count > StreamBook.rememberedStreams, index < s.recordOrder.count {
                let id = s.recordOrder[index]
                if s.records[id]?.info.state.isFinal ?? true {
                    s.records[id] = nil
                    s.recordOrder.remove(at: index)
                } else {
                    index += 1
                }
            }
        }
    }

    package func stream(_ id: UUID) -> StreamRecord? {
        state.withLock { $0.records[id] }
    }

    package var streams: [StreamInfo] {
        let records = state.withLock { s in s.recordOrder.compactMap { s.records[$0] } }
        return records.map(\.info)
    }

    func makeRecord(id: UUID, role: StreamInfo.Role, peer: LocalEvent.PeerRef, activityID: UUID, continuationID: UUID?) -> StreamRecord {
        let record = StreamRecord(
            StreamInfo(
                id: id, role: role, state: role == .originating ? .pending : .open, peerID: peer.id, peerName: peer.name,
                activityID: activityID, continuationID: continuationID, openedAt: .now()
            ),
            events: events
        )
        register(record)
        return record
    }
}

/// One stream's live state: byte counts kept by the glue as data flows, and an outcome set once.
/// Readers can wait for the outcome.
package final class StreamRecord: Sendable {
    private struct State {
        var info: StreamInfo
    }

    package let id: UUID
    private let state: Mutex<State>
    /// Set with the outcome.
    private let outcome = Once<Void>()
    private let events: EventHub

    init(_ info: StreamInfo, events: EventHub) {
        self.id = info.id
        self.state = Mutex(State(info: info))
        self.events = events
    }

    package var info: StreamInfo { state.withLock { $0.info } }

    func opened() {
        let info = state.withLock { s -> StreamInfo? in
            guard s.info.state == .pending else { return nil }
            s.info.state = .open
            return s.info
        }
        if let info { events.publish(LocalEvent(at: .now(), .streamChanged(info))) }
    }

    /// The originating side will send `bytes` (a file's size).
    func expect(_ bytes: Int64) {
        state.withLock { $0.info.expectedBytes = bytes }
    }

    func sent(_ count: Int) {
        state.withLock { $0.info.bytesSent += Int64(count) }
    }

    /// Counts `count` more bytes from the other device; returns how many came so far.
    @discardableResult
    func received(_ count: Int) -> Int64 {
        state.withLock {
            $0.info.bytesReceived += Int64(count)
            return $0.info.bytesReceived
        }
    }

    /// Both directions ended in order.
    func complete() {
        finish(.completed, error: nil)
    }

    func fail(_ reason: String) {
        finish(.failed, error: reason)
    }

    /// The first outcome stands: a stream that failed does not later complete, nor the reverse.
    private func finish(_ final: StreamInfo.State, error: String?) {
        let info = state.withLock { s -> StreamInfo? in
            guard !s.info.state.isFinal else { return nil }
            s.info.state = final
            s.info.error = error
            s.info.endedAt = .now()
            return s.info
        }
        guard let info else { return }
        outcome.settle(())
        events.publish(LocalEvent(at: .now(), .streamChanged(info)))
    }

    /// The final state, however long the stream runs (the connection's own liveness ends a stream
    /// whose device went away); the state so far if the task is cancelled.
    package func final() async -> StreamInfo {
        _ = await outcome.valueUnlessCancelled()
        return info
    }

    /// The final state, or the state at `timeout` if it is not final by then.
    package func final(within timeout: Duration) async -> StreamInfo {
        _ = await outcome.value(within: timeout)
        return info
    }
}
