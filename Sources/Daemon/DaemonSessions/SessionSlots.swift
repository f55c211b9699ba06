import DaemonCore
import HandoffModel

/// At most one session per device, and which one stays when both devices dial each other at
/// once (crossed dials): the one dialled by the device with the smaller id. Both devices decide
/// the same way from the same two ids, so they keep the same connection and close the same one.
///
/// A value, as `TXTThrottle` is: `MemberSessions` holds one, tells it what happened, and does what
/// it answers (close the session it names). Generic over the session so tables can test it.
struct SessionSlots<Session: AnyObject> {
    /// The session kept with each device.
    private(set) var sessions: [DeviceID: Session] = [:]
    /// Whether we dialled it.
    private var dialledByUs: [DeviceID: Bool] = [:]

    /// What to do with a session that just came up.
    enum Verdict {
        /// Keep it; it is the only one.
        case keep
        /// Keep it, and close the one it replaces.
        case keepClosing(Session)
        /// Close it: the other connection wins the tie.
        case refuse
    }

    /// Whether the connection this device dials is the one kept of two crossed dials: the smaller
    /// id's (`me` nil: no identity yet, so ours).
    static func wePreferToDial(me: DeviceID?, peer: DeviceID) -> Bool {
        me.map { $0 < peer } ?? true
    }

    /// A session with `peer` came up. Of two crossed sessions (one dialled by each side), the one
    /// the smaller id dialled stays; a second session of the same kind (a reconnect) replaces the
    /// first, which is stale.
    mutating func up(_ session: Session, peer: DeviceID, dialledByUs: Bool, me: DeviceID?) -> Verdict {
        guard let existing = sessions[peer], let existingDialledByUs = self.dialledByUs[peer] else {
            (sessions[peer], self.dialledByUs[peer]) = (session, dialledByUs)
            return .keep
        }
        let crossed = existingDialledByUs != dialledByUs
        if crossed, existingDialledByUs == Self.wePreferToDial(me: me, peer: peer) { return .refuse }
        (sessions[peer], self.dialledByUs[peer]) = (session, dialledByUs)
        return .keepClosing(existing)
    }

    /// A session ended: its slot is freed unless another session already took it.
    mutating func down(_ session: Session, peer: DeviceID) {
        if sessions[peer] === session { (sessions[peer], dialledByUs[peer]) = (nil, nil) }
    }

    /// Frees the slot of `peer` (removed from the account), returning its session to close.
    mutating func remove(_ peer: DeviceID) -> Session? {
        dialledByUs[peer] = nil
        return sessions.removeValue(forKey: peer)
    }

    /// Frees every slot, returning the sessions to close.
    mutating func removeAll() -> [Session] {
        defer { (sessions, dialledByUs) = ([:], [:]) }
        return Array(sessions.values)
    }
}
