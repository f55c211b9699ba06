/// The daemon (or one of its services) became ready, or failed before it could; anyone may wait.
package final class ReadinessSignal: Sendable {
    private let outcome = Once<Result<Void, DaemonError>>()

    package init() {}

    package func succeed() { outcome.settle(.success(())) }
    package func fail(_ error: DaemonError) { outcome.settle(.failure(error)) }
    /// Throws the failure, or `CancellationError` if the task is cancelled first.
    package func wait() async throws {
        guard let outcome = await outcome.valueUnlessCancelled() else { throw CancellationError() }
        try outcome.get()
    }
}
