import Foundation
import HandoffSystem
import Testing

/// `QuietSleep`: a wait wakes at its deadline and ends at once when its task is cancelled (before
/// or during the wait). That it does not wake the process while it waits — the reason it exists —
/// is checked on real daemons (`IdleTests`): this test process has other tests' timers running.
/// A wait that never woke would hang its test: the suite's time limit catches that, so no test
/// here bounds how long a wait took (the machine may be busy).
@Suite(.timeLimit(.minutes(1))) struct QuietSleepTests {
    @Test func wakesAtTheDeadlineNotBefore() async throws {
        let deadline = ContinuousClock.now + .milliseconds(50)
        try await QuietSleep.sleep(for: .milliseconds(50))
        #expect(ContinuousClock.now >= deadline)
    }

    @Test func wakesAtATimeOfDay() async throws {
        let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
        try await QuietSleep.sleep(untilWallClock: now + 50_000)
        #expect(Int64(Date().timeIntervalSince1970 * 1_000_000) >= now + 50_000)
        try await QuietSleep.sleep(untilWallClock: now - 3_600_000_000)  // passed: at once
        try await QuietSleep.sleep(untilWallClock: 0)
    }

    /// An hour's wait ends with the cancellation (the test would hang otherwise).
    @Test func cancellingEndsTheWaitAtOnce() async {
        let wait = Task { try await QuietSleep.sleep(for: .seconds(3600)) }
        try? await Task.sleep(for: .milliseconds(20))
        wait.cancel()
        let result = await wait.result
        #expect(throws: CancellationError.self) { try result.get() }
    }

    @Test func aCancelledTaskDoesNotWait() async {
        let wait = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await QuietSleep.sleep(for: .seconds(3600))
        }
        await #expect(throws: CancellationError.self) { try await wait.value }
    }

    @Test func manyWaitsEndTogether() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<200 { group.addTask { try await QuietSleep.sleep(for: .milliseconds(i % 20)) } }
            try await group.waitForAll()
        }
    }
}
