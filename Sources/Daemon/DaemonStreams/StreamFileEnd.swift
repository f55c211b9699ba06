import DaemonCore
import Dispatch
import HandoffAPI
import HandoffModel
import HandoffSystem
import HandoffTLS
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A file handoffctl handed over for a stream (on the file socket), and what to do with it. Owns
/// the descriptor: closed when the last user lets go.
package final class StreamFile: Sendable {
    let descriptor: Int32
    let role: FileStreamRequest.Role
    /// (Sending) what the file was offered as: it is checked as it is read, so that a file
    /// changed since — even under the same size and modification time — never leaves whole.
    let offered: Offered?

    /// A file's size and SHA-256 (64 lowercase hexadecimal digits) when it was offered.
    package struct Offered: Sendable, Equatable {
        let size: Int64
        let sha256: String

        package init(size: Int64, sha256: String) {
            self.size = size
            self.sha256 = sha256
        }
    }

    /// Takes `descriptor` if it can serve `role`; closes it and throws otherwise.
    package init(descriptor: Int32, role: FileStreamRequest.Role, offered: Offered? = nil) throws(DaemonError) {
        self.descriptor = descriptor
        self.role = role
        self.offered = offered
        try check()
    }

    deinit {
        // close(2) flushes: on NFS it waits for the written pages, on FUSE for a round trip.
        // Never on the event loop, where the last reference usually goes.
        let descriptor = self.descriptor
        if !BlockingThread.detach(name: "handoff-close", { _ = close(descriptor) }) { close(descriptor) }
    }

    /// A regular file's size (nil for /dev/null and the like).
    var size: Int64? {
        var st = stat()
        guard fstat(descriptor, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { return nil }
        return Int64(st.st_size)
    }

    /// Regular files (and /dev/null) only: their reads and writes end, so a thread doing them ends
    /// too. A pipe or terminal could block it for ever; those go through the stream upgrade.
    private func check() throws(DaemonError) {
        guard HandedOverFile.isAccepted(descriptor) else {
            throw DaemonError(
                .badRequest,
                "the file socket takes regular files (and /dev/null); stream a pipe, socket or terminal through the local API's upgrade instead"
            )
        }
        let mode = fcntl(descriptor, F_GETFL) & O_ACCMODE
        switch role {
        case .send where mode == O_WRONLY:
            throw DaemonError(.badRequest, "the file to send was not opened for reading")
        case .receive where mode == O_RDONLY:
            throw DaemonError(.badRequest, "the file to receive into was not opened for writing")
        default:
            break
        }
    }

}

/// The app's end of a stream whose app handed handoffd a file: handoffd reads the file (`send`)
/// or writes it (`receive`) itself: on the event loop while that cannot block (RWF_NOWAIT: the
/// bytes are in the page cache, or the file is /dev/null), else on a thread of its own (file I/O
/// blocks; the event loop must not). Reading on the loop is what makes a file stream fast: the
/// chunk goes to encryption while still in the CPU's cache, with no thread to wake (bench/streams).
/// It sits in the file-socket connection's pipeline, which carries no stream bytes: that
/// connection closing early fails the stream like an app hanging up, and the stream's outcome is
/// written on it as its last line before it closes.
///
/// Same contract as `StreamGlue` towards the other end: reads are paced by the other end's
/// `readMore`, writes queue at most `queueLimit` before the other end is left to wait.
final class StreamFileEnd: ChannelDuplexHandler, StreamSpliceEnd {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    static let chunkSize = 128 * 1024
    static let queueLimit = 512 * 1024

    private let file: StreamFile
    private let splice: StreamSplice
    private var context: ChannelHandlerContext?
    private var me: StreamSplice.End?
    private var partner: StreamSplice.End?
    private var worker: FileWorker?
    private var inputEnded = false
    private var closing = false
    /// Whether I/O is tried on the loop first; off once the file said it cannot tell (EOPNOTSUPP).
    private var tryOnLoop = true
    /// A read is with the worker; reads asked for meanwhile wait for it (one file offset).
    private var workerReading = false
    private var readsWaiting = 0
    /// What the other end asked before our `start` ran (its start can run first on another loop).
    private var beforeStart: [(StreamFileEnd) -> Void] = []
    /// (Sending a file offered with its hash) what was read of it so far.
    private var checking: OfferCheck?

    init(_ file: StreamFile, splice: StreamSplice) {
        self.file = file
        self.splice = splice
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        guard context.channel.isActive else {
            splice.inactive(.local)
            return
        }
        let me = StreamSplice.End(self, eventLoop: context.eventLoop)
        self.me = me
        splice.attach(me, side: .local)
    }

    func start(partner: StreamSplice.End) {
        guard let context, !closing else { return }
        self.partner = partner
        guard let worker = FileWorker(file: file, owner: NIOLoopBound(self, eventLoop: context.eventLoop), allocator: context.channel.allocator) else {
            splice.fail("handoffd cannot start a thread for the file (too many threads); try again when fewer streams run")
            return
        }
        self.worker = worker
        if file.role == .send, let offered = file.offered { checking = OfferCheck(offered) }
        let early = beforeStart
        beforeStart = []
        early.forEach { $0(self) }
        if file.role == .send { readMore() }
    }

    // MARK: From the file (send)

    func readMore() {
        guard file.role == .send, let worker, !inputEnded, !closing else { return }
        guard !workerReading else {
            readsWaiting += 1
            return
        }
        if tryOnLoop {
            switch FileWorker.read(file.descriptor, allocator: worker.allocator, wait: false) {
            case .wouldBlock: break
            case .unsupported: tryOnLoop = false
            case let result:
                read(result)
                return
            }
        }
        workerReading = true
        worker.readMore()
    }

    /// The worker read a chunk, the end of the file, or failed.
    fileprivate func workerRead(_ result: FileWorker.ReadResult) {
        workerReading = false
        read(result)
        while readsWaiting > 0, !workerReading {
            readsWaiting -= 1
            readMore()
        }
    }

    private func read(_ result: FileWorker.ReadResult) {
        guard let partner, let me, !inputEnded, !closing else { return }
        switch result {
        case .data(let read):
            var chunk = read
            let verdict = checking?.read(&chunk) ?? .more
            if case .differs(let reason) = verdict {
                // Before this chunk goes: what left is less than the whole, and the other device
                // sees a broken stream, not a short one.
                splice.fail(reason)
                return
            }
            splice.record.sent(chunk.readableBytes)
            let sending = chunk
            partner.later { $0.write([sending], wake: me) }
            // All that was offered went, and it is what was offered: a file grown since ends here.
            if verdict == .whole { endOfFile(partner) }
        case .end:
            if let checking, case .differs(let reason) = checking.ended() {
                splice.fail(reason)
                return
            }
            endOfFile(partner)
        case .failed(let errno):
            splice.fail("cannot read the file being sent: \(SystemCall.describe(errno))")
        case .wouldBlock, .unsupported:
            break  // only from attempts on the loop, handled there
        }
    }

    private func endOfFile(_ partner: StreamSplice.End) {
        inputEnded = true
        splice.inputEnded(.local)
        partner.later { $0.closeOutput() }
    }

    // MARK: To the file (receive)

    func write(_ chunks: [ByteBuffer], wake reader: StreamSplice.End) {
        guard !closing else { return }
        guard let worker else {
            beforeStart.append { $0.write(chunks, wake: reader) }
            return
        }
        switch file.role {
        case .send:
            // What the other app sends is not kept.
            reader.readMore()
        case .receive:
            var rest = chunks[...]
            // On the loop only while nothing waits for the worker: writes keep their order.
            if tryOnLoop, worker.hasNothingToWrite {
                let error: Int32
                (rest, error) = FileWorker.write(rest, to: file.descriptor, wait: false)
                if rest.isEmpty {
                    reader.readMore()
                    return
                }
                // Whatever stopped it (EAGAIN, or the flag itself refused), the worker's plain
                // write goes on from there and reports a real failure.
                if error == EOPNOTSUPP || error == EINVAL { tryOnLoop = false }
            }
            if worker.write(Array(rest), wake: reader) { reader.readMore() }
        }
    }

    func closeOutput() {
        guard !closing else { return }
        guard let worker else {
            beforeStart.append { $0.closeOutput() }
            return
        }
        switch file.role {
        case .send: splice.delivered(from: .peer)
        case .receive: worker.finishWriting()
        }
    }

    /// Everything from the other app is in the file. Only now does our (empty) direction end:
    /// until then an originator that hangs up early breaks the stream instead of ending it.
    fileprivate func written(_ failure: Int32?) {
        guard !closing, let partner else { return }
        if let failure {
            splice.fail("cannot write the file: \(SystemCall.describe(failure))")
            return
        }
        splice.delivered(from: .peer)
        guard !inputEnded else { return }
        inputEnded = true
        splice.inputEnded(.local)
        partner.later { $0.closeOutput() }
    }

    // MARK: The connection

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // The client has nothing more to say after its request; whatever it sends is dropped.
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        splice.inactive(.local)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        splice.fail(splice.describe(error, on: .local))
    }

    /// The splice closes the app's end when the stream is over: the outcome goes out first.
    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        guard !closing else {
            context.close(mode: mode, promise: promise)
            return
        }
        stop()
        let line = FileStreamReply.line(FileStreamReply(stream: splice.record.info), allocator: context.channel.allocator)
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(line)).whenComplete { _ in
            loopBound.value.close(mode: mode, promise: promise)
        }
    }

    /// The context holds this handler and the handler its context: let go of it, or neither (nor
    /// the file, the splice and both channels) is ever freed.
    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
        self.context = nil
    }

    private func stop() {
        closing = true
        worker?.stop()
        // The ends refer to each other and to themselves: let go.
        (worker, partner, me, beforeStart) = (nil, nil, nil, [])
    }
}

@available(*, unavailable)
extension StreamFileEnd: Sendable {}

/// A file being sent against what it was offered as (`StreamFile.Offered`): its bytes are hashed
/// as they are read, and the verdict is in before the last of them leaves.
struct OfferCheck {
    enum Verdict: Equatable {
        case more
        /// Exactly the size offered was read, and its SHA-256 is the one offered.
        case whole
        case differs(String)
    }

    let offered: StreamFile.Offered
    private var read: Int64 = 0
    private var digest: Crypto.SHA256Digest? = Crypto.SHA256Digest()

    init(_ offered: StreamFile.Offered) {
        self.offered = offered
    }

    /// Takes the next chunk read, cut to what is left of the size offered (a file grown since
    /// is sent as it was offered, if its start is still that).
    mutating func read(_ chunk: inout ByteBuffer) -> Verdict {
        guard let digest else { return .differs("the file was read past the size offered") }
        let left = Int(offered.size - read)
        if chunk.readableBytes > left { chunk.moveWriterIndex(to: chunk.readerIndex + left) }
        read += Int64(chunk.readableBytes)
        chunk.withUnsafeReadableBytes { digest.update($0) }
        guard read == offered.size else { return .more }
        self.digest = nil
        return digest.finish().lowercaseHex == offered.sha256
            ? .whole : .differs("the file changed since it was offered (its SHA-256 differs); the rest was not sent")
    }

    /// The file ended: a file shorter than offered is not what was offered.
    func ended() -> Verdict {
        guard let digest else { return .whole }
        guard read == offered.size else {
            return .differs("the file ended after \(read) of the \(offered.size) bytes offered; the rest was not sent")
        }
        // Offered empty: only the hash of nothing passes.
        return digest.finish().lowercaseHex == offered.sha256 ? .whole : .differs("the file changed since it was offered")
    }
}

extension FileStreamReply {
    /// One JSON line, as the file socket carries it.
    package static func line(_ reply: FileStreamReply, allocator: ByteBufferAllocator) -> ByteBuffer {
        var bytes = (try? LocalAPIJSON.encoder().encode(reply)).map { Array($0) } ?? Array(#"{"error":{"code":"internal","message":"cannot encode the reply"}}"#.utf8)
        bytes.append(UInt8(ascii: "\n"))
        return allocator.buffer(bytes: bytes)
    }
}

/// The thread that does a `StreamFileEnd`'s file I/O, one job at a time: read a chunk (send), or
/// write what the other device sent, then report the end (receive). Results go back to the end on
/// its event loop.
final class FileWorker: Sendable {
    enum ReadResult: Sendable {
        case data(ByteBuffer)
        case end
        case failed(Int32)
        /// (Not waiting) The bytes are not in memory.
        case wouldBlock
        /// (Not waiting) The file cannot tell.
        case unsupported
    }

    private enum Job: Sendable {
        case read
        case write([ByteBuffer], bytes: Int)
        case finish
    }

    private struct State {
        var jobs: [Job] = []
        var stopped = false
        /// Bytes handed over for writing and not written yet.
        var queued = 0
        /// The other end, waiting for room.
        var waiting: StreamSplice.End?
    }

    private let file: StreamFile
    private let owner: NIOLoopBound<StreamFileEnd>
    let allocator: ByteBufferAllocator
    private let state = Mutex(State())
    private let jobsReady = DispatchSemaphore(value: 0)

    /// Nil when no thread can be started for it.
    init?(file: StreamFile, owner: NIOLoopBound<StreamFileEnd>, allocator: ByteBufferAllocator) {
        self.file = file
        self.owner = owner
        self.allocator = allocator
        guard BlockingThread.detach(name: "handoff-file", { [self] in run() }) else { return nil }
    }

    func readMore() {
        add(.read)
    }

    /// Queues a batch; false when the queue is full and `reader` is woken once it drained. The
    /// queue counts the memory its chunks hold (a chunk may carry less than it holds).
    func write(_ chunks: [ByteBuffer], wake reader: StreamSplice.End) -> Bool {
        let bytes = chunks.reduce(0) { $0 + $1.capacity }
        let room = state.withLock { s -> Bool in
            s.jobs.append(.write(chunks, bytes: bytes))
            s.queued += bytes
            guard s.queued > StreamFileEnd.queueLimit else { return true }
            s.waiting = reader
            return false
        }
        jobsReady.signal()
        return room
    }

    /// Every write handed over was done (only the loop hands them over, so this stays true until it does).
    var hasNothingToWrite: Bool { state.withLock { $0.queued == 0 } }

    func finishWriting() {
        add(.finish)
    }

    /// Drops what is queued; the thread ends after the job at hand.
    func stop() {
        state.withLock { s in
            s.stopped = true
            s.jobs = []
            s.waiting = nil
        }
        jobsReady.signal()
    }

    private func add(_ job: Job) {
        state.withLock { $0.jobs.append(job) }
        jobsReady.signal()
    }

    private func report(_ body: @escaping @Sendable (StreamFileEnd) -> Void) {
        let owner = self.owner
        owner.eventLoop.execute { body(owner.value) }
    }

    private func run() {
        while true {
            jobsReady.wait()
            let job = state.withLock { s -> Job? in
                guard !s.stopped, !s.jobs.isEmpty else { return nil }
                return s.jobs.removeFirst()
            }
            guard let job else {
                if state.withLock({ $0.stopped }) { return }
                continue
            }
            switch job {
            case .read:
                let result = Self.read(file.descriptor, allocator: allocator, wait: true)
                report { $0.workerRead(result) }
                if case .data = result { continue }
                return
            case .write(let chunks, let bytes):
                let (unwritten, failure) = Self.write(chunks[...], to: file.descriptor, wait: true)
                if !unwritten.isEmpty {
                    report { $0.written(failure) }
                    return
                }
                let reader = state.withLock { s -> StreamSplice.End? in
                    s.queued -= bytes
                    guard s.queued <= StreamFileEnd.queueLimit / 2 else { return nil }
                    defer { s.waiting = nil }
                    return s.waiting
                }
                reader?.readMore()
            case .finish:
                report { $0.written(nil) }
                return
            }
        }
    }

    /// One chunk from the file's offset; without waiting, what is in memory or `wouldBlock`.
    static func read(_ fd: Int32, allocator: ByteBufferAllocator, wait: Bool) -> ReadResult {
        var chunk = allocator.buffer(capacity: StreamFileEnd.chunkSize)
        let (n, error) = chunk.withUnsafeMutableWritableBytes { raw in
            let n = wait ? SystemCall.retrying { Glibc.read(fd, raw.baseAddress, raw.count) } : LinuxCalls.readWithoutWaiting(fd, into: raw)
            return (n, n < 0 ? errno : 0)
        }
        if n > 0 {
            chunk.moveWriterIndex(forwardBy: n)
            return .data(chunk)
        }
        // Without waiting, only data is an answer: Linux 5.9 and 5.10 may return 0 before the
        // end of the file, and a failure may be the flag's; the thread's plain read decides.
        if !wait { return error == EOPNOTSUPP || error == EINVAL ? .unsupported : .wouldBlock }
        return n == 0 ? .end : .failed(error)
    }

    /// Writes `chunks` in order at the file's offset. Waiting, until all are written or it fails;
    /// without waiting, until the file would have to wait. What was not written, and the errno that
    /// stopped it (0 if none).
    static func write(_ chunks: ArraySlice<ByteBuffer>, to fd: Int32, wait: Bool) -> (ArraySlice<ByteBuffer>, Int32) {
        var rest = chunks
        while var chunk = rest.first {
            let (n, error) = chunk.withUnsafeReadableBytes { raw in
                let n = wait ? SystemCall.retrying { Glibc.write(fd, raw.baseAddress, raw.count) } : LinuxCalls.writeWithoutWaiting(fd, from: raw)
                return (n, n < 0 ? errno : 0)
            }
            if n == chunk.readableBytes {
                rest.removeFirst()
            } else if n > 0 {
                chunk.moveReaderIndex(forwardBy: n)
                rest[rest.startIndex] = chunk
            } else {
                return (rest, n == 0 && wait ? EIO : error)
            }
        }
        return (rest, 0)
    }
}
