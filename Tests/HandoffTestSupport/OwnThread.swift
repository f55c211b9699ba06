import Foundation

/// Runs a blocking call (a socket read that may wait seconds) on a thread of its own: on the
/// cooperative pool — two threads on a two-core machine — it would stall every in-process daemon
/// and test meanwhile.
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
