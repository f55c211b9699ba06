import HandoffAPI
import HandoffModel
import HandoffPeer
import HandoffTLS
import HandoffTLSChannel
import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

typealias PeerChannel = NIOAsyncChannel<PeerMessage, PeerMessage>

/// A connection to another device, from either side: the async channel of messages, the TLS
/// handshake's outcome, and the frame-size limit the session raises once it knows the peer.
struct PeerConnection: Sendable {
    let channel: PeerChannel
    let handshake: EventLoopFuture<TLSHandshakeCompleted>
    let limit: FrameLimit
    let remoteAddress: RemoteAddress

    /// The peer's IP, recorded when the connection became active (it stays known after close).
    var remote: String { remoteAddress.value ?? channel.channel.remoteAddress.map(PeerPipeline.describe) ?? "unknown" }
    /// This device's own IP on the connection (which network it was on).
    var local: String? { channel.channel.localAddress.map(PeerPipeline.describe) }

    /// Closes a connection that will not be used, the way NIO requires (its writer finished).
    func discard() async {
        try? await channel.executeThenClose { _, _ in }
    }

    /// The handshake's outcome. Waiting on a future ignores task cancellation, so cancelling
    /// (daemon shutdown, a caller giving up) closes the channel, which ends the wait.
    func completedHandshake() async throws -> TLSHandshakeCompleted {
        let channel = self.channel.channel
        return try await withTaskCancellationHandler {
            try await handshake.get()
        } onCancel: {
            channel.close(promise: nil)
        }
    }
}

/// Where the peer connected from; set by `HandshakeGate` once the channel is active.
package final class RemoteAddress: Sendable {
    private let text: Mutex<String?>

    package init(_ known: String? = nil) {
        text = Mutex(known)
    }

    var value: String? { text.withLock { $0 } }
    func record(_ address: SocketAddress?) {
        guard let address else { return }
        text.withLock { $0 = $0 ?? PeerPipeline.describe(address) }
    }
}

/// The largest message a peer may send us right now. Small until the peer has said hello.
package final class FrameLimit: Sendable {
    package static let beforeHello = 8 * 1024
    static let member = 1 << 20

    private let value: Mutex<Int>

    init(_ initial: Int = FrameLimit.beforeHello) {
        value = Mutex(initial)
    }

    var current: Int { value.withLock { $0 } }
    func raise(to limit: Int) { value.withLock { $0 = limit } }
}

/// Frames with a limit read from a `FrameLimit`, so it can change while the connection runs.
final class LimitedFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = PeerMessage
    private let inner: PeerFrameDecoder
    private let limit: FrameLimit

    init(limit: FrameLimit) {
        self.limit = limit
        self.inner = PeerFrameDecoder(maximumPayload: limit.current)
    }

    func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        inner.maximumPayload = limit.current
        return try inner.decode(context: context, buffer: &buffer)
    }

    func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        try decode(context: context, buffer: &buffer)
    }
}

/// Turns the TLS handler's completion event, or its failure, into a future.
package final class HandshakeGate: ChannelInboundHandler {
    package typealias InboundIn = ByteBuffer
    package typealias InboundOut = ByteBuffer

    private let promise: EventLoopPromise<TLSHandshakeCompleted>
    private let remote: RemoteAddress
    private var settled = false

    package init(promise: EventLoopPromise<TLSHandshakeCompleted>, remote: RemoteAddress) {
        self.promise = promise
        self.remote = remote
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { remote.record(context.channel.remoteAddress) }
    }

    package func channelActive(context: ChannelHandlerContext) {
        remote.record(context.channel.remoteAddress)
        context.fireChannelActive()
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let done = event as? TLSHandshakeCompleted, !settled {
            settled = true
            promise.succeed(done)
        }
        context.fireUserInboundEventTriggered(event)
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !settled {
            settled = true
            promise.fail(error)
        }
        context.fireErrorCaught(error)
    }

    package func channelInactive(context: ChannelHandlerContext) {
        settleAsTruncated()
        context.fireChannelInactive()
    }

    /// A pipeline torn down before the channel ever went inactive must still settle the promise.
    package func handlerRemoved(context: ChannelHandlerContext) {
        settleAsTruncated()
    }

    private func settleAsTruncated() {
        guard !settled else { return }
        settled = true
        promise.fail(TLSError(.truncated, "the connection ended during the TLS handshake"))
    }
}

@available(*, unavailable)
extension HandshakeGate: Sendable {}
@available(*, unavailable)
extension LimitedFrameDecoder: Sendable {}

package enum PeerPipeline {
    /// TCP keepalive tuned so that a silent peer (host gone, cable pulled) is noticed within about
    /// 8 s — by the kernel, without waking the daemon: idle 3 s, then 3 probes 1 s apart; data
    /// unacknowledged for 8 s also ends the connection. On the channel's event loop, before it is
    /// registered; a failure is that connection's alone (the caller closes it).
    ///
    /// Only options an unprivileged process may set: NIO's `.socketOption(.tcp_nodelay)` is
    /// SOL_SOCKET option 1 (SO_DEBUG), which needs CAP_NET_ADMIN — it made every connection fail
    /// for a normal user. TCP_NODELAY itself NIO sets on every TCP socket already.
    package static func enableKeepalive(_ channel: any Channel) throws {
        guard let options = channel.syncOptions else { throw ChannelError.operationUnsupported }
        let tcp = NIOBSDSocket.OptionLevel(rawValue: CInt(IPPROTO_TCP))
        let settings: [(NIOBSDSocket.OptionLevel, CInt, Int)] = [
            (.socket, CInt(SO_KEEPALIVE), 1),
            (tcp, CInt(TCP_KEEPIDLE), 3),
            (tcp, CInt(TCP_KEEPINTVL), 1),
            (tcp, CInt(TCP_KEEPCNT), 3),
            (tcp, CInt(TCP_USER_TIMEOUT), 8000),
        ]
        for (level, name, value) in settings {
            try options.setOption(ChannelOptions.Types.SocketOption(level: level, name: NIOBSDSocket.Option(rawValue: name)), value: value)
        }
    }

    /// Installs TLS, the handshake gate and the framing on a fresh channel (on its event loop).
    static func configure(
        _ channel: any Channel,
        connection: TLSConnection,
        handshakeTimeout: TimeAmount = .seconds(10)
    ) throws -> PeerConnection {
        let (handshake, limit, remote) = try installHandlers(channel, connection: connection, handshakeTimeout: handshakeTimeout)
        let wrapped = try PeerChannel(wrappingChannelSynchronously: channel)
        return PeerConnection(channel: wrapped, handshake: handshake, limit: limit, remoteAddress: remote)
    }

    /// The handlers `configure` installs, in order; messages come out of the last one (tests put
    /// a handler of their own after them).
    static func installHandlers(
        _ channel: any Channel, connection: TLSConnection, handshakeTimeout: TimeAmount
    ) throws -> (handshake: EventLoopFuture<TLSHandshakeCompleted>, limit: FrameLimit, remote: RemoteAddress) {
        let promise = channel.eventLoop.makePromise(of: TLSHandshakeCompleted.self)
        let limit = FrameLimit()
        let remote = RemoteAddress()
        remote.record(channel.remoteAddress)
        let sync = channel.pipeline.syncOperations
        try sync.addHandler(TLSHandler(connection: connection, handshakeTimeout: handshakeTimeout))
        try sync.addHandler(HandshakeGate(promise: promise, remote: remote))
        try sync.addHandler(ByteToMessageHandler(LimitedFrameDecoder(limit: limit)))
        try sync.addHandler(MessageToByteHandler(PeerFrameEncoder()))
        return (promise.futureResult, limit, remote)
    }

    /// `192.0.2.1`, `2001:db8::1`, or `fe80::1%eth0`: the address only (for rate limits, logs,
    /// and dialling back), a link-local one with its interface — without it, it cannot be reached.
    static func describe(_ address: SocketAddress) -> String {
        if case .v6(let v6) = address, v6.address.sin6_scope_id != 0, let ip = address.ipAddress {
            var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
            if if_indextoname(v6.address.sin6_scope_id, &name) != nil {
                return ip + "%" + name.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            }
        }
        return address.ipAddress ?? "\(address)"
    }
}
