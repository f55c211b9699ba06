import HandoffModel
import NIOCore

/// Fired inbound once the handshake is done and the peer verified.
public struct TLSHandshakeCompleted: Sendable {
    public let peer: TLSPeer
    public let alpn: String?
}

/// Drives a `TLSConnection` on a channel: ciphertext below, plaintext above (the shape of
/// swift-nio-ssl 1.x's `OpenSSLHandler`).
///
/// - Plaintext written before the handshake completes is held and sent after it.
/// - A handshake that does not finish within `handshakeTimeout` fails with `.handshakeTimeout`.
/// - Failures are fired as `TLSError` through `errorCaught`, after any alert OpenSSL queued has
///   been flushed, and the channel is closed.
/// - Closing sends close_notify first.
public final class TLSHandler: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer
    public typealias OutboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    private enum State { case idle, handshaking, active, closing, closed }

    private let connection: TLSConnection
    private let handshakeTimeout: TimeAmount
    private var state = State.idle
    private var timeout: Scheduled<Void>?
    private var heldWrites: [(ByteBuffer, EventLoopPromise<Void>?)] = []
    private var unflushedPromises: [EventLoopPromise<Void>] = []
    /// Plaintext is handed up in chunks of at most this size (16 KiB TLS records are gathered).
    private let readChunk = 64 * 1024

    public init(connection: TLSConnection, handshakeTimeout: TimeAmount = .seconds(10)) {
        self.connection = connection
        self.handshakeTimeout = handshakeTimeout
    }

    // MARK: Lifecycle

    public func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context: context) }
    }

    public func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    private func start(context: ChannelHandlerContext) {
        guard state == .idle else { return }
        state = .handshaking
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timeout = context.eventLoop.scheduleTask(in: handshakeTimeout) {
            let (handler, context) = loopBound.value
            guard handler.state == .handshaking else { return }
            handler.fail(context: context, TLSError(.handshakeTimeout, "the TLS handshake did not finish in time"))
        }
        advanceHandshake(context: context)
    }

    public func channelInactive(context: ChannelHandlerContext) {
        let wasHandshaking = state == .handshaking
        state = .closed
        timeout?.cancel()
        failHeldWrites(ChannelError.ioOnClosedChannel)
        if wasHandshaking {
            context.fireErrorCaught(TLSError(.truncated, "the connection ended during the TLS handshake"))
        }
        context.fireChannelInactive()
    }

    // MARK: Inbound

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        buffer.withUnsafeReadableBytes { connection.receive($0) }
        switch state {
        case .handshaking: advanceHandshake(context: context)
        case .active, .closing: deliverPlaintext(context: context)
        case .idle, .closed: break
        }
    }

    public func channelReadComplete(context: ChannelHandlerContext) {
        flushCiphertext(context: context)
        context.fireChannelReadComplete()
    }

    private func advanceHandshake(context: ChannelHandlerContext) {
        switch connection.handshake() {
        case .inProgress:
            flushCiphertext(context: context)
        case .failed(let error):
            fail(context: context, error)
        case .complete(let peer):
            state = .active
            timeout?.cancel()
            flushCiphertext(context: context)
            context.fireUserInboundEventTriggered(TLSHandshakeCompleted(peer: peer, alpn: connection.alpn))
            let held = heldWrites
            heldWrites = []
            for (buffer, promise) in held { encrypt(buffer, promise: promise, context: context) }
            if !held.isEmpty { flushCiphertext(context: context) }
            // Application data may have arrived with the last handshake flight.
            deliverPlaintext(context: context)
        }
    }

    private func deliverPlaintext(context: ChannelHandlerContext) {
        while state == .active || state == .closing {
            var chunk = context.channel.allocator.buffer(capacity: readChunk)
            var status = TLSConnection.ReadStatus.needMoreData
            while chunk.writableBytes >= 16 * 1024 {
                status = .needMoreData
                _ = chunk.writeWithUnsafeMutableBytes(minimumWritableBytes: 0) { raw in
                    status = connection.read(into: raw)
                    if case .data(let n) = status { return n }
                    return 0
                }
                guard case .data = status else { break }
            }
            if chunk.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(chunk)) }
            switch status {
            case .data: continue  // the chunk filled up: there may be more
            case .needMoreData: return
            case .closed:
                // close_notify: answer with ours and close.
                close(context: context, mode: .all, promise: nil)
                return
            case .failed(let error):
                fail(context: context, error)
                return
            }
        }
    }

    // MARK: Outbound

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let buffer = unwrapOutboundIn(data)
        switch state {
        case .idle, .handshaking:
            heldWrites.append((buffer, promise))
        case .active:
            encrypt(buffer, promise: promise, context: context)
        case .closing, .closed:
            promise?.fail(ChannelError.ioOnClosedChannel)
        }
    }

    private func encrypt(_ buffer: ByteBuffer, promise: EventLoopPromise<Void>?, context: ChannelHandlerContext) {
        do {
            try buffer.withUnsafeReadableBytes { (raw) throws(TLSError) in try connection.write(raw) }
            if let promise { unflushedPromises.append(promise) }
        } catch {
            promise?.fail(error)
            fail(context: context, error)
        }
    }

    public func flush(context: ChannelHandlerContext) {
        if state == .active { flushCiphertext(context: context) }
    }

    /// Sends whatever ciphertext the engine produced, completing the plaintext writes it carries.
    private func flushCiphertext(context: ChannelHandlerContext) {
        let pending = connection.pendingCiphertext
        let promises = unflushedPromises
        unflushedPromises = []
        guard pending > 0 else {
            promises.forEach { $0.succeed() }
            return
        }
        var out = context.channel.allocator.buffer(capacity: pending)
        _ = out.writeWithUnsafeMutableBytes(minimumWritableBytes: pending) { connection.takeCiphertext(into: $0) }
        let write: EventLoopPromise<Void>? = promises.isEmpty ? nil : context.eventLoop.makePromise()
        if let write {
            for p in promises { write.futureResult.cascade(to: p) }
        }
        context.writeAndFlush(wrapOutboundOut(out), promise: write)
    }

    public func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        switch state {
        case .active:
            state = .closing
            connection.shutdown()
            flushCiphertext(context: context)
            context.close(mode: mode, promise: promise)
        case .idle, .handshaking:
            state = .closing
            failHeldWrites(ChannelError.ioOnClosedChannel)
            context.close(mode: mode, promise: promise)
        case .closing, .closed:
            context.close(mode: mode, promise: promise)
        }
    }

    // MARK: Failure

    private func fail(context: ChannelHandlerContext, _ error: TLSError) {
        guard state != .closed, state != .closing else { return }
        state = .closing
        timeout?.cancel()
        failHeldWrites(error)
        flushCiphertext(context: context)  // the alert telling the peer why
        context.fireErrorCaught(error)
        context.close(promise: nil)
    }

    private func failHeldWrites(_ error: any Error) {
        let held = heldWrites
        heldWrites = []
        held.forEach { $0.1?.fail(error) }
        let promises = unflushedPromises
        unflushedPromises = []
        promises.forEach { $0.fail(error) }
    }
}

@available(*, unavailable)
extension TLSHandler: Sendable {}
