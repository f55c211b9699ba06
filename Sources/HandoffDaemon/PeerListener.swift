import HandoffAPI
import HandoffModel
import HandoffTLS
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

/// The TCP port other devices connect to (default 47810). Every connection must be a fully
/// verified, non-revoked member of our account — or a joiner with a live invite code — before a
/// single message is read; until then it costs a bounded handshake, limited per address and in
/// total by `AdmissionControl`.
final class PeerListener: Service {
    struct Refused: Error {}

    private let port: Int
    private let bindAddresses: [String]
    private let store: AccountStore
    private let security: PeerSecurity
    private let admission: AdmissionControl
    private let links: MemberLinks
    private let streams: ContinuationStreams
    private let logger: Logger
    private let reportPort: @Sendable (Int) -> Void
    private let handshakeTimeout: TimeAmount
    let bound = ReadinessSignal()

    init(
        port: Int, bindAddresses: [String], store: AccountStore, security: PeerSecurity, admission: AdmissionControl, links: MemberLinks,
        streams: ContinuationStreams, logger: Logger, handshakeTimeout: TimeAmount, reportPort: @escaping @Sendable (Int) -> Void
    ) {
        self.links = links
        self.streams = streams
        self.reportPort = reportPort
        self.handshakeTimeout = handshakeTimeout
        self.port = port
        self.bindAddresses = bindAddresses
        self.store = store
        self.security = security
        self.admission = admission
        self.logger = logger
    }

    func run() async throws {
        var servers: [NIOAsyncChannel<PendingConnection, Never>] = []
        var port = self.port
        for address in bindAddresses {
            do {
                let server = try await bind(address, port: port)
                // With port 0 the first bind picks one; the other addresses use the same.
                if port == 0 { port = server.channel.localAddress?.port ?? 0 }
                servers.append(server)
            } catch {
                // IPv6 may be off on this host; IPv4 alone is fine. Nothing bound at all is not.
                logger.warning("cannot listen for devices", metadata: ["address": "\(address)", "port": "\(port)", "error": "\(error)"])
            }
        }
        guard !servers.isEmpty else {
            let error = DaemonError(.socket, "cannot listen on port \(port) for other devices; is another handoffd running, or choose another with --port")
            bound.fail(error)
            throw error
        }
        let listening = servers
        logger.info("listening for devices", metadata: ["port": "\(port)"])
        reportPort(port)
        bound.succeed()
        // On shutdown, close the listening sockets: each accept stream then ends by itself after
        // handing over what it holds (a connection dropped from it would never be closed), and
        // the sessions are cancelled.
        try await withGracefulShutdownHandler {
            try await withThrowingDiscardingTaskGroup { group in
                for server in listening {
                    group.addTask {
                        try await server.executeThenClose { pending in
                            try await withThrowingDiscardingTaskGroup { connections in
                                for try await connection in pending {
                                    connections.addTask { await self.serve(connection) }
                                }
                                connections.cancelAll()
                            }
                        }
                    }
                }
            }
        } onGracefulShutdown: {
            for server in listening { server.channel.close(promise: nil) }
        }
    }

    /// An accepted connection until its TLS handshake says what it is.
    struct PendingConnection: Sendable {
        let channel: any Channel
        let outcome: EventLoopFuture<AcceptedConnection>
        let remote: RemoteAddress
    }

    private func bind(_ host: String, port: Int) async throws -> NIOAsyncChannel<PendingConnection, Never> {
        let admission = self.admission
        let security = self.security
        let handshakeTimeout = self.handshakeTimeout
        return try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 128)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelInitializer { channel in
                // Bind [::] to IPv6 only so that 0.0.0.0 can be bound beside it.
                guard host.contains(":") else { return channel.eventLoop.makeSucceededVoidFuture() }
                return channel.setOption(ChannelOptions.Types.SocketOption(level: .ipv6, name: .ipv6_v6only), value: 1)
            }
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer(PeerPipeline.keepalive)
            .bind(host: host, port: port) { channel in
                let remote = channel.remoteAddress.map(PeerPipeline.describe) ?? "unknown"
                // Refused connections are closed at once (a failed initializer alone leaves them open).
                guard let contexts = security.contexts, admission.admit(remote) == .admitted else {
                    channel.close(promise: nil)
                    return channel.eventLoop.makeFailedFuture(Refused())
                }
                return channel.eventLoop.makeCompletedFuture {
                    do {
                        let handshake = channel.eventLoop.makePromise(of: TLSHandshakeCompleted.self)
                        let tls = TLSHandler(connection: try TLSConnection(context: contexts.server), handshakeTimeout: handshakeTimeout)
                        let remote = RemoteAddress()
                        try channel.pipeline.syncOperations.addHandler(tls)
                        try channel.pipeline.syncOperations.addHandler(HandshakeGate(promise: handshake, remote: remote))
                        // Runs as the gate hears of the handshake, before the next byte is read.
                        let boundTLS = NIOLoopBound(tls, eventLoop: channel.eventLoop)
                        let outcome = handshake.futureResult.flatMapThrowing { done in
                            try ProtocolSwitch.install(after: done, on: channel, tls: boundTLS.value, remote: remote)
                        }
                        return PendingConnection(channel: channel, outcome: outcome, remote: remote)
                    } catch {
                        admission.settled()
                        throw error
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
            admission.settled()
        } catch {
            admission.settled()
            let remote = pending.remote.value ?? "unknown"
            if let e = error as? TLSError {
                if e.code == .joinCodeRejected { admission.joinFailed(remote) }
                logger.notice("refused a connection", metadata: ["remote": "\(remote)", "reason": "\(e.code.rawValue)", "detail": "\(e.message)"])
            }
            channel.close(promise: nil)
            return
        }
        let link: PeerLink
        let handshake: TLSHandshakeCompleted
        switch accepted {
        case .stream(let connection):
            await streams.serveIncoming(connection)
            return
        case .session(let l, let h):
            (link, handshake) = (l, h)
        }
        do {
            switch handshake.peer {
            case .member(let id):
                try await ServerSessions.serveMember(id, link: link, store: store, links: links)
            case .joiner(let identity):
                try await ServerSessions.serveJoiner(pskIdentity: identity, link: link, store: store, logger: logger)
            case .inviter:
                await link.discard()
            }
        } catch {
            logger.debug("device session ended", metadata: ["remote": "\(link.remote)", "error": "\(error)"])
        }
    }
}
