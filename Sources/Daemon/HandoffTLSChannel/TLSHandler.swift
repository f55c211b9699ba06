import HandoffModel
import HandoffTLS
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

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
/// - Closing sends close_notify first; `TLSHandler.Abort` closes without it, with a TCP reset (the
///   peer then sees a broken stream at once, not an orderly end).
/// - With `allowHalfClosure` (continuation streams): `close(mode: .output)` sends close_notify and
///   shuts down our sending side only; the peer's close_notify arrives as `ChannelEvent.inputClosed`
///   and we may go on sending. The channel needs NIO's `allowRemoteHalfClosure`, so that the TCP
///   end-of-file after it can be told from a connection cut short.
public final class TLSHandler: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer
    public typealias OutboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    private enum State { case idle, handshaking, active, closing, closed }

    /// An outbound user event: close at once without close_notify, so that the peer cannot take
    /// what it received for the whole stream.
    public struct Abort: Sendable {
        public init() {}
    }

    private let connection: TLSConnection
    private let handshakeTimeout: TimeAmount
    /// Settable until the handshake completes (a listener learns from ALPN that a connection is a stream).
    public var allowHalfClosure: Bool
    private var state = State.idle
    /// The peer's close_notify arrived (half-closure).
    private var inputEnded = false
    /// We sent close_notify (half-closure).
    private var outputEnded = false
    private var timeout: Scheduled<Void>?
    private var heldWrites: [(ByteBuffer, EventLoopPromise<Void>?)] = []
    private var unflushedPromises: [EventLoopPromise<Void>] = []
    /// Plaintext is handed up in chunks of at most this size (16 KiB TLS records are gathered).
    private let readChunk = 64 * 1024

    public init(connection: TLSConnection, handshakeTimeout: TimeAmount = .seconds(10), allowHalfClosure: Bool = false) {
        self.connection = connection
        self.handshakeTimeout = handshakeTimeout
        self.allowHalfClosure = allowHalfClosure
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
        } else if allowHalfClosure, !inputEnded {
            // A stream whose connection closed before the peer's close_notify is cut short, even
            // when NIO saw no end-of-file of its own (it closes outright once both halves are shut).
            context.fireErrorCaught(TLSError(.truncated, "the connection ended without a TLS close_notify"))
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

    /// The TCP end-of-file (seen only with `allowRemoteHalfClosure`): fine after close_notify,
    /// a truncation before it.
    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard let e = event as? ChannelEvent, e == .inputClosed else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        connection.receiveEOF()
        switch state {
        case .handshaking:
            fail(context: context, TLSError(.truncated, "the connection ended during the TLS handshake"))
        case .active, .closing:
            if !inputEnded { deliverPlaintext(context: context) }
        case .idle, .closed:
            break
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
        while (state == .active || state == .closing) && !inputEnded {
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
                if allowHalfClosure {
                    inputEnded = true
                    context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
                } else {
                    // close_notify: answer with ours and close.
                    close(context: context, mode: .all, promise: nil)
                }
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
        case .active where outputEnded:
            promise?.fail(ChannelError.outputClosed)
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
    private func flushCiphertext(context: ChannelHandlerContext, written: EventLoopPromise<Void>? = nil) {
        let pending = connection.pendingCiphertext
        var promises = unflushedPromises
        unflushedPromises = []
        if let written { promises.append(written) }
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

    /// Sends close_notify, and closes (`mode`) once it is written: a close right away could drop it
    /// from NIO's pending writes when the socket is busy.
    private func closeAfterCloseNotify(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        connection.shutdown()
        let written = context.eventLoop.makePromise(of: Void.self)
        flushCiphertext(context: context, written: written)
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        written.futureResult.whenComplete { _ in
            loopBound.value.close(mode: mode, promise: promise)
        }
    }

    public func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard event is Abort else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        if state != .closed { state = .closing }
        timeout?.cancel()
        failHeldWrites(ChannelError.ioOnClosedChannel)
        // A reset, not a FIN: a FIN waits behind every byte the peer has not read yet, so a peer
        // that stopped reading (its window full) would not learn of the cut until our orphaned
        // socket gave up (seen: 8 s, at TCP_USER_TIMEOUT).
        _ = (context.channel as? any SocketOptionProvider)?.setSoLinger(linger(l_onoff: 1, l_linger: 0))
        context.close(promise: promise)
    }

    public func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if mode == .output {
            guard state == .active, allowHalfClosure, !outputEnded else {
                promise?.fail(ChannelError.operationUnsupported)
                return
            }
            outputEnded = true
            closeAfterCloseNotify(context: context, mode: .output, promise: promise)
            return
        }
        switch state {
        case .active:
            state = .closing
            closeAfterCloseNotify(context: context, mode: mode, promise: promise)
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
