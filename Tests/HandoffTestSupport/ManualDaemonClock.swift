import DaemonCore
import HandoffModel
import Synchronization

/// A clock that moves only when a test says so (`advance`), for what runs out and for rate
/// limits — so a test watches an invite expire or a penalty end without waiting for it. Its
/// monotonic time moves with its time of day.
public final class ManualDaemonClock: DaemonClock {
    private struct State {
        var now: Timestamp
        var instant: ContinuousClock.Instant = .now
        var sleepers: [Int: (deadline: Timestamp, wake: CheckedContinuation<Void, any Error>)] = [:]
        var nextSleeper = 0
    }

    private let state: Mutex<State>

    public init(startingAt start: Timestamp = .now()) {
        state = Mutex(State(now: start))
    }

    public func now() -> Timestamp { state.withLock { $0.now } }

    public func instant() -> ContinuousClock.Instant { state.withLock { $0.instant } }

    /// Until the clock has been moved on by `duration`.
    public func sleep(for duration: Duration) async throws {
        let (seconds, attoseconds) = duration.components
        let deadline = Timestamp(microsecondsSinceEpoch: now().microsecondsSinceEpoch + seconds * 1_000_000 + attoseconds / 1_000_000_000_000)
        try await sleep(until: deadline)
    }

    /// Moves the clock on, waking every sleeper whose deadline it reaches.
    public func advance(seconds: Int64) {
        let due = state.withLock { s -> [CheckedContinuation<Void, any Error>] in
            s.now = s.now.adding(seconds: seconds)
            s.instant = s.instant.advanced(by: .seconds(seconds))
            let now = s.now
            let due = s.sleepers.filter { $0.value.deadline <= now }
            for id in due.keys { s.sleepers[id] = nil }
            return due.values.map(\.wake)
        }
        due.forEach { $0.resume() }
    }

    public func sleep(until deadline: Timestamp) async throws {
        let id = state.withLock { s -> Int in
            s.nextSleeper += 1
            return s.nextSleeper
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (wake: CheckedContinuation<Void, any Error>) in
                let ready = state.withLock { s -> Bool in
                    if s.now >= deadline || Task.isCancelled { return true }
                    s.sleepers[id] = (deadline, wake)
                    return false
                }
                if ready { wake.resume() }
            }
            try Task.checkCancellation()
        } onCancel: {
            state.withLock { $0.sleepers.removeValue(forKey: id) }?.wake.resume(throwing: CancellationError())
        }
    }
}
