import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// Serving a listening socket so that nothing one connection does can stop it.
///
/// NIO ends an async server channel's stream of connections — and with it the service and the
/// daemon — when any error is fired through the server channel: a child channel option or child
/// initializer that fails does that (a `setsockopt` refused to a normal user ended handoffd on
/// every TCP connect), and accept(2) errors other than the few NIO backs off from (EMFILE, ENFILE,
/// ENOBUFS, ENOMEM, ECONNABORTED) close the listening socket. So:
/// - listeners set no child options and no child initializer: each connection is set up in the
///   bind's per-connection closure through `ConnectionSetup.guarded`, whose failure NIO drops;
/// - if the listening socket stops anyway, it is bound again after a pause (0.5 s doubling to
///   30 s), while the connections it accepted carry on; only shutdown ends the loop.
final class AcceptLoop<Accepted: Sendable>: Sendable {
    typealias Server = NIOAsyncChannel<Accepted, Never>

    private let what: String
    private let rebind: @Sendable () async throws -> Server
    private let logger: Logger
    private let state = Mutex<(current: (any Channel)?, stopping: Bool)>((nil, false))

    /// `what` names the socket in logs ("peer port 0.0.0.0:47810"); `rebind` makes a new
    /// listening socket like the first.
    init(what: String, logger: Logger, rebind: @escaping @Sendable () async throws -> Server) {
        self.what = what
        self.logger = logger
        self.rebind = rebind
    }

    /// Serves `first` (already bound) until graceful shutdown, each connection in a task of its
    /// own; then closes the listening socket and cancels the connections still served.
    func run(_ first: Server, serve: @escaping @Sendable (Accepted) async -> Void) async {
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { connections in
                var server: Server? = first
                var pause: Duration = .milliseconds(500)
                while true {
                    if let current = server, adopt(current.channel) {
                        do {
                            try await current.executeThenClose { inbound in
                                for try await connection in inbound {
                                    connections.addTask { await serve(connection) }
                                }
                            }
                        } catch {
                            logger.error("stopped accepting connections", metadata: ["socket": "\(what)", "error": "\(error)"])
                        }
                        pause = .milliseconds(500)
                    }
                    server = nil
                    if isStopping { break }
                    logger.warning("listening again after a pause", metadata: ["socket": "\(what)", "pause": "\(pause)"])
                    let wait = pause
                    try? await cancelWhenGracefulShutdown { try await Task.sleep(for: wait) }
                    if isStopping { break }
                    pause = min(pause * 2, .seconds(30))
                    do {
                        server = try await rebind()
                    } catch {
                        logger.error("cannot listen again yet", metadata: ["socket": "\(what)", "error": "\(error)"])
                    }
                }
                connections.cancelAll()
            }
        } onGracefulShutdown: {
            // Closing the listening socket ends its stream of connections after it has handed
            // over what it holds (a connection dropped from it would never be closed).
            let current = self.state.withLock { s -> (any Channel)? in
                s.stopping = true
                return s.current
            }
            current?.close(promise: nil)
        }
    }

    private var isStopping: Bool { state.withLock { $0.stopping } }

    /// Records the socket being served, unless shutdown began (then it is closed instead).
    private func adopt(_ channel: any Channel) -> Bool {
        let stopping = state.withLock { s -> Bool in
            if !s.stopping { s.current = channel }
            return s.stopping
        }
        if stopping { channel.close(promise: nil) }
        return !stopping
    }
}

/// Setting up a connection that was just accepted, inside a listener's per-connection closure.
enum ConnectionSetup {
    /// Runs `setup`; if it fails, the failure is that connection's alone: logged once with the
    /// peer, the connection closed, and the failed future returned for NIO to drop. Nothing is
    /// fired through the listening socket (see `AcceptLoop`).
    static func guarded<T>(
        _ channel: any Channel, peer: String, logger: Logger, _ setup: () -> EventLoopFuture<T>
    ) -> EventLoopFuture<T> {
        setup().flatMapErrorThrowing { error in
            logger.notice("dropped a connection that could not be set up", metadata: ["remote": "\(peer)", "error": "\(error)"])
            channel.close(promise: nil)
            throw error
        }
    }
}
