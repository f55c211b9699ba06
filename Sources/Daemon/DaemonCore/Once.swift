import HandoffSystem
import Synchronization

/// A value set once, awaited by anyone.
package final class Once<Value: Sendable>: Sendable {
    private struct State {
        var value: Value?
        var waiters: [CheckedContinuation<Value, Never>] = []
        /// Those that stop waiting when their task is cancelled (`value(within:)`).
        var leavers: [Int: CheckedContinuation<Value?, Never>] = [:]
        var nextLeaver = 0
    }

    private let state = Mutex(State())

    package init() {}

    package func settle(_ value: Value) {
        let (waiters, leavers) = state.withLock { s -> ([CheckedContinuation<Value, Never>], [CheckedContinuation<Value?, Never>]) in
            guard s.value == nil else { return ([], []) }
            s.value = value
            defer { (s.waiters, s.leavers) = ([], [:]) }
            return (s.waiters, Array(s.leavers.values))
        }
        waiters.forEach { $0.resume(returning: value) }
        leavers.forEach { $0.resume(returning: value) }
    }

    /// The value if it is set, without waiting.
    package var settled: Value? { state.withLock { $0.value } }

    /// How many wait for the value now.
    package var waiting: Int { state.withLock { $0.waiters.count + $0.leavers.count } }

    /// The value, or nil if it is not set within `timeout`. The wait races a sleep in a task
    /// group (nothing outlives the call), and ends early, with nil, if the task is cancelled.
    package func value(within timeout: Duration) async -> Value? {
        if let value = state.withLock({ $0.value }) { return value }
        return await withTaskGroup(of: Value?.self) { group in
            group.addTask { await self.valueUnlessCancelled() }
            group.addTask {
                try? await QuietSleep.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            return await group.next() ?? nil
        }
    }

    /// The value, or nil once the task is cancelled (whichever comes first).
    package func valueUnlessCancelled() async -> Value? {
        let id = state.withLock { s in
            defer { s.nextLeaver += 1 }
            return s.nextLeaver
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Value?, Never>) in
                let ready = state.withLock { s -> (Value?, Bool) in
                    if let value = s.value { return (value, true) }
                    if Task.isCancelled { return (nil, true) }
                    s.leavers[id] = c
                    return (nil, false)
                }
                if ready.1 { c.resume(returning: ready.0) }
            }
        } onCancel: {
            state.withLock { $0.leavers.removeValue(forKey: id) }?.resume(returning: nil)
        }
    }

    package var value: Value {
        get async {
            await withCheckedContinuation { c in
                let ready = state.withLock { s -> Value? in
                    if s.value == nil { s.waiters.append(c) }
                    return s.value
                }
                if let ready { c.resume(returning: ready) }
            }
        }
    }
}
