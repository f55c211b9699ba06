#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonCore
import DaemonSessions
import HandoffAPI
import HandoffModel
import HandoffPeer
import HandoffTLS
import HandoffTLSChannel
import NIOCore
import NIOPosix

/// A continuation stream's connection to the other device before its bytes flow: TLS (ALPN
/// `handoff-stream/1`, account certificates both ways), then exactly one frame each way — the
/// resumer's `openStream`, the originator's `streamAccepted` or `streamRefused` — and from then on
/// the stream's raw bytes. `StreamPreamble` reads that one frame and holds whatever follows it
/// until the splice takes over.
struct StreamConnection: Sendable {
    let channel: any Channel
    let peerID: DeviceID
    let remote: String
    /// The one frame the other side sent.
    let frame: EventLoopFuture<PeerMessage>
    fileprivate let preamble: NIOLoopBound<StreamPreamble>

    /// (Originator) answers the request; with `streamAccepted`, call `release` next.
    func answer(_ message: PeerMessage) {
        let preamble = self.preamble
        // On the loop already (accepting, just before `release`): now, while the preamble is there.
        if channel.eventLoop.inEventLoop {
            preamble.value.send(message)
        } else {
            channel.eventLoop.execute { preamble.value.send(message) }
        }
    }

    /// On the channel's event loop, once the splice's glue is in place: the preamble leaves the
    /// pipeline, handing on what it held.
    func release() {
        preamble.value.release()
    }

    /// The frame, or a failure if the connection ended or broke first. Cancelling closes the channel.
    func receivedFrame() async throws -> PeerMessage {
        let channel = self.channel
        return try await withTaskCancellationHandler {
            try await frame.get()
        } onCancel: {
            channel.close(promise: nil)
        }
    }

    /// Ends a connection that will not carry a stream (after a refusal is written).
    func close() {
        channel.close(promise: nil)
    }

    /// Installs the preamble (on the channel's event loop).
    static func configure(
        _ channel: any Channel, peerID: DeviceID, remote: String, opening: PeerMessage?, deadline: TimeAmount
    ) throws -> StreamConnection {
        let promise = channel.eventLoop.makePromise(of: PeerMessage.self)
        let preamble = StreamPreamble(frame: promise, opening: opening, deadline: deadline)
        try channel.pipeline.syncOperations.addHandler(preamble)
        return StreamConnection(
            channel: channel, peerID: peerID, remote: remote, frame: promise.futureResult,
            preamble: NIOLoopBound(preamble, eventLoop: channel.eventLoop)
        )
    }
}

/// Reads the one frame of a stream connection's preamble (sending its own first when it opens the
/// stream), then stops reading and holds every later byte, and the end of input, for the glue.
final class StreamPreamble: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let frame: EventLoopPromise<PeerMessage>
    /// The request frame sent first, by the side that opens the stream.
    private let opening: PeerMessage?
    private let deadline: TimeAmount
    private var context: ChannelHandlerContext?
    private var collected = ByteBuffer()
    private var decided = false
    private var held: [ByteBuffer] = []
    private var heldEnd = false
    private var timer: Scheduled<Void>?

    init(frame: EventLoopPromise<PeerMessage>, opening: PeerMessage?, deadline: TimeAmount) {
        self.frame = frame
        self.opening = opening
        self.deadline = deadline
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: deadline) {
            loopBound.value.settle(.failure(PeerRequestTimeout()))
        }
        // The TLS handler holds this until its handshake is done.
        if let opening { send(opening) }
    }

    func send(_ message: PeerMessage) {
        guard let context else { return }
        var out = context.channel.allocator.buffer(capacity: 32)
        PeerFrame.write(message, to: &out)
        context.writeAndFlush(wrapOutboundOut(out), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        guard !decided else {
            held.append(buffer)
            return
        }
        collected.writeBuffer(&buffer)
        do {
            guard let message = try PeerFrame.read(from: &collected, maximumPayload: FrameLimit.beforeHello) else { return }
            // The stream's bytes may follow at once: stop reading until the glue is there.
            context.channel.setOption(ChannelOptions.autoRead, value: false).whenFailure { _ in }
            if collected.readableBytes > 0 { held.append(collected) }
            collected = ByteBuffer()
            settle(.success(message))
        } catch {
            settle(.failure(error))
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let e = event as? ChannelEvent, e == .inputClosed {
            if decided {
                heldEnd = true
            } else {
                settle(.failure(PeerSessionError.closed))
            }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !decided { settle(.failure(error)) }
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !decided { settle(.failure(PeerSessionError.closed)) }
        context.fireChannelInactive()
    }

    private func settle(_ result: Result<PeerMessage, any Error>) {
        guard !decided else { return }
        decided = true
        timer?.cancel()
        switch result {
        case .success(let message):
            frame.succeed(message)
        case .failure(let error):
            frame.fail(error)
            context?.close(promise: nil)
        }
    }

    func release() {
        guard let context else { return }
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        settle(.failure(PeerSessionError.closed))
        let bytes = held
        held = []
        for chunk in bytes { context.fireChannelRead(wrapInboundOut(chunk)) }
        if !bytes.isEmpty { context.fireChannelReadComplete() }
        if heldEnd { context.fireUserInboundEventTriggered(ChannelEvent.inputClosed) }
        self.context = nil
    }
}

@available(*, unavailable)
extension StreamPreamble: Sendable {}

extension PeerDialer {
    /// Connects a stream to `address` and asks for it with `request` (`openStream` of an activity,
    /// `openClipboardStream` of a copy); returns once the other device accepted it, with the
    /// stream id it gave. Offers are tried as for sessions (`helloAttempts`).
    static func openStream(
        _ address: PeerAddress, context: TLSContext, expectedPeer: DeviceID, addressee: HelloAddressee, request: PeerMessage, peerName: String
    ) async throws(DaemonError) -> (StreamConnection, UUID, length: Int64?) {
        let attempts = helloAttempts(addressee, secretGenerations: context.secretGenerations, resuming: context.canResume(with: expectedPeer))
        var next = 0
        while true {
            let attempt = attempts[next]
            next += 1
            let (connection, handshake) = try await connectStream(
                address, context: context, expectedPeer: expectedPeer, attempt: attempt, request: request, peerName: peerName
            )
            do {
                _ = try await handshake.get()
            } catch {
                connection.close()
                if let tls = error as? TLSError, tls.code == .accountKeyUnknown, next < attempts.count { continue }
                throw describe(error, address: address)
            }
            return try await awaitStreamAnswer(connection, address: address, peerName: peerName)
        }
    }

    private static func connectStream(
        _ address: PeerAddress, context: TLSContext, expectedPeer: DeviceID, attempt: HelloAttempt,
        request: PeerMessage, peerName: String
    ) async throws(DaemonError) -> (StreamConnection, EventLoopFuture<TLSHandshakeCompleted>) {
        do {
            return try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(connectTimeout)
                .channelOption(.allowRemoteHalfClosure, value: true)
                .connect(host: address.host, port: address.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try PeerPipeline.enableKeepalive(channel)
                        let promise = channel.eventLoop.makePromise(of: TLSHandshakeCompleted.self)
                        let remote = RemoteAddress()
                        let sync = channel.pipeline.syncOperations
                        try sync.addHandler(
                            TLSHandler(
                                connection: try attempt.connection(context: context, expectedPeer: expectedPeer),
                                allowHalfClosure: true
                            )
                        )
                        try sync.addHandler(HandshakeGate(promise: promise, remote: remote))
                        let stream = try StreamConnection.configure(
                            channel, peerID: expectedPeer, remote: address.host, opening: request,
                            deadline: ContinuationStreams.requestDeadline + .seconds(5)
                        )
                        return (stream, promise.futureResult)
                    }
                }
        } catch {
            throw DaemonError(.unreachable, "cannot reach \(peerName) at \(address): \(describeConnectError(error))")
        }
    }

    private static func awaitStreamAnswer(
        _ connection: StreamConnection, address: PeerAddress, peerName: String
    ) async throws(DaemonError) -> (StreamConnection, UUID, length: Int64?) {
        do {
            switch try await connection.receivedFrame() {
            case .streamAccepted(let id, let length):
                return (connection, id, length)
            case .streamRefused(let refusal):
                connection.close()
                switch refusal.reason {
                case .activityChanged: throw DaemonError(.activityChanged, "\(peerName): \(refusal.message)")
                case .unsupported: throw DaemonError(.streamsUnsupported, "\(peerName): \(refusal.message)")
                case .notContinued, .noServer, .internalError: throw DaemonError(.streamRefused, "\(peerName) refused the stream: \(refusal.message)")
                }
            case let other:
                connection.close()
                throw DaemonError(.versionMismatch, "\(peerName) answered a stream request with a \(other.kindName); are both devices up to date?")
            }
        } catch let e as DaemonError {
            throw e
        } catch is PeerRequestTimeout {
            connection.close()
            throw DaemonError(.timeout, "\(peerName) did not answer the stream request in time")
        } catch {
            connection.close()
            throw describe(error, address: address)
        }
    }
}
