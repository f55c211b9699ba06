import DaemonCore
import HandoffModel

/// At most one session per device, and which one stays when both devices dial each other at
/// once (crossed dials): the one dialled by the device with the smaller id. Both devices decide
/// the same way from the same two ids, so they keep the same connection and close the same one.
///
/// A value, as `TXTThrottle` is: `MemberLinks` holds one, tells it what happened, and does what
/// it answers (close the session it names). Generic over the session so tables can test it.
struct SessionSlots<Session: AnyObject> {
    struct Slot {
        let session: Session
        let dialledByUs: Bool
    }

    private(set) var slots: [DeviceID: Slot] = [:]

    /// What to do with a session that just came up.
    enum Verdict {
        /// Keep it; it is the only one.
        case keep
        /// Keep it, and close the one it replaces.
        case keepClosing(Session)
        /// Close it: the other connection wins the tie.
        case refuse
    }

    /// Whether the device that dials is this one: the smaller id dials (`me` nil: no identity
    /// yet, so ours).
    static func wePreferToDial(me: DeviceID?, peer: DeviceID) -> Bool {
        me.map { $0 < peer } ?? true
    }

    /// How long to wait before dialling `peer` when it is first seen: the device that should dial
    /// does at once; the other gives it a moment, then dials itself (in case only it can reach).
    static func firstDialDelay(me: DeviceID, peer: DeviceID) -> Duration {
        wePreferToDial(me: me, peer: peer) ? .zero : .seconds(3)
    }

    /// A session with `peer` came up. Of two crossed sessions (one dialled by each side), the one
    /// the smaller id dialled stays; a second session of the same kind (a reconnect) replaces the
    /// first, which is stale.
    mutating func up(_ session: Session, peer: DeviceID, dialledByUs: Bool, me: DeviceID?) -> Verdict {
        let slot = Slot(session: session, dialledByUs: dialledByUs)
        guard let existing = slots[peer] else {
            slots[peer] = slot
            return .keep
        }
        let crossed = existing.dialledByUs != dialledByUs
        if crossed, existing.dialledByUs == Self.wePreferToDial(me: me, peer: peer) { return .refuse }
        slots[peer] = slot
        return .keepClosing(existing.session)
    }

    /// A session ended: its slot is freed unless another session already took it.
    mutating func down(_ session: Session, peer: DeviceID) {
        if slots[peer]?.session === session { slots[peer] = nil }
    }

    /// Frees the slot of `peer` (removed from the account), returning its session to close.
    mutating func remove(_ peer: DeviceID) -> Session? {
        slots.removeValue(forKey: peer)?.session
    }

    /// Frees every slot, returning the sessions to close.
    mutating func removeAll() -> [Session] {
        defer { slots = [:] }
        return slots.values.map(\.session)
    }
}
