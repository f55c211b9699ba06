import ServiceLifecycle
import UnixSignals

/// SIGHUP reads the configuration again (`handoffd` says what that means), for as long as the
/// daemon runs: one service in the daemon's group, on swift-service-lifecycle's own signal
/// sequence, rather than a signal source of our own.
struct HangupService: Service {
    let reload: @Sendable () -> Void

    func run() async throws {
        for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
            reload()
        }
    }
}
