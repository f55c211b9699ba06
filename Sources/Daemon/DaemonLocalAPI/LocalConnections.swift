import DaemonCore
import HandoffAPI
import HandoffSystem
import NIOCore
import Synchronization

/// The local API's open connections as a value (docs/local-api.md, "Who may connect"): at most
/// `maximum` at once — one more is turned away with a word, so that an app that leaks connections
/// costs handoffd a bounded amount of memory — and, when a burst of them is over, the memory it
/// took is given back to the system, once (glibc keeps what freed connections held otherwise).
struct LocalConnectionBudget: Sendable, Equatable {
    /// A burst: this many open at once since memory was last given back.
    static let burst = 64
    /// … is over once no more than this many are open.
    static let quiet = 8
    /// At most this many turned away are answered at once; beyond them, one is closed at once
    /// unanswered: descriptors stay bounded, whatever an app opens.
    static let answeredRefusals = 64

    let maximum: Int
    /// Connections served now.
    private(set) var served = 0
    /// Connections turned away with an answer, not closed yet.
    private(set) var answering = 0
    /// Connections open now, those turned away (and not closed yet) too: a burst's memory is
    /// theirs as well.
    private(set) var open = 0
    /// The most open at once since memory was last given back.
    private(set) var peak = 0
    /// Connections were turned away since one served last closed.
    private var refusing = false

    init(maximum: Int) {
        self.maximum = maximum
    }

    enum Admission: Equatable {
        case admitted
        /// Over the maximum: told so; `first`, the first turned away since one closed (worth a
        /// log line).
        case refused(first: Bool)
        /// Over the maximum, and `answeredRefusals` are being told so already: closed at once.
        case dropped
    }

    /// A connection came: whether it is served, or turned away.
    mutating func opened() -> Admission {
        open += 1
        peak = max(peak, open)
        guard served < maximum else {
            guard answering < Self.answeredRefusals else { return .dropped }
            answering += 1
            defer { refusing = true }
            return .refused(first: !refusing)
        }
        served += 1
        return .admitted
    }

    /// A connection closed, admitted as `admission`: whether a burst just ended — give the
    /// memory back now.
    mutating func closed(_ admission: Admission) -> Bool {
        open = max(0, open - 1)
        switch admission {
        case .admitted:
            served = max(0, served - 1)
            refusing = false
        case .refused:
            answering = max(0, answering - 1)
        case .dropped:
            break
        }
        guard peak >= Self.burst, open <= Self.quiet else { return false }
        peak = open
        return true
    }
}

/// `LocalConnectionBudget` for the server's connections, and what its decisions do.
final class LocalConnections: Sendable {
    private let budget: Mutex<LocalConnectionBudget>
    /// Gives the memory a burst took back (malloc_trim): on a thread of its own, never the loop's.
    private let burstEnded: @Sendable () -> Void

    init(maximum: Int, burstEnded: @escaping @Sendable () -> Void) {
        self.budget = Mutex(LocalConnectionBudget(maximum: maximum))
        self.burstEnded = burstEnded
    }

    var maximum: Int { budget.withLock { $0.maximum } }

    /// Counts `channel` in until it closes: served, or turned away when too many are.
    func admit(_ channel: any Channel) -> LocalConnectionBudget.Admission {
        let admission = budget.withLock { $0.opened() }
        channel.closeFuture.whenComplete { [self] _ in
            guard budget.withLock({ $0.closed(admission) }) else { return }
            // A moment later: the tasks and buffers of the last connections are freed by then.
            let burstEnded = self.burstEnded
            channel.eventLoop.scheduleTask(in: Self.settle) { burstEnded() }
        }
        return admission
    }

    /// How long after a burst ended its memory is given back.
    static let settle: TimeAmount = .seconds(1)

    /// The memory of a burst, back to the system (`LinuxCalls.releaseFreeMemory`).
    /// (Without a thread to do it on, not at all: it walks the whole heap, never on the loop.)
    static let releaseMemory: @Sendable () -> Void = {
        _ = BlockingThread.detach(name: "handoff-trim") { LinuxCalls.releaseFreeMemory() }
    }
}

/// A connection over `LocalConnections.maximum`: told so in HTTP — `429` with `rate_limited` —
/// whatever it asks (it may not have asked yet: the answer waits in its socket), then closed once
/// it hangs up or `linger` passes (a second: time for its request to go, so that it reads the
/// answer rather than failing to send). Nothing of it is read: it costs a channel and this handler.
final class TooManyConnections: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let maximum: Int
    let linger: TimeAmount

    init(maximum: Int, linger: TimeAmount) {
        self.maximum = maximum
        self.linger = linger
    }

    static func answer(maximum: Int) -> [UInt8] {
        let error = APIErrorBody(
            code: .rateLimited,
            message: "handoffd has \(maximum) local connections open already; close some (an app may be leaking them) and try again"
        )
        let body = (try? LocalAPIJSON.encoder().encode(error)).map { Array($0) } ?? []
        let head = "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\ncontent-length: \(body.count)\r\nconnection: close\r\n\r\n"
        return Array(head.utf8) + body
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { answer(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        answer(context)
        context.fireChannelActive()
    }

    /// Closing at once could make the client's request fail to send before it reads the answer:
    /// only our side is shut, and the rest waits for it to hang up, at most `linger`.
    private func answer(_ context: ChannelHandlerContext) {
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(channel.allocator.buffer(bytes: Self.answer(maximum: maximum)))).whenComplete { _ in
            channel.close(mode: .output, promise: nil)
        }
        let closing = context.eventLoop.scheduleTask(in: linger) { channel.close(promise: nil) }
        channel.closeFuture.whenComplete { _ in closing.cancel() }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let e = event as? ChannelEvent, e == .inputClosed { context.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
