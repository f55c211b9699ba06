import HandoffModel

/// The time of day for what runs out (invites), and waiting for it: injected, so that a test moves
/// the clock instead of sleeping (`ManualDaemonClock` in the tests' support).
package protocol DaemonClock: Sendable {
    func now() -> Timestamp
    /// Returns once `now()` has reached `deadline`; throws when the task is cancelled first.
    func sleep(until deadline: Timestamp) async throws
}

/// The system's clock.
package struct SystemDaemonClock: DaemonClock {
    package init() {}

    package func now() -> Timestamp { .now() }

    package func sleep(until deadline: Timestamp) async throws {
        try await Task.sleep(for: .microseconds(max(0, Timestamp.now().microseconds(until: deadline))))
    }
}
