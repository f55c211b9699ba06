import DaemonCore
import ServiceLifecycle
import UnixSignals

/// SIGHUP reads the configuration again (`handoffd` says what that means), for as long as the
/// daemon runs: one service in the daemon's group, on swift-service-lifecycle's own signal
/// sequence, rather than a signal source of our own.
struct HangupService: Service {
    let reload: @Sendable () -> Void
    /// Settled once SIGHUP is trapped: the daemon is not ready before (a reload sent earlier would
    /// be lost, `handoffd` ignoring the signal until then).
    let trapping = ReadinessSignal()

    func run() async throws {
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        trapping.succeed()
        // (Not `cancelOnGracefulShutdown()`: its merge runs in a task of its own, outside the
        // daemon's executor — docs/platform.md, "Waiting without waking".)
        await cancelWhenGracefulShutdown { [reload] in
            for await _ in hangups { reload() }
        }
    }
}
