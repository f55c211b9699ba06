import Synchronization

/// A value set once, awaited by anyone.
package final class Once<Value: Sendable>: Sendable {
    private let state = Mutex<(value: Value?, waiters: [CheckedContinuation<Value, Never>])>((nil, []))

    package init() {}

    package func settle(_ value: Value) {
        let waiters = state.withLock { s -> [CheckedContinuation<Value, Never>] in
            guard s.value == nil else { return [] }
            s.value = value
            defer { s.waiters = [] }
            return s.waiters
        }
        waiters.forEach { $0.resume(returning: value) }
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
