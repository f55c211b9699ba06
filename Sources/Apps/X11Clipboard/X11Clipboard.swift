import CHandoffXCB
import HandoffSystem
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The X11 CLIPBOARD selection, for the desktop agent (docs/clipboard.md, "X11"): it hears when
/// another app copies (XFixes) and reads the kinds the clipboard carries, and it takes the
/// clipboard to offer another device's copy, answering each paste only when an app asks
/// (`SelectionRequest`), through the agent.
///
/// One thread of its own owns the X connection (`SelectionEngine`): it sleeps in poll(2) on the
/// connection and a wake-up pipe, and methods here hand it jobs.
public final class X11Clipboard: Sendable {
    public enum Event: Sendable, Equatable {
        /// Another app copied: the carried kinds it offers, read (none: it offers none of them),
        /// or `secret` (a password manager marked it; nothing of it was read).
        case copied(forms: [Form], secret: Bool)
        /// Another app copied while copies are not read (`read(false)`): nothing of it was looked at.
        case notRead
        /// An app pastes `type` from what this device offers: `answer` it.
        case pasteRequested(PasteRequest)
        /// Another app took the clipboard from what this device offered.
        case offerEnded
        /// The X server went away.
        case disconnected
    }

    public struct Form: Sendable, Equatable {
        public let type: String
        public let bytes: [UInt8]

        public init(type: String, bytes: [UInt8]) {
            self.type = type
            self.bytes = bytes
        }
    }

    public struct PasteRequest: Sendable, Hashable {
        let id: Int
        public let type: String
    }

    public let events: AsyncStream<Event>
    private let shared: Shared

    /// What the caller's threads and the engine's share: jobs, and how to wake it.
    final class Shared: Sendable {
        let jobs = Mutex<[@Sendable (SelectionEngine) -> Void]>([])
        let closing = Atomic<Bool>(false)
        let wake: (read: Int32, write: Int32)

        init(wake: (Int32, Int32)) {
            self.wake = wake
        }

        /// Both ends live as long as anyone may submit (a write to a pipe without a reader would
        /// raise SIGPIPE).
        deinit {
            Glibc.close(wake.read)
            Glibc.close(wake.write)
        }

        func submit(_ job: @escaping @Sendable (SelectionEngine) -> Void) {
            guard !closing.load(ordering: .acquiring) else { return }
            jobs.withLock { $0.append(job) }
            var byte: UInt8 = 1
            _ = write(wake.write, &byte, 1)
        }
    }

    /// Connects to `display` (nil: `$DISPLAY`). `maximumSize`: a kind larger than this is not
    /// read from the app that copied it.
    public static func connect(display: String?, maximumSize: Int) throws(X11ClipboardError) -> X11Clipboard {
        let engine = try SelectionEngine(display: display, maximumSize: maximumSize)
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            engine.disconnect()
            throw X11ClipboardError("cannot make the clipboard thread's wake-up pipe: \(SystemCall.describe(errno))")
        }
        // Neither end blocks: the thread drains until it would, and a full pipe wakes it anyway.
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
        }
        let shared = Shared(wake: (ends[0], ends[1]))
        let (events, post) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(64))
        let clipboard = X11Clipboard(events: events, shared: shared)
        let started = BlockingThread.detach(name: "handoff-x11") {
            engine.run(shared: shared, post: post)
            post.yield(.disconnected)
            post.finish()
            engine.disconnect()
        }
        guard started else {
            engine.disconnect()
            throw X11ClipboardError("cannot start the clipboard thread")
        }
        return clipboard
    }

    private init(events: AsyncStream<Event>, shared: Shared) {
        self.events = events
        self.shared = shared
    }

    deinit {
        close()
    }

    /// Whether what apps copy is read (it starts not reading: the agent says once handoffd told
    /// it the clipboard is shared). Not reading, a copy is not looked at at all.
    public func read(_ on: Bool) {
        shared.submit { $0.pause(!on) }
    }

    /// Takes the clipboard, offering another device's copy in `types` (MIME types carried).
    public func offer(types: [String]) {
        shared.submit { $0.offer(types: types) }
    }

    /// Gives the clipboard up, if what it holds is still this device's offer.
    public func withdraw() {
        shared.submit { $0.withdraw() }
    }

    /// The bytes an app's paste asked for; nil: none (it gets nothing, at once).
    public func answer(_ request: PasteRequest, with bytes: [UInt8]?) {
        shared.submit { $0.answer(request.id, with: bytes) }
    }

    /// Ends the thread and the connection.
    public func close() {
        guard !shared.closing.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var byte: UInt8 = 0
        _ = write(shared.wake.write, &byte, 1)
    }
}

public struct X11ClipboardError: Error, Sendable, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
