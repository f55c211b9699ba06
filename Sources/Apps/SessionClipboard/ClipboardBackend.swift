import HandoffSystem
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What the session's clipboard tells the agent (docs/clipboard.md), whichever carries it: the X
/// server (`X11Clipboard`) or a Wayland compositor with data-control (`WaylandClipboard`).
public enum ClipboardEvent: Sendable, Equatable {
    /// Another app copied: the carried kinds it offers, read (none: it offers none of them), or
    /// `secret` (a password manager marked it; nothing of it was read).
    case copied(forms: [ClipboardForm], secret: Bool)
    /// Another app copied while copies are not read (`read(false)`): nothing of it was looked at.
    case notRead
    /// An app pastes `type` from what this device offers: `answer` it.
    case pasteRequested(PasteRequest)
    /// Another app took the clipboard from what this device offered.
    case offerEnded
    /// The display server went away.
    case disconnected
}

public struct ClipboardForm: Sendable, Equatable {
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

/// A session's clipboard, as the agent uses it.
public protocol ClipboardBackend: Sendable {
    /// Which one: `x11` or `wayland`.
    var name: String { get }
    var events: AsyncStream<ClipboardEvent> { get }
    /// Whether what apps copy is read (at first it is not: the agent says once handoffd told it
    /// the clipboard is shared). Not reading, a copy is not looked at at all.
    func read(_ on: Bool)
    /// Takes the clipboard, offering another device's copy in `types` (MIME types carried).
    func offer(types: [String])
    /// Gives the clipboard up, if what it holds is still this device's offer.
    func withdraw()
    /// The bytes an app's paste asked for; nil: none (it gets nothing, at once).
    func answer(_ request: PasteRequest, with bytes: [UInt8]?)
    /// Ends the thread and the connection.
    func close()
}

/// What a backend's one thread runs: its connection's loop, until it ends or is closed.
protocol ClipboardEngine: AnyObject, Sendable {
    func run(jobs: EngineJobs<Self>, post: AsyncStream<ClipboardEvent>.Continuation)
    func disconnect()
}

/// The work a backend's one thread does, asked by other threads: jobs, and a pipe that wakes it
/// from poll(2). Both of the pipe's ends live as long as this (a write to a pipe without a reader
/// would raise SIGPIPE).
final class EngineJobs<Engine: ClipboardEngine>: Sendable {
    private let jobs = Mutex<[@Sendable (Engine) -> Void]>([])
    let closing = Atomic<Bool>(false)
    let wake: (read: Int32, write: Int32)

    init() throws(ClipboardBackendError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw ClipboardBackendError("cannot make the clipboard thread's wake-up pipe: \(SystemCall.describe(errno))") }
        // Neither end blocks: the thread drains until it would, and a full pipe wakes it anyway.
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
        }
        wake = (ends[0], ends[1])
    }

    deinit {
        Glibc.close(wake.read)
        Glibc.close(wake.write)
    }

    func submit(_ job: @escaping @Sendable (Engine) -> Void) {
        guard !closing.load(ordering: .acquiring) else { return }
        jobs.withLock { $0.append(job) }
        poke()
    }

    /// The jobs asked for since the last time, in order.
    func take() -> [@Sendable (Engine) -> Void] {
        jobs.withLock { jobs in
            defer { jobs.removeAll() }
            return jobs
        }
    }

    func close() {
        guard !closing.exchange(true, ordering: .acquiringAndReleasing) else { return }
        poke()
    }

    private func poke() {
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
    }

    /// Runs `engine` on a thread of its own called `name`; its events end (`disconnected`) when
    /// the connection does.
    static func start(_ engine: Engine, name: String) throws(ClipboardBackendError) -> (EngineJobs<Engine>, AsyncStream<ClipboardEvent>) {
        let jobs: EngineJobs<Engine>
        do {
            jobs = try EngineJobs()
        } catch {
            engine.disconnect()
            throw error
        }
        // Unbounded: a paste asked for must reach the agent (or the app waits); the engines bound
        // what they ask (64 pastes waiting, one read at a time).
        let (events, post) = AsyncStream.makeStream(of: ClipboardEvent.self)
        let started = BlockingThread.detach(name: name) {
            engine.run(jobs: jobs, post: post)
            engine.disconnect()
            post.yield(.disconnected)
            post.finish()
        }
        guard started else {
            engine.disconnect()
            throw ClipboardBackendError("cannot start the clipboard thread")
        }
        return (jobs, events)
    }

    /// Empties the pipe once the thread woke.
    func drain() {
        var bytes = [UInt8](repeating: 0, count: 64)
        while read(wake.read, &bytes, bytes.count) > 0 {}
    }
}

public struct ClipboardBackendError: Error, Sendable, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
