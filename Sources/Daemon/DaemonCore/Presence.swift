import HandoffModel
import HandoffPeer
import Synchronization

/// What this device announces about itself: its current activity's summary and a sequence
/// number that grows with every change. The same numbering goes into the sealed advert (DNS-SD)
/// and the activity notices (sessions), so a peer can order whatever reaches it first.
package final class Presence: Sendable {
    private struct State {
        var sequence: UInt64
        var activity: ActivitySummary?
        /// Handoff is on (`DeviceSwitch`): off, the notice says there is no activity.
        var sharing = true

        var notice: ActivityNotice { ActivityNotice(sequence: sequence, activity: sharing ? activity : nil) }
    }

    private let state: Mutex<State>

    /// Starts from the clock, so numbers keep growing across restarts.
    package init(now: Timestamp = .now()) {
        state = Mutex(State(sequence: UInt64(max(0, now.microsecondsSinceEpoch)), activity: nil))
    }

    package var notice: ActivityNotice {
        state.withLock { $0.notice }
    }

    /// Whether the activity is told (handoff is on here).
    package var isSharing: Bool { state.withLock { $0.sharing } }

    /// Records a change and returns the notice announcing it.
    package func update(_ activity: Activity?) -> ActivityNotice {
        state.withLock { s in
            s.sequence += 1
            s.activity = activity.map(ActivitySummary.init)
            return s.notice
        }
    }

    /// Handoff was switched on or off here: the notice that says so (off: no activity).
    package func share(_ sharing: Bool) -> ActivityNotice {
        state.withLock { s in
            s.sequence += 1
            s.sharing = sharing
            return s.notice
        }
    }
}
