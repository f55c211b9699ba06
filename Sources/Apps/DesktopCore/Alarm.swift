import HandoffModel
import HandoffSystem
import Synchronization

/// One wall-clock deadline that can be moved at any time, and a loop that calls back when it
/// passes: the planner's next spacing or expiry. Nothing wakes while no deadline is set.
package final class Alarm: Sendable {
    private struct State {
        var deadline: Timestamp?
        var generation = 0
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    package init() {}

    /// Moves the deadline (nil: none).
    package func set(_ deadline: Timestamp?) {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard s.deadline != deadline else { return nil }
            s.deadline = deadline
            s.generation += 1
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume()
    }

    /// Calls `fire` each time the deadline passes (then the deadline is cleared), until cancelled.
    package func run(fire: @escaping @Sendable () -> Void) async {
        while !Task.isCancelled {
            let (deadline, generation) = state.withLock { ($0.deadline, $0.generation) }
            let fired = await withTaskGroup(of: Bool.self) { race in
                if let deadline {
                    race.addTask { (try? await QuietSleep.sleep(untilWallClock: deadline.microsecondsSinceEpoch)) != nil }
                }
                race.addTask {
                    await self.change(after: generation)
                    return false
                }
                let first = await race.next() ?? false
                race.cancelAll()
                return first
            }
            if fired {
                let still = state.withLock { s -> Bool in
                    guard s.generation == generation else { return false }
                    s.deadline = nil
                    return true
                }
                if still { fire() }
            }
        }
    }

    /// Returns once the deadline changed from `generation`, or the task is cancelled.
    private func change(after generation: Int) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.generation != generation || Task.isCancelled { return true }
                    s.waiter = waiter
                    return false
                }
                if now { waiter.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?.resume()
        }
    }
}
