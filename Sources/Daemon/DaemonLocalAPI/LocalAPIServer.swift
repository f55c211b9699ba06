#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonCore
import DaemonStreams
import HandoffAPI
import HandoffSystem
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The local API (docs/local-api.md): HTTP/1.1 on a Unix socket only its owner can reach.
///
/// Transport only: it binds the socket (0600, in a 0700 directory), learns each connection's
/// peer credentials, reads requests with size limits, and writes responses. What a request means
/// is `LocalAPIRouter`'s business.
package final class LocalAPIServer: Service {
    typealias HTTPChannel = NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>

    /// What a connection became after its first request head: HTTP (perhaps answering a refused
    /// upgrade first), or a continuation stream's byte pipe.
    enum Negotiated: Sendable {
        case http(HTTPChannel, refusedUpgrade: LocalAPIError?)
        case stream
    }

    /// A connection to serve — or one turned away (too many open), which only its handler
    /// (`TooManyConnections`) answers and closes: NIO registers a connection only once it is
    /// handed over, so it cannot just be dropped.
    struct Connection: IncomingConnection {
        let channel: any Channel
        let served: Served?

        struct Served: Sendable {
            let peer: PeerCredentials
            let negotiated: EventLoopFuture<Negotiated>
            let upgrader: StreamUpgrader
            let deadline: RequestDeadline
        }
    }

    private let socketPath: String
    private let router: LocalAPIRouter
    private let maximumRequestBody: Int
    private let logger: Logger
    private let ready: ReadinessSignal
    /// `Deadlines.localRequest` and `.fileRequest`.
    private let deadlines: Deadlines
    /// The open connections, at most `maximumConnections`.
    private let connections: LocalConnections

    /// How many local connections may be open at once (`LocalConnectionBudget`): far more than
    /// a desktop's apps, agents and commands hold, and ~13 KB each.
    package static let maximumConnections = 512

    /// `burstEnded`: what gives the memory of a burst of connections back (malloc_trim).
    package init(
        socketPath: String, router: LocalAPIRouter, maximumRequestBody: Int, deadlines: Deadlines, maximumConnections: Int = LocalAPIServer.maximumConnections,
        burstEnded: (@Sendable () -> Void)? = nil, logger: Logger, ready: ReadinessSignal
    ) {
        self.deadlines = deadlines
        self.connections = LocalConnections(maximum: maximumConnections, burstEnded: burstEnded ?? LocalConnections.releaseMemory)
        self.socketPath = socketPath
        self.router = router
        self.maximumRequestBody = maximumRequestBody
        self.logger = logger
        self.ready = ready
    }

    package func run() async throws {
        // Its directory was checked (or made) by the composition root, before any service ran.
        try LocalAPIServer.clearStaleSocket(socketPath)
        let loop = AcceptLoop<Connection>(what: socketPath, logger: logger) { [self] intake in
            unlink(socketPath)  // ours: stale, or the one that stopped
            return try await listen(intake: intake)
        }
        let first = try await loop.bind()
        defer { unlink(socketPath) }
        logger.info("local API listening", metadata: ["socket": "\(socketPath)"])
        let files: FileSocketServer
        do {
            files = try FileSocketServer(
                path: FileStreamSocket.path(forAPISocket: socketPath), streams: router.streams, requestTimeout: deadlines.fileRequest, logger: logger
            )
        } catch {
            try? await first.server.channel.close()
            throw error
        }
        ready.succeed()

        // Served until shutdown, whatever a connection does; on shutdown open requests end too
        // (event streams last forever otherwise).
        await withDiscardingTaskGroup { group in
            group.addTask { await files.serveAll() }
            await loop.run(first) { await self.serve($0) }
            // Requests on the file socket end with the others (a stream already spliced goes on).
            files.stop()
            group.cancelAll()
        }
        logger.info("local API closed", metadata: ["socket": "\(socketPath)"])
    }

    /// Binds the socket and makes it the owner's only (0600).
    private func listen(intake: AcceptLoop<Connection>.Intake) async throws -> NIOAsyncChannel<Connection, Never> {
        let server: NIOAsyncChannel<Connection, Never>
        do {
            let router = self.router
            let logger = self.logger
            let connections = self.connections
            let requestTimeout = TimeAmount(deadlines.localRequest)
            // No child options or child initializer (see AcceptLoop): each connection is set up
            // in the closure, guarded.
            server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.backlog, value: 128)
                .bind(unixDomainSocketPath: socketPath) { channel in
                    switch connections.admit(channel) {
                    case .admitted:
                        break
                    case .refused(let first):
                        // Told so (handed over only for NIO to register it: it holds no task and
                        // no HTTP parser).
                        let maximum = connections.maximum
                        if first { logger.notice("turning local connections away: too many open", metadata: ["maximum": "\(maximum)"]) }
                        return ConnectionSetup.guarded(channel, intake: intake, peer: "a local client", logger: logger) {
                            channel.eventLoop.makeCompletedFuture {
                                try channel.pipeline.syncOperations.addHandler(TooManyConnections(maximum: maximum, linger: .seconds(1)))
                                return Connection(channel: channel, served: nil)
                            }
                        }
                    case .dropped:
                        channel.close(promise: nil)
                        return channel.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel)
                    }
                    return ConnectionSetup.guarded(channel, intake: intake, peer: "a local client", logger: logger) {
                        // A stream's app shuts down its sending side when it is done sending, and keeps reading.
                        channel.setOption(.allowRemoteHalfClosure, value: true).flatMap {
                            PeerCredentials.of(channel)
                        }.flatMapThrowing { peer in
                            let deadline = RequestDeadline(channel: channel, timeout: requestTimeout)
                            deadline.arm()
                            channel.closeFuture.whenComplete { _ in deadline.end() }
                            let upgrade = StreamUpgrader(router: router, peer: peer, logger: logger, headReceived: deadline.disarm)
                            let negotiated = try channel.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(
                                configuration: NIOUpgradableHTTPServerPipelineConfiguration(
                                    upgradeConfiguration: NIOTypedHTTPServerUpgradeConfiguration(
                                        upgraders: [upgrade],
                                        notUpgradingCompletionHandler: { channel in
                                            channel.eventLoop.makeCompletedFuture {
                                                try channel.pipeline.syncOperations.addHandler(RequestDeadline.Watcher(deadline))
                                                let wrapped = try HTTPChannel(wrappingChannelSynchronously: channel)
                                                return .http(wrapped, refusedUpgrade: upgrade.refusal)
                                            }
                                        }
                                    )
                                )
                            )
                            channel.closeFuture.whenComplete { _ in upgrade.connectionClosed() }
                            return Connection(
                                channel: channel, served: Connection.Served(peer: peer, negotiated: negotiated, upgrader: upgrade, deadline: deadline)
                            )
                        }
                    }
                }
        } catch {
            if error is SocketAddressError || (error as? IOError).map({ $0.errnoCode == ENAMETOOLONG }) == true {
                throw DaemonError(.socket, "the socket path \(socketPath) is too long for a Unix socket; give a shorter --socket")
            }
            throw DaemonError(.socket, "cannot listen on \(socketPath)", cause: error)
        }
        guard chmod(socketPath, 0o600) == 0 else {
            let e = errno
            try? await server.channel.close()
            throw DaemonError(.socket, "cannot restrict \(socketPath) to its owner", cause: SystemCallError(call: "chmod", errno: e))
        }
        return server
    }

    /// A socket file left by a daemon that died is removed; one that still answers means another
    /// daemon is running, and we must not steal its socket.
    static func clearStaleSocket(_ path: String) throws(DaemonError) {
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        guard st.st_mode & S_IFMT == S_IFSOCK else {
            throw DaemonError(.socket, "\(path) exists and is not a socket; move it away and start handoffd again")
        }
        switch UnixSocketProbe.connect(path) {
        case .accepting:
            throw DaemonError(
                .alreadyRunning,
                "another handoffd is already running on \(path); stop it first, or give this one --socket PATH"
            )
        case .refused, .absent:
            unlink(path)
        }
    }

    // MARK: Connections

    private func serve(_ accepted: Connection) async {
        // One turned away is its handler's: nothing to wait for here.
        guard let connection = accepted.served else { return }
        let channel = accepted.channel
        do {
            // Waiting on a future ignores cancellation: closing the channel ends the wait. A
            // stream asked for is opened by this connection's task, while NIO waits for it.
            let negotiated = try await withTaskCancellationHandler {
                async let opening: Void = connection.upgrader.openWhenAsked()
                let negotiated: Negotiated
                do {
                    negotiated = try await connection.negotiated.get()
                } catch {
                    connection.upgrader.connectionClosed()
                    throw error
                }
                connection.upgrader.negotiated()
                await opening
                return negotiated
            } onCancel: {
                channel.close(promise: nil)
            }
            switch negotiated {
            case .stream:
                // The splice owns the connection now; it closes it when the stream ends.
                try await withTaskCancellationHandler {
                    try await channel.closeFuture.get()
                } onCancel: {
                    channel.close(promise: nil)
                }
            case .http(let http, let refusal):
                try await serveHTTP(http, peer: connection.peer, refusedUpgrade: refusal)
            }
        } catch {
            channel.close(promise: nil)
            logger.debug("local API connection ended", metadata: ["error": "\(error)"])
        }
    }

    private func serveHTTP(_ http: HTTPChannel, peer: PeerCredentials, refusedUpgrade: LocalAPIError?) async throws {
        try await http.executeThenClose { inbound, outbound in
            var parts = inbound.makeAsyncIterator()
            if let refusedUpgrade {
                // NIO's upgrade handler does not pass on a request it did not upgrade: it was read
                // whole, and is answered with why there is no stream.
                _ = try await self.write(.error(refusedUpgrade), keepAlive: false, outbound: outbound, closed: nil)
                return
            }
            while let request = try await self.readRequest(&parts, peer: peer, outbound: outbound) {
                let response = await self.router.handle(request)
                let keepAlive = try await self.write(
                    response, keepAlive: request.head.isKeepAlive, outbound: outbound, closed: http.channel.closeFuture
                )
                if !keepAlive { break }
            }
        }
    }

    /// The next whole request on the connection, or nil when the client is done. A body beyond the
    /// limit is answered with 413 and the connection closed: read to its end and dropped (so that
    /// the client, still sending, hears the answer), or at once when it goes on far beyond.
    private func readRequest(
        _ parts: inout NIOAsyncChannelInboundStream<HTTPServerRequestPart>.AsyncIterator,
        peer: PeerCredentials,
        outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>
    ) async throws -> ReceivedRequest? {
        guard let first = try await parts.next() else { return nil }
        guard case .head(let head) = first else {
            throw DaemonError(.socket, "HTTP request body without a head")
        }
        var body = ByteBuffer()
        var received = 0
        let refusal = LocalAPIError(
            .requestTooLarge,
            "the request body is larger than \(maximumRequestBody) bytes; activities are small — move bulk data into a continuation stream"
        )
        while let part = try await parts.next() {
            switch part {
            case .head:
                throw DaemonError(.socket, "HTTP request head inside a request")
            case .body(var chunk):
                received += chunk.readableBytes
                if received <= maximumRequestBody {
                    body.writeBuffer(&chunk)
                } else if received > maximumRequestBody * 16 {
                    // Not worth reading on: answered now (our client reads it when its sending
                    // fails), and the connection closed.
                    _ = try await write(.error(refusal), keepAlive: false, outbound: outbound, closed: nil)
                    return nil
                }
            case .end:
                let request = ReceivedRequest(head: head, body: body, peer: peer)
                guard received <= maximumRequestBody else {
                    _ = try await write(.error(refusal), keepAlive: false, outbound: outbound, closed: nil)
                    return nil
                }
                return request
            }
        }
        return nil
    }

    /// Writes `response`; returns whether the connection may carry another request.
    private func write(
        _ response: LocalAPIResponse,
        keepAlive: Bool,
        outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>,
        closed: EventLoopFuture<Void>?
    ) async throws -> Bool {
        var headers = HTTPHeaders()
        switch response {
        case .json(let status, let body), .jsonWithHeaders(let status, let body, _), .jsonThen(let status, let body, _):
            if case .jsonWithHeaders(_, _, let extra) = response { headers.add(contentsOf: extra) }
            headers.add(name: "content-type", value: "application/json")
            headers.add(name: "content-length", value: String(body.count))
            if !keepAlive { headers.add(name: "connection", value: "close") }
            // One flush: the client reads the whole answer in one wake-up, not the head first.
            let written: Result<Void, any Error>
            do {
                try await outbound.write(
                    contentsOf: [.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers)), .body(.byteBuffer(ByteBuffer(bytes: body))), .end(nil)]
                )
                written = .success(())
            } catch {
                written = .failure(error)
            }
            // What the request caused is done whether or not its caller is still there to hear.
            if case .jsonThen(_, _, let then) = response { await then() }
            try written.get()
            return keepAlive

        case .lines(let produce):
            headers.add(name: "content-type", value: "application/x-ndjson")
            headers.add(name: "cache-control", value: "no-store")
            headers.add(name: "connection", value: "close")
            guard (try? await outbound.write(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers)))) != nil else {
                // The client left before the answer began: the producer still runs — cancelled,
                // writing nothing — so that what it does when its client goes (an app's
                // registration ending) is done.
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { await produce(NDJSONWriter { _ in false }) }
                    group.cancelAll()
                }
                return false
            }
            let gone = Once<Void>()
            closed?.whenComplete { _ in gone.settle(()) }
            // Lines until the source ends (or the daemon stops: this task is cancelled), or the
            // client leaves — noticed even while no line is due.
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    await produce(NDJSONWriter { line in (try? await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: line))))) != nil })
                    try? await outbound.write(.end(nil))
                }
                group.addTask { _ = await gone.valueUnlessCancelled() }
                await group.next()
                group.cancelAll()
            }
            return false
        }
    }
}

/// Closes a connection whose client has not sent a whole request in time: armed at connect and
/// after each answer, disarmed as the last byte of a request arrives (on the event loop, as it is
/// parsed: the time is the client's, however long handoffd then takes to answer), and ended when
/// the connection closes. Ending it matters: a timer left armed stays in the event loop's queue
/// until it fires — a wake-up 10 s after every request — and each one made arming and
/// disarming the next slower, the queue being searched to remove one (docs/benchmarks.md,
/// "handoffctl's share of continue").
final class RequestDeadline: Sendable {
    /// Watches the HTTP parts going by.
    final class Watcher: ChannelDuplexHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias InboundOut = HTTPServerRequestPart
        typealias OutboundIn = HTTPServerResponsePart
        typealias OutboundOut = HTTPServerResponsePart

        private let deadline: RequestDeadline

        init(_ deadline: RequestDeadline) {
            self.deadline = deadline
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if case .end = unwrapInboundIn(data) { deadline.disarm() }
            context.fireChannelRead(data)
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            if case .end = unwrapOutboundIn(data) { deadline.arm() }
            context.write(data, promise: promise)
        }
    }

    private enum State {
        case disarmed
        case armed(Scheduled<Void>)
        case ended
    }

    private let channel: any Channel
    private let timeout: TimeAmount
    private let state = Mutex(State.disarmed)

    init(channel: any Channel, timeout: TimeAmount) {
        self.channel = channel
        self.timeout = timeout
    }

    func arm() {
        let channel = self.channel
        let task = channel.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
        let kept = state.withLock { s -> Bool in
            if case .ended = s { return false }
            if case .armed(let earlier) = s { earlier.cancel() }
            s = .armed(task)
            return true
        }
        if !kept { task.cancel() }
    }

    @Sendable func disarm() {
        state.withLock { s in
            if case .armed(let task) = s {
                task.cancel()
                s = .disarmed
            }
        }
    }

    /// The connection closed: no deadline any more, now or later.
    func end() {
        state.withLock { s in
            if case .armed(let task) = s { task.cancel() }
            s = .ended
        }
    }
}

/// A blocking connect() to a Unix socket, to tell a live daemon from a dead one's socket file.
enum UnixSocketProbe {
    enum Result { case accepting, refused, absent }

    static func connect(_ path: String) -> Result {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .refused }
        defer { close(fd) }
        guard let rc = UnixSocketAddress.with(path, { Glibc.connect(fd, $0, $1) }) else { return .refused }
        if rc == 0 { return .accepting }
        return errno == ENOENT ? .absent : .refused
    }
}
