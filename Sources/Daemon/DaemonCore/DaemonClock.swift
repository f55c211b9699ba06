import HandoffModel
import HandoffSystem

/// The time of day for what runs out (invites, activities), waiting for it, the monotonic time
/// rate limits are measured in, and the waits between tries (dial backoff): injected, so that a
/// test moves the clock instead of sleeping (`ManualDaemonClock` in the tests' support).
package protocol DaemonClock: Sendable {
    func now() -> Timestamp
    /// Returns once `now()` has reached `deadline`; throws when the task is cancelled first.
    func sleep(until deadline: Timestamp) async throws
    /// For how long things took (penalties, budgets): never jumps with the time of day.
    func instant() -> ContinuousClock.Instant
    /// Waits `duration` (a backoff); throws when the task is cancelled first.
    func sleep(for duration: Duration) async throws
}

/// The system's clock.
package struct SystemDaemonClock: DaemonClock {
    package init() {}

    package func now() -> Timestamp { .now() }

    package func instant() -> ContinuousClock.Instant { .now }

    package func sleep(for duration: Duration) async throws {
        try await QuietSleep.sleep(for: duration)
    }

    package func sleep(until deadline: Timestamp) async throws {
        try await QuietSleep.sleep(untilWallClock: deadline.microsecondsSinceEpoch)
    }
}
