import DaemonCore
import HandoffModel

/// When to dial each device of the account that is seen but has no session (docs/discovery.md,
/// "First contact"):
/// - at start, at once where it was last reached (`DialMemory`), before discovery answers;
/// - at once when it is first seen, when its session ended, and whenever its advert is new to us
///   (it just started, came back on the link, or gained an address) — whatever failed before, it
///   is there now: a device that starts is reached in one connection, not after a backoff armed
///   while it was away;
/// - after a dial fails at every address, again 1 s later, doubling to a minute, while it stays
///   seen and nothing new is heard of it.
/// Both devices of a pair dial; `SessionSlots` keeps one session of two crossed dials.
///
/// A value, as `SessionSlots` is: `MemberSessions` (DaemonSessions) tells it what happened and does
/// what it answers (wait, then dial if the wait's ticket is still the current one).
package struct DialPlan {
    package enum Action: Equatable {
        case none
        /// Wait `after`, then dial if `due(_:ticket:)` still says so.
        case dial(after: Duration, ticket: Int)
    }

    private enum Phase: Equatable {
        case idle
        case waiting
        /// `again`: something new was heard during the dial; if it fails, dial again at once.
        case dialling(again: Bool)
    }

    private struct Entry {
        var backoff: Duration?
        var ticket = 0
        var phase = Phase.idle
    }

    /// Tickets are numbered across the plan, never per device: a wait armed before a session came
    /// and went must not match the ticket of a wait armed after (`connected` forgets the entry).
    private var lastTicket = 0

    package static let firstRetry: Duration = .seconds(1)
    package static let longestRetry: Duration = .seconds(60)

    private var entries: [DeviceID: Entry] = [:]

    package init() {}

    /// A session with `id` is wanted (it was seen, or its session ended). `fresh`: its advert is
    /// new to us, which cancels the backoff.
    package mutating func want(_ id: DeviceID, fresh: Bool) -> Action {
        var e = entries[id] ?? Entry()
        defer { entries[id] = e }
        if fresh { e.backoff = nil }
        switch e.phase {
        case .dialling:
            if fresh { e.phase = .dialling(again: true) }
            return .none
        case .waiting where !fresh:
            return .none
        case .idle, .waiting:
            // A fresh sighting replaces a backoff wait under way: its ticket goes stale.
            lastTicket += 1
            e.ticket = lastTicket
            e.phase = .waiting
            return .dial(after: e.backoff ?? .zero, ticket: e.ticket)
        }
    }

    /// A wait ended: whether to dial now (false: a later `want` replaced it, or a session came).
    package mutating func due(_ id: DeviceID, ticket: Int) -> Bool {
        guard var e = entries[id], e.ticket == ticket, e.phase == .waiting else { return false }
        e.phase = .dialling(again: false)
        entries[id] = e
        return true
    }

    /// The dial was not made after all (the device is no longer seen, or has a session).
    package mutating func skipped(_ id: DeviceID) {
        entries[id]?.phase = .idle
    }

    /// A session with `id` is up, however it came: nothing to wait for.
    package mutating func connected(_ id: DeviceID) {
        entries[id] = nil
    }

    /// The dial failed at every address. The next `want` waits the backoff, unless something
    /// new was heard of the device while it dialled.
    package mutating func failed(_ id: DeviceID) {
        // Only the dial under way can fail: after `connected` there is nothing to back off from.
        guard var e = entries[id], case .dialling = e.phase else { return }
        if e.phase != .dialling(again: true) {
            e.backoff = min(e.backoff.map { $0 * 2 } ?? Self.firstRetry, Self.longestRetry)
        }
        e.phase = .idle
        entries[id] = e
    }
}
