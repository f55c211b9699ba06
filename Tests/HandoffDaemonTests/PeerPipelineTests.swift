import HandoffModel
import HandoffPeer
import HandoffTLS
import HandoffTLSChannel
import NIOCore
import NIOEmbedded
import Testing
@testable import DaemonSessions

/// The peer pipeline (`PeerPipeline.installHandlers`: TLS, the handshake gate, framing with a
/// limit) on two NIO testing channels joined by hand, with real OpenSSL: a member handshake,
/// messages both ways, the frame limit before and after hello, and a handshake cut short.
@Suite struct PeerPipelineTests {
    /// Collects what comes out of the pipeline's end.
    final class Received: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = PeerMessage
        var messages: [PeerMessage] = []
        var errors: [String] = []

        func channelRead(context: ChannelHandlerContext, data: NIOAny) { messages.append(unwrapInboundIn(data)) }
        func errorCaught(context: ChannelHandlerContext, error: any Error) { errors.append("\(error)") }
    }

    /// An account's root and trust, issuing devices.
    struct Account {
        let rootKey: SigningKey
        let root: Certificate
        let trust: TrustPolicy
        static let valid = (from: Timestamp.now().adding(seconds: -60), until: Timestamp.now().adding(seconds: 3600))

        init() throws {
            rootKey = try SigningKey.generate()
            root = try Certificate.makeAccountRoot(key: rootKey, notBefore: Self.valid.from, notAfter: Self.valid.until)
            trust = try TrustPolicy(root: root, accountSecrets: [Crypto.randomBytes(32)])
        }

        func device() throws -> DeviceIdentity {
            let key = try SigningKey.generate()
            let cert = try Certificate.issueDevice(publicKey: key.publicKey, root: root, rootKey: rootKey, notBefore: Self.valid.from, notAfter: Self.valid.until)
            return try DeviceIdentity(key: key, certificate: cert)
        }
    }

    struct Ends {
        let loop = EmbeddedEventLoop()
        let client: EmbeddedChannel
        let server: EmbeddedChannel
        let clientReceived = Received()
        let serverReceived = Received()
        let clientHandshake: EventLoopFuture<TLSHandshakeCompleted>
        let serverHandshake: EventLoopFuture<TLSHandshakeCompleted>
        let serverLimit: FrameLimit
        let clientID: DeviceID

        init() throws {
            let account = try Account()
            let (trust, serving, dialling) = (account.trust, try account.device(), try account.device())
            clientID = dialling.id
            client = EmbeddedChannel(loop: loop)
            server = EmbeddedChannel(loop: loop)
            let dialler = try TLSConnection(context: .memberClient(identity: dialling, trust: trust), expectedPeer: serving.id)
            let answerer = try TLSConnection(context: .memberServer(identity: serving, trust: trust))
            let c = try PeerPipeline.installHandlers(client, connection: dialler, handshakeTimeout: .seconds(10))
            let s = try PeerPipeline.installHandlers(server, connection: answerer, handshakeTimeout: .seconds(10))
            try client.pipeline.syncOperations.addHandler(clientReceived)
            try server.pipeline.syncOperations.addHandler(serverReceived)
            (clientHandshake, serverHandshake, serverLimit) = (c.handshake, s.handshake, s.limit)
            try server.connect(to: SocketAddress(ipAddress: "192.0.2.1", port: 4242)).wait()
            try client.connect(to: SocketAddress(ipAddress: "192.0.2.2", port: 4242)).wait()
            try shuttle()
        }

        /// Carries what each side wrote to the other until nothing is left in flight.
        func shuttle() throws {
            var moved = true
            while moved {
                moved = false
                for (from, to) in [(client, server), (server, client)] {
                    while let bytes = try from.readOutbound(as: ByteBuffer.self) {
                        moved = true
                        // A refused frame is thrown here as well as seen by `Received`.
                        _ = try? to.writeInbound(bytes)
                    }
                }
                loop.run()
            }
        }
    }

    static func hello(_ name: String) -> PeerMessage {
        .hello(PeerHello(deviceID: DeviceID(digest: Array(repeating: 1, count: 32)), deviceName: name, accountStateVersion: 1, clock: Timestamp(microsecondsSinceEpoch: 1_795_000_000_000_000)))
    }

    @Test func membersShakeHandsAndExchangeMessages() throws {
        let ends = try Ends()
        #expect(try ends.serverHandshake.wait().peer == .member(ends.clientID))
        _ = try ends.clientHandshake.wait()
        try ends.client.writeAndFlush(Self.hello("laptop")).wait()
        try ends.server.writeAndFlush(Self.hello("desk")).wait()
        try ends.shuttle()
        #expect(ends.serverReceived.messages == [Self.hello("laptop")])
        #expect(ends.clientReceived.messages == [Self.hello("desk")])
    }

    @Test func aLargeFrameWaitsForTheLimitToBeRaised() throws {
        let ends = try Ends()
        let large = PeerMessage.activity(requestID: 1, encoded: Array(repeating: 0x41, count: FrameLimit.beforeHello + 1))
        // After hello the session raises the limit: then it passes.
        ends.serverLimit.raise(to: FrameLimit.member)
        try ends.client.writeAndFlush(large).wait()
        try ends.shuttle()
        #expect(ends.serverReceived.messages == [large])
        // Before it, the same frame is refused, and the connection with it.
        let fresh = try Ends()
        try fresh.client.writeAndFlush(large).wait()
        try fresh.shuttle()
        #expect(fresh.serverReceived.messages.isEmpty)
        #expect(fresh.serverReceived.errors.contains { $0.contains("over the \(FrameLimit.beforeHello)-byte limit") }, "\(fresh.serverReceived.errors)")
    }

    @Test func aHandshakeCutShortFailsAsTruncated() throws {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        let account = try Account()
        let connection = try TLSConnection(context: .memberClient(identity: try account.device(), trust: account.trust))
        let installed = try PeerPipeline.installHandlers(channel, connection: connection, handshakeTimeout: .seconds(10))
        try channel.connect(to: SocketAddress(ipAddress: "192.0.2.3", port: 4242)).wait()
        #expect(installed.remote.value == "192.0.2.3")
        _ = try channel.close().wait()
        loop.run()
        #expect(throws: TLSError.self) { try installed.handshake.wait() }
    }
}
