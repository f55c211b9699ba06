import CHandoffXCB
import HandoffSystem

/// The X11 CLIPBOARD selection, for the desktop agent (docs/clipboard.md, "X11"): it hears when
/// another app copies (XFixes) and reads the kinds the clipboard carries, and it takes the
/// clipboard to offer another device's copy, answering each paste only when an app asks
/// (`SelectionRequest`), through the agent.
///
/// One thread of its own owns the X connection (`X11SelectionEngine`): it sleeps in poll(2) on the
/// connection and a wake-up pipe, and methods here hand it jobs.
public final class X11Clipboard: ClipboardBackend {
    public let name = "x11"
    public let events: AsyncStream<ClipboardEvent>
    private let jobs: EngineJobs<X11SelectionEngine>

    /// Connects to `display`. `maximumSize`: a kind larger than this is not read from the app
    /// that copied it.
    public static func connect(display: String, maximumSize: Int) throws(ClipboardBackendError) -> X11Clipboard {
        let (jobs, events) = try EngineJobs.start(try X11SelectionEngine(display: display, maximumSize: maximumSize), name: "handoff-x11")
        return X11Clipboard(events: events, jobs: jobs)
    }

    private init(events: AsyncStream<ClipboardEvent>, jobs: EngineJobs<X11SelectionEngine>) {
        self.events = events
        self.jobs = jobs
    }

    deinit {
        close()
    }

    public func read(_ on: Bool) { jobs.submit { $0.pause(!on) } }
    public func offer(types: [String]) { jobs.submit { $0.offer(types: types) } }
    public func withdraw() { jobs.submit { $0.withdraw() } }
    public func answer(_ request: PasteRequest, with bytes: [UInt8]?) { jobs.submit { $0.answer(request.id, with: bytes) } }
    public func close() { jobs.close() }
}
