import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// What a listener hands over for each connection: at least the connection itself.
package protocol IncomingConnection: Sendable {
    var channel: any Channel { get }
}

/// Serving a listening socket so that nothing one connection does can stop it.
///
/// NIO ends an async server channel's stream of connections — and with it the service and the
/// daemon — when any error is fired through the server channel: a child channel option or child
/// initializer that fails does that (a `setsockopt` refused to a normal user ended handoffd on
/// every TCP connect), and accept(2) errors other than the few NIO backs off from (EMFILE, ENFILE,
/// ENOBUFS, ENOMEM, ECONNABORTED) close the listening socket. So:
/// - listeners set no child options and no child initializer: each connection is set up in the
///   bind's per-connection closure through `ConnectionSetup.guarded`, whose failure NIO drops;
/// - if the listening socket stops anyway, it is bound again after a pause (0.1 s doubling to
///   30 s while binding fails), while the connections it accepted carry on; only shutdown ends
///   the loop. (Most such stops are one connection's network error that accept(2) passed on —
///   Linux's accept(2) says to treat those like EAGAIN — so the first try comes at once.)
/// - a connection set up just as its listening socket stopped is one NIO will never hand over:
///   its `Intake` closes it, so that it holds neither a descriptor nor a peer waiting for ever.
package final class AcceptLoop<Accepted: IncomingConnection>: Sendable {
    package typealias Server = NIOAsyncChannel<Accepted, Never>

    /// A bound listening socket and the intake of its connections.
    package struct Bound: Sendable {
        package let server: Server
        let intake: Intake
    }

    private let what: String
    private let bindSocket: @Sendable (Intake) async throws -> Server
    private let logger: Logger
    private let state = Mutex<(current: (any Channel)?, stopping: Bool)>((nil, false))
    /// Settled when graceful shutdown begins: ends a pause before listening again. (Not
    /// `cancelWhenGracefulShutdown`: when its operation ends first, it cancels a waiter that
    /// starts a task of its own, outside the daemon's executor — docs/platform.md, "Waiting
    /// without waking".)
    private let shutdown = Once<Void>()

    /// `what` names the socket in logs ("peer port 0.0.0.0:47810"); `bind` makes a listening
    /// socket whose per-connection closure sets each connection up with `ConnectionSetup.guarded`
    /// and the intake it is given.
    package init(what: String, logger: Logger, bind: @escaping @Sendable (Intake) async throws -> Server) {
        self.what = what
        self.logger = logger
        self.bindSocket = bind
    }

    /// Binds a listening socket. The first one's failure is the caller's to report: a daemon
    /// that cannot listen at start says so and stops.
    package func bind() async throws -> Bound {
        let intake = Intake()
        return Bound(server: try await bindSocket(intake), intake: intake)
    }

    /// Serves `first` until graceful shutdown, each connection in a task of its own; then closes
    /// the listening socket and cancels the connections still served.
    package func run(_ first: Bound, serve: @escaping @Sendable (Accepted) async -> Void) async {
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { connections in
                var bound: Bound? = first
                var pause: Duration = .milliseconds(100)
                while true {
                    if let current = bound, adopt(current.server.channel) {
                        var failure: (any Error)?
                        do {
                            try await current.server.executeThenClose { inbound in
                                for try await connection in inbound {
                                    current.intake.delivered(connection.channel)
                                    connections.addTask { await serve(connection) }
                                }
                            }
                        } catch {
                            failure = error
                        }
                        current.intake.end()
                        if isStopping { break }
                        // NIO closes a listening socket on most accept(2) errors, without a word.
                        logger.error("stopped accepting connections", metadata: ["socket": "\(what)", "error": "\(failure.map { "\($0)" } ?? "closed")"])
                        pause = .milliseconds(100)
                    }
                    bound = nil
                    if isStopping { break }
                    logger.warning("listening again after a pause", metadata: ["socket": "\(what)", "pause": "\(pause)"])
                    let wait = pause
                    _ = await shutdown.value(within: wait)
                    if isStopping { break }
                    pause = min(pause * 2, .seconds(30))
                    do {
                        bound = try await bind()
                        logger.notice("listening again", metadata: ["socket": "\(what)"])
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
            self.shutdown.settle(())
        }
    }

    /// Graceful shutdown began, or the service was cancelled (another service of the group failed).
    private var isStopping: Bool { state.withLock { $0.stopping } || Task.isCancelled }

    /// Records the socket being served, unless shutdown began (then it is closed instead).
    private func adopt(_ channel: any Channel) -> Bool {
        let stopping = state.withLock { s -> Bool in
            if !s.stopping { s.current = channel }
            return s.stopping
        }
        if stopping { channel.close(promise: nil) }
        return !stopping
    }

    /// The connections of one listening socket between being set up and being handed over.
    package final class Intake: Sendable {
        private let state = Mutex<(ended: Bool, pending: [ObjectIdentifier: any Channel])>((false, [:]))

        /// A connection is being set up; false once the socket's stream of connections ended.
        fileprivate func begin(_ channel: any Channel) -> Bool {
            state.withLock { s in
                guard !s.ended else { return false }
                s.pending[ObjectIdentifier(channel)] = channel
                return true
            }
        }

        /// Its setup failed (it is being closed), or it was handed over.
        fileprivate func delivered(_ channel: any Channel) {
            _ = state.withLock { $0.pending.removeValue(forKey: ObjectIdentifier(channel)) }
        }

        /// The stream ended: what was set up and not handed over never will be.
        fileprivate func end() {
            let orphans = state.withLock { s -> [any Channel] in
                s.ended = true
                defer { s.pending = [:] }
                return Array(s.pending.values)
            }
            orphans.forEach { $0.close(promise: nil) }
        }
    }
}

/// Setting up a connection that was just accepted, inside a listener's per-connection closure.
package enum ConnectionSetup {
    /// Runs `setup`; if it fails, the failure is that connection's alone: logged once with the
    /// peer, the connection closed, and the failed future returned for NIO to drop. Nothing is
    /// fired through the listening socket (see `AcceptLoop`).
    package static func guarded<Accepted: IncomingConnection>(
        _ channel: any Channel, intake: AcceptLoop<Accepted>.Intake, peer: String, logger: Logger, notTaken: () -> Void = {},
        _ setup: () -> EventLoopFuture<Accepted>
    ) -> EventLoopFuture<Accepted> {
        guard intake.begin(channel) else {
            // The listening socket stopped: whatever the caller reserved for it is given back.
            notTaken()
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel)
        }
        return setup().flatMapErrorThrowing { error in
            intake.delivered(channel)
            logger.notice("dropped a connection that could not be set up", metadata: ["remote": "\(peer)", "error": "\(error)"])
            channel.close(promise: nil)
            throw error
        }
    }
}
