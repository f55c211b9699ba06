import DaemonCore
import HandoffTLS
import HandoffTLSChannel
import Logging
import NIOCore
import Synchronization

/// Joins the two halves of a continuation stream: the app's end — its local-API connection that
/// became a byte pipe, or a file handoffctl handed us (`StreamFileEnd`) — and the TLS connection to
/// the other device. Bytes flow both ways; a half-close is passed
/// on after the bytes before it; each end reads again only once the other end could take what it
/// read (back-pressure from app to app, so memory stays flat however much flows); and the stream
/// gets exactly one outcome.
///
/// Orderly end: when one side's input ends, the other side's output is closed after everything
/// before it was written (an app sees end-of-file; the other device gets close_notify). When the
/// second direction ends, its bytes are flushed and both connections close. Anything else — an
/// error, a connection closing with bytes still owed to it, a TLS stream cut short — fails the
/// stream: the app's connection closes and the other device's is cut without close_notify, so
/// neither end can take a partial stream for a whole one.
final class StreamSplice: Sendable {
    typealias Side = SpliceProgress.Side

    /// One end as the other sees it: calls go to it on its own event loop.
    struct End: Sendable {
        let bound: NIOLoopBound<any StreamSpliceEnd>

        init(_ end: any StreamSpliceEnd, eventLoop: any EventLoop) {
            bound = NIOLoopBound(end, eventLoop: eventLoop)
        }

        var eventLoop: any EventLoop { bound.eventLoop }

        /// Always as a task of its own, never inside the caller's turn.
        func later(_ body: @escaping @Sendable (any StreamSpliceEnd) -> Void) {
            let bound = self.bound
            bound.eventLoop.execute { body(bound.value) }
        }

        /// At once when already on its loop (as `Channel.read()` does).
        func readMore() {
            if bound.eventLoop.inEventLoop {
                bound.value.readMore()
            } else {
                later { $0.readMore() }
            }
        }
    }

    /// What the app's end is.
    enum LocalEnd: Sendable {
        /// The local-API connection, now a byte pipe.
        case pipe
        /// A file, read or written by handoffd; the connection only waits for the outcome.
        case file(StreamFile)
    }

    private struct State {
        var progress = SpliceProgress()
        var ends: [(Side, End)] = []

        /// What `progress` says to do; once the stream is finished, the ends are let go (each
        /// holds the splice: no cycle may outlive the stream).
        mutating func decide(_ event: SpliceProgress.Event) -> SpliceProgress.Action {
            let action = progress.handle(event)
            if progress.finished { ends = [] }
            return action
        }
    }

    let record: StreamRecord
    let local: any Channel
    let localEnd: LocalEnd
    let peer: any Channel
    let peerName: String
    /// Exactly this many bytes from the other device: what was offered has a size (a paste, a
    /// document, a file of a file list), and no file or app gets more — nor takes fewer for the
    /// whole: a byte past it, or the other device ending its side before it, fails the stream.
    let announcedLength: Int64?
    private let logger: Logger
    private let state = Mutex(State())

    init(
        record: StreamRecord, local: any Channel, localEnd: LocalEnd = .pipe, peer: any Channel, peerName: String, announcedLength: Int64? = nil,
        logger: Logger
    ) {
        self.record = record
        self.local = local
        self.localEnd = localEnd
        self.peer = peer
        self.peerName = peerName
        self.announcedLength = announcedLength
        self.logger = logger
    }

    /// Adds the glue to both channels. The peer channel's pending bytes (those that came with or
    /// after the answer frame) reach the glue once `release` (run on the peer's event loop, after
    /// the glue is in place) hands them over.
    func start(release: @escaping @Sendable () -> Void) {
        let splice = self
        let joinLocal: @Sendable () -> Void = {
            do {
                switch splice.localEnd {
                case .pipe: try splice.local.pipeline.syncOperations.addHandler(StreamGlue(side: .local, splice: splice))
                case .file(let file): try splice.local.pipeline.syncOperations.addHandler(StreamFileEnd(file, splice: splice))
                }
            } catch {
                splice.fail("cannot join the app's connection: \(SocketErrorText.describe(error))")
            }
        }
        // On the local loop already (the HTTP upgrade): at once, before the bytes that followed
        // the request are replayed.
        if local.eventLoop.inEventLoop {
            joinLocal()
        } else {
            local.eventLoop.execute(joinLocal)
        }
        peer.eventLoop.execute {
            do {
                try splice.peer.pipeline.syncOperations.addHandler(StreamGlue(side: .peer, splice: splice))
                release()
            } catch {
                splice.fail("cannot join the connection to \(splice.peerName): \(SocketErrorText.describe(error))")
            }
        }
    }

    /// An end is in place; once both are, each starts reading.
    func attach(_ end: End, side: Side) {
        let ends = state.withLock { s -> [(Side, End)] in
            let action = s.decide(.endAttached(side))
            guard !s.progress.finished else { return [] }
            s.ends.append((side, end))
            return action == .start ? s.ends : []
        }
        guard !ends.isEmpty else { return }
        record.opened()
        for (side, end) in ends {
            let partner = ends.first { $0.0 == side.other }!.1
            end.later { $0.start(partner: partner) }
        }
    }

    func inputEnded(_ side: Side) {
        _ = state.withLock { $0.decide(.inputEnded(side)) }
    }

    /// Everything from `side` reached the other side, and its output was closed.
    func delivered(from side: Side) {
        guard state.withLock({ $0.decide(.delivered(from: side)) }) == .complete else { return }
        record.complete()
        let info = record.info
        logger.info(
            "continuation stream completed",
            metadata: ["stream": "\(record.id.lowercasedString)", "sent": "\(info.bytesSent)", "received": "\(info.bytesReceived)"]
        )
        local.close(promise: nil)
        peer.close(promise: nil)
    }

    /// A connection closed. Fine once both inputs ended (closing the output that ends the stream
    /// may close the whole connection; whether its last writes made it is that close's outcome);
    /// a failure while either direction still flows.
    func inactive(_ side: Side) {
        guard state.withLock({ $0.decide(.closed(side)) }) == .fail else { return }
        switch side {
        case .local: failed("the app's end of the stream closed before the stream ended")
        case .peer: failed("\(peerName) closed the stream before it ended")
        }
    }

    func fail(_ reason: String) {
        guard state.withLock({ $0.decide(.failed) }) == .fail else { return }
        failed(reason)
    }

    /// The stream's one failure: recorded, and both connections cut.
    private func failed(_ reason: String) {
        record.fail(reason)
        logger.notice("continuation stream failed", metadata: ["stream": "\(record.id.lowercasedString)", "reason": "\(reason)"])
        local.close(promise: nil)
        // Without close_notify: the other device must see a broken stream, not a short one.
        peer.triggerUserOutboundEvent(TLSHandler.Abort(), promise: nil)
    }

    func describe(_ error: any Error, on side: Side) -> String {
        switch (side, error) {
        case (.peer, let e as TLSError): "the connection to \(peerName) broke: \(e.message)"
        case (.peer, _): "the connection to \(peerName) broke: \(SocketErrorText.describe(error))"
        case (.local, _): "the app's connection failed: \(SocketErrorText.describe(error))"
        }
    }
}

/// The decisions of a `StreamSplice`, as a value (as `TXTThrottle` is): what happened to its ends
/// and directions goes in, what to do comes out — start both ends once both are in place,
/// complete once both directions were delivered, fail on a connection closing while a direction
/// still flows or on an error — and the stream gets exactly one outcome.
struct SpliceProgress: Sendable {
    enum Side: Sendable, Hashable, CustomStringConvertible {
        case local, peer

        var other: Side { self == .local ? .peer : .local }
        var description: String { self == .local ? "app" : "device" }
    }

    /// A direction, named by the side its bytes come from.
    enum Direction: Equatable, Sendable {
        case open
        /// Its source ended; the other side's output is being closed.
        case ending
        /// Everything arrived and the other side's output is closed.
        case ended
    }

    enum Event: Equatable, Sendable {
        /// An end's handler is in its channel's pipeline.
        case endAttached(Side)
        /// The side's input ended (end-of-file, close_notify).
        case inputEnded(Side)
        /// Everything from the side reached the other, whose output was then closed.
        case delivered(from: Side)
        /// The side's connection closed.
        case closed(Side)
        /// An error on either connection (or joining them).
        case failed
    }

    enum Action: Equatable, Sendable {
        case nothing
        /// Both ends are in place: each starts reading.
        case start
        /// Both directions were delivered: the stream completed; close both connections.
        case complete
        /// The stream failed: cut both connections (the other device's without close_notify).
        case fail
    }

    private var attached: Set<Side> = []
    private(set) var from: [Side: Direction] = [.local: .open, .peer: .open]
    /// An outcome was given: nothing after changes it.
    private(set) var finished = false

    mutating func handle(_ event: Event) -> Action {
        guard !finished else { return .nothing }
        switch event {
        case .endAttached(let side):
            attached.insert(side)
            return attached.count == 2 ? .start : .nothing
        case .inputEnded(let side):
            if from[side] == .open { from[side] = .ending }
            return .nothing
        case .delivered(let side):
            from[side] = .ended
            guard from.values.allSatisfy({ $0 == .ended }) else { return .nothing }
            finished = true
            return .complete
        case .closed:
            // Fine once both inputs ended: closing the output that ends the stream may close
            // the whole connection, and whether its last writes made it is that close's outcome.
            guard from.values.contains(.open) else { return .nothing }
            finished = true
            return .fail
        case .failed:
            finished = true
            return .fail
        }
    }
}

/// What one end of a splice does when the other asks; called on the end's own event loop.
protocol StreamSpliceEnd: AnyObject {
    /// Both ends are in place: hand over what arrived meanwhile, and start reading.
    func start(partner: StreamSplice.End)
    /// Bytes the other end read, to be written; `reader.readMore()` once there is room for more.
    func write(_ chunks: [ByteBuffer], wake reader: StreamSplice.End)
    /// The other side's input ended: after what was written, end our output.
    func closeOutput()
    /// The other end can take more: read again.
    func readMore()
}

/// One end of a `StreamSplice`, last in its channel's pipeline. It reads only when asked (auto-read
/// off), hands what it read to the other end in one batch per read burst, and writes what the
/// other end hands it.
final class StreamGlue: ChannelDuplexHandler, RemovableChannelHandler, StreamSpliceEnd {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let side: StreamSplice.Side
    private let splice: StreamSplice
    private var context: ChannelHandlerContext?
    private var me: StreamSplice.End?
    private var partner: StreamSplice.End?
    /// Read but not handed over yet (a burst in progress, or the partner not ready).
    private var batch: [ByteBuffer] = []
    private var inputEnded = false
    private var toldPartnerInputEnded = false
    /// The other end to wake when our channel can take more.
    private var wakeOnWritable: StreamSplice.End?
    /// The other side's input ended, so our output is closed (or closing) after its last bytes.
    private var outputClosed = false

    static let readSize = 128 * 1024

    init(side: StreamSplice.Side, splice: StreamSplice) {
        self.side = side
        self.splice = splice
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        // Bulk data: big reads (fewer syscalls, and whole TLS records), and room for a few of them
        // in flight before back-pressure stops the other side. Memory stays bounded per stream:
        // one read per demand (NIO's default of four would decrypt 512 KiB before the other end
        // can say it is full).
        if let options = context.channel.syncOptions {
            try? options.setOption(.autoRead, value: false)
            try? options.setOption(.maxMessagesPerRead, value: 1)
            try? options.setOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: StreamGlue.readSize))
            try? options.setOption(.writeBufferWaterMark, value: .init(low: StreamGlue.readSize, high: 2 * StreamGlue.readSize))
        } else {
            context.channel.setOption(ChannelOptions.autoRead, value: false).whenFailure { _ in }
        }
        guard context.channel.isActive else {
            splice.inactive(side)
            return
        }
        let me = StreamSplice.End(self, eventLoop: context.eventLoop)
        self.me = me
        splice.attach(me, side: side)
    }

    func start(partner: StreamSplice.End) {
        self.partner = partner
        handOver()
        context?.read()
    }

    func readMore() {
        context?.read()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        switch side {
        case .local:
            splice.record.sent(buffer.readableBytes)
        case .peer:
            let received = splice.record.received(buffer.readableBytes)
            if let length = splice.announcedLength, received > length {
                splice.fail("\(splice.peerName) sent more than the \(length) bytes offered")
                return
            }
        }
        batch.append(buffer)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        handOver()
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard let e = event as? ChannelEvent, e == .inputClosed else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        guard side == .local else {
            endInput()
            return
        }
        // The app's end-of-file means "done sending" only if it did not hang up altogether: an
        // app that closed (or died) loses the connection within this same event, and then
        // passing its end on would make a cut-short stream look whole on the other device.
        // So the end goes on one tick later, if the connection is still there.
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let glue = loopBound.value
            if glue.context?.channel.isActive == true { glue.endInput() }
        }
    }

    private func endInput() {
        guard !inputEnded else { return }
        if side == .peer, let length = splice.announcedLength, case let received = splice.record.info.bytesReceived, received < length {
            // A short stream is a broken one: the app must not take it for the whole.
            splice.fail("\(splice.peerName) ended the stream after \(received) of the \(length) bytes offered")
            return
        }
        inputEnded = true
        splice.inputEnded(side)
        handOver()
    }

    /// Passes the batch (and the end of input, after it) to the other end, on its event loop.
    private func handOver() {
        guard let partner, let me else { return }
        let chunks = batch
        batch = []
        let endNow = inputEnded && !toldPartnerInputEnded
        if endNow { toldPartnerInputEnded = true }
        guard !chunks.isEmpty || endNow else {
            // The burst gave nothing to pass on (a TLS record still incomplete): nobody else will
            // ask for the next read.
            if !inputEnded { context?.read() }
            return
        }
        partner.later { other in
            other.write(chunks, wake: me)
            if endNow { other.closeOutput() }
        }
    }

    /// Writes what the other end read; asks it to read again as soon as we can take more.
    func write(_ chunks: [ByteBuffer], wake reader: StreamSplice.End) {
        guard let context else { return }
        if !chunks.isEmpty {
            for chunk in chunks { context.write(wrapOutboundOut(chunk), promise: nil) }
            context.flush()
        }
        if context.channel.isWritable {
            reader.readMore()
        } else {
            wakeOnWritable = reader
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, let reader = wakeOnWritable {
            wakeOnWritable = nil
            reader.readMore()
        }
        context.fireChannelWritabilityChanged()
    }

    /// The other side's input ended: after what was written, end ours. While our own input still
    /// flows that is a half-close; otherwise both directions are done, and the stream completes
    /// once our writes are out (the splice then closes both connections).
    func closeOutput() {
        guard let context else { return }
        outputClosed = true
        let source = side.other
        let splice = self.splice
        let done = context.eventLoop.makePromise(of: Void.self)
        done.futureResult.whenComplete { result in
            switch result {
            case .success: splice.delivered(from: source)
            case .failure(let error): splice.fail(splice.describe(error, on: source.other))
            }
        }
        // When our own input is over too, NIO turns a half-close into a full close, which would
        // drop writes still pending: an empty write first completes only after them. (The TLS
        // handler waits for its own close_notify to be written before closing.)
        let flushed = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(capacity: 0)), promise: flushed)
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        flushed.futureResult.whenComplete { result in
            switch result {
            case .success: loopBound.value.close(mode: .output, promise: done)
            case .failure(let error): done.fail(error)
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        splice.fail(splice.describe(error, on: side))
    }

    func channelInactive(context: ChannelHandlerContext) {
        // The app hanging up after everything owed to it was written is an orderly end (and
        // NIO closes the whole connection at an end-of-file once our output is closed). Not so
        // from the other device: only close_notify ends that input.
        if side == .local, outputClosed { endInput() }
        splice.inactive(side)
        // The two ends refer to each other (and to themselves, through `me`): let go.
        (partner, me, wakeOnWritable) = (nil, nil, nil)
        context.fireChannelInactive()
    }

    /// The context holds this handler and the handler its context: let go of it, or neither (nor
    /// the splice and both channels, with their buffers) is ever freed.
    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        (partner, me, wakeOnWritable, batch) = (nil, nil, nil, [])
    }
}

@available(*, unavailable)
extension StreamGlue: Sendable {}
