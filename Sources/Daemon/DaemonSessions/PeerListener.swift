import DaemonAccounts
import DaemonCore
import HandoffAPI
import HandoffModel
import HandoffTLS
import HandoffTLSChannel
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// The TCP port other devices connect to (default 47810). Every connection must be a fully
/// verified, non-revoked member of our account — or a joiner with a live invite code — before a
/// single message is read; until then it costs a bounded handshake, limited per address and in
/// total by `AdmissionControl`.
package final class PeerListener: Service {
    struct Refused: Error {}

    private let port: Int
    private let bindAddresses: [String]
    private let store: AccountStore
    private let security: PeerSecurity
    private let admission: AdmissionControl
    private let sessions: MemberSessions
    private let streams: any StreamService
    private let logger: Logger
    private let handshakeTimeout: TimeAmount
    private let configFile: String?
    package let bound = ReadinessSignal()
    /// The port it listens on, once `bound` (the configured one, or the one picked for 0).
    package let boundPort = BoundPort()

    package init(
        port: Int, bindAddresses: [String], store: AccountStore, security: PeerSecurity, admission: AdmissionControl, sessions: MemberSessions,
        streams: any StreamService, logger: Logger, handshakeTimeout: TimeAmount, configFile: String?
    ) {
        self.configFile = configFile
        self.sessions = sessions
        self.streams = streams
        self.handshakeTimeout = handshakeTimeout
        self.port = port
        self.bindAddresses = bindAddresses
        self.store = store
        self.security = security
        self.admission = admission
        self.logger = logger
    }

    package func run() async throws {
        var loops: [(loop: AcceptLoop<PendingConnection>, first: AcceptLoop<PendingConnection>.Bound)] = []
        var failures: [(address: String, error: any Error)] = []
        // With port 0 the first bind picks one; the other addresses, and binding again, use it.
        let port = BoundPort()
        port.set(self.port)
        for address in bindAddresses {
            let loop = AcceptLoop<PendingConnection>(what: address, logger: logger) { intake in
                try await self.bind(address, port: port.value ?? 0, intake: intake)
            }
            do {
                let first = try await loop.bind()
                if port.value == 0 { port.set(first.server.channel.localAddress?.port ?? 0) }
                loops.append((loop, first))
            } catch {
                // IPv6 may be off on this host; IPv4 alone is fine. Nothing bound at all is not.
                logger.warning("cannot listen for devices", metadata: ["address": "\(address)", "port": "\(port.value ?? 0)", "error": "\(error)"])
                failures.append((address, error))
            }
        }
        guard !loops.isEmpty else {
            let error = Self.describeBindFailure(failures.first?.error, address: failures.first?.address ?? "", port: port.value ?? 0, configFile: configFile)
            bound.fail(error)
            throw error
        }
        logger.info("listening for devices", metadata: ["port": "\(port.value ?? 0)"])
        boundPort.set(port.value ?? 0)
        bound.succeed()
        // Each address is served by a loop that outlives whatever one connection does; on
        // shutdown the listening sockets close and the sessions are cancelled.
        let serving = loops
        await withDiscardingTaskGroup { group in
            for (loop, first) in serving {
                group.addTask { await loop.run(first) { await self.serve($0) } }
            }
        }
    }

    /// Why the peer port cannot be had, and what to do about it — in words, not errno text.
    static func describeBindFailure(_ error: (any Error)?, address: String, port: Int, configFile: String?) -> DaemonError {
        let fix = "choose another with --port, or `port =` in \(configFile ?? "handoffd.toml")"
        switch (error as? IOError)?.errnoCode {
        case EADDRINUSE:
            return DaemonError(.socket, "port \(port) is already in use by another program (or another handoffd); \(fix)")
        case EACCES:
            return DaemonError(.socket, "port \(port) is reserved for root on this system; \(fix) (1024 or above)")
        case EADDRNOTAVAIL:
            return DaemonError(.socket, "\(address) is not an address of this computer; fix `listen =` in \(configFile ?? "handoffd.toml"), or --listen")
        default:
            return DaemonError(.socket, "cannot listen on port \(port) for other devices (\(error.map { "\($0)" } ?? "no address to listen on")); \(fix)")
        }
    }

    /// An accepted connection until its TLS handshake says what it is.
    struct PendingConnection: IncomingConnection {
        let channel: any Channel
        let outcome: EventLoopFuture<AcceptedConnection>
        let remote: RemoteAddress
    }

    private func bind(_ host: String, port: Int, intake: AcceptLoop<PendingConnection>.Intake) async throws -> NIOAsyncChannel<PendingConnection, Never> {
        let admission = self.admission
        let security = self.security
        let streams = self.streams
        let handshakeTimeout = self.handshakeTimeout
        let logger = self.logger
        // No child options or child initializer here: their failure would end the listener
        // (AcceptLoop). Every connection is set up in the closure below, guarded.
        return try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 128)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelInitializer { channel in
                // Bind [::] to IPv6 only so that 0.0.0.0 can be bound beside it.
                guard host.contains(":") else { return channel.eventLoop.makeSucceededVoidFuture() }
                return channel.setOption(ChannelOptions.Types.SocketOption(level: .ipv6, name: .ipv6_v6only), value: 1)
            }
            .bind(host: host, port: port) { channel in
                let remote = channel.remoteAddress.map(PeerPipeline.describe) ?? "unknown"
                // Refused connections are closed at once (a failed closure alone leaves them open).
                guard let contexts = security.contexts else {
                    channel.close(promise: nil)
                    return channel.eventLoop.makeFailedFuture(Refused())
                }
                let verdict = admission.admit(remote)
                guard verdict == .admitted else {
                    logger.debug("refused a connection before its handshake", metadata: ["remote": "\(remote)", "reason": "\(verdict)"])
                    guard verdict.refusesTheAddress else {
                        // Busy, or handoff off here: nothing to say that would help, and nothing spent
                        // on saying it.
                        channel.close(promise: nil)
                        return channel.eventLoop.makeFailedFuture(Refused())
                    }
                    // The address is refused for now: it is told so, and can tell its user.
                    return ConnectionSetup.guarded(channel, intake: intake, peer: remote, logger: logger) {
                        channel.eventLoop.makeCompletedFuture {
                            let ended = channel.eventLoop.makePromise(of: AcceptedConnection.self)
                            try channel.pipeline.syncOperations.addHandler(RefusalAlert(ended: ended))
                            return PendingConnection(channel: channel, outcome: ended.futureResult, remote: RemoteAddress(remote))
                        }
                    }
                }
                return ConnectionSetup.guarded(channel, intake: intake, peer: remote, logger: logger, notTaken: { admission.settled(remote) }) {
                    channel.eventLoop.makeCompletedFuture {
                        do {
                            try PeerPipeline.enableKeepalive(channel)
                            let handshake = channel.eventLoop.makePromise(of: TLSHandshakeCompleted.self)
                            let tls = TLSHandler(connection: try TLSConnection(context: contexts.server), handshakeTimeout: handshakeTimeout)
                            let recorded = RemoteAddress()
                            try channel.pipeline.syncOperations.addHandler(tls)
                            try channel.pipeline.syncOperations.addHandler(HandshakeGate(promise: handshake, remote: recorded))
                            // Runs as the gate hears of the handshake, before the next byte is read.
                            let boundTLS = NIOLoopBound(tls, eventLoop: channel.eventLoop)
                            let outcome = handshake.futureResult.flatMapThrowing { done in
                                try ProtocolSwitch.install(after: done, on: channel, tls: boundTLS.value, remote: recorded, streams: streams)
                            }
                            // The slot is free once the handshake is settled, whether or not the
                            // connection is ever served (AcceptLoop.Intake closes orphans).
                            outcome.whenComplete { _ in admission.settled(remote) }
                            return PendingConnection(channel: channel, outcome: outcome, remote: recorded)
                        } catch {
                            admission.settled(remote)
                            throw error
                        }
                    }
                }
            }
    }

    private func serve(_ pending: PendingConnection) async {
        let accepted: AcceptedConnection
        let channel = pending.channel
        do {
            // Waiting on a future ignores cancellation: closing the channel ends the wait.
            accepted = try await withTaskCancellationHandler {
                try await pending.outcome.get()
            } onCancel: {
                channel.close(promise: nil)
            }
        } catch {
            let remote = pending.remote.value ?? "unknown"
            if let e = error as? TLSError {
                if e.code == .joinCodeRejected { admission.joinFailed(remote) }
                logger.notice("refused a connection", metadata: ["remote": "\(remote)", "reason": "\(e.code.rawValue)", "detail": "\(e.message)"])
            }
            channel.close(promise: nil)
            return
        }
        let connection: PeerConnection
        let handshake: TLSHandshakeCompleted
        switch accepted {
        case .stream(let stream):
            admission.memberAuthenticated(pending.remote.value ?? "unknown")
            await stream.serve()
            return
        case .session(let l, let h):
            (connection, handshake) = (l, h)
        }
        do {
            switch handshake.peer {
            case .member(let id):
                admission.memberAuthenticated(pending.remote.value ?? "unknown")
                try await ServerSessions.serveMember(id, connection: connection, store: store, sessions: sessions)
            case .removedMember(let id):
                await ServerSessions.tellRemoved(id, connection: connection, store: store, logger: logger)
            case .joiner(let identity):
                try await ServerSessions.serveJoiner(pskIdentity: identity, connection: connection, store: store, logger: logger)
            case .inviter:
                await connection.discard()
            }
        } catch {
            logger.debug("device session ended", metadata: ["remote": "\(connection.remote)", "error": "\(error)"])
        }
    }
}

/// Tells a client whose address is refused for now (too many handshakes or wrong join codes) why,
/// before closing: a TLS `access_denied` alert in the clear, which a TLS client reads as the answer
/// to its ClientHello (RFC 8446 §6.2), so that `handoffctl` can say "wait and try again" (exit 34)
/// instead of "closed the connection". It costs one small write; nothing is read.
final class RefusalAlert: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Record type alert (21), TLS 1.2 record version, length 2: fatal (2), access_denied (49).
    static let accessDenied: [UInt8] = [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 49]

    private let ended: EventLoopPromise<AcceptedConnection>
    private var sent = false

    init(ended: EventLoopPromise<AcceptedConnection>) {
        self.ended = ended
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { send(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        send(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    func channelInactive(context: ChannelHandlerContext) {
        ended.fail(PeerListener.Refused())
        context.fireChannelInactive()
    }

    /// Also when the channel never became active: nobody waits for ever (failing twice is a no-op).
    func handlerRemoved(context: ChannelHandlerContext) {
        ended.fail(PeerListener.Refused())
    }

    private func send(_ context: ChannelHandlerContext) {
        guard !sent else { return }
        sent = true
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: Self.accessDenied))).whenComplete { _ in channel.close(promise: nil) }
    }
}

/// The peer port once bound (with port 0 the system picks it).
package final class BoundPort: Sendable {
    private let port = Mutex<Int?>(nil)
    package init() {}

    package var value: Int? { port.withLock { $0 } }
    package func set(_ value: Int) { port.withLock { $0 = value } }
}
