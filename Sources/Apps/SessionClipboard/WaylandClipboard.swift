import CHandoffWayland
import HandoffModel
import HandoffSystem

#if canImport(Glibc)
import Glibc
#endif

/// The clipboard of a Wayland compositor with the data-control protocol (sway and the other
/// wlroots compositors, KDE Plasma; docs/clipboard.md, "Wayland"): what an app copies is read
/// without the agent having focus, and another device's copy is set as the clipboard, its bytes
/// written when an app pastes.
///
/// One thread of its own owns the connection (`WaylandDataControl`): it sleeps in poll(2) on the
/// connection and a wake-up pipe, and methods here hand it jobs.
public final class WaylandClipboard: ClipboardBackend {
    public let name = "wayland"
    public let events: AsyncStream<ClipboardEvent>
    private let jobs: EngineJobs<WaylandDataControl>

    /// Connects to the compositor `display` (`$WAYLAND_DISPLAY`); throws when it lacks data-control
    /// (GNOME's), which leaves a background client no way to the clipboard.
    public static func connect(display: String, maximumSize: Int) throws(ClipboardBackendError) -> WaylandClipboard {
        let (jobs, events) = try EngineJobs.start(try WaylandDataControl(display: display, maximumSize: maximumSize), name: "handoff-wayland")
        return WaylandClipboard(events: events, jobs: jobs)
    }

    private init(events: AsyncStream<ClipboardEvent>, jobs: EngineJobs<WaylandDataControl>) {
        self.events = events
        self.jobs = jobs
    }

    deinit {
        close()
    }

    public func read(_ on: Bool) { jobs.submit { $0.paused = !on } }
    public func offer(types: [String]) { jobs.submit { $0.offer(types: types) } }
    public func withdraw() { jobs.submit { $0.withdraw() } }
    public func answer(_ request: PasteRequest, with bytes: [UInt8]?) { jobs.submit { $0.answer(request.id, with: bytes) } }
    public func close() { jobs.close() }
}

/// The Wayland connection and everything done on it, confined to the clipboard's thread.
///
/// Reading: each new clipboard offer names its types first; then, unless a password manager
/// marked it, each carried type is received through a pipe (at most `maximumSize`, at most
/// `stepTimeout` of silence). Offering: a data-control source with the carried types, set as the
/// clipboard; each paste is a `send` with a descriptor, answered with the agent's bytes on a
/// thread of its own (a slow app never holds up this one).
final class WaylandDataControl: ClipboardEngine, @unchecked Sendable {
    private let display: OpaquePointer
    private let maximumSize: Int
    /// Where the C side tells events (it outlives the connection: freed in `disconnect`).
    private let callbacks: UnsafeMutablePointer<handoff_wl_events>
    private var registry: OpaquePointer?
    private var seat: OpaquePointer?
    private var manager: OpaquePointer?
    private var device: OpaquePointer?
    /// Offers told and not yet destroyed, with the types each named.
    private var offers: [OpaquePointer: [String]] = [:]
    private var selection: OpaquePointer?
    private var source: OpaquePointer?
    /// The clipboard holds our own offer (its types carry `ClipboardTargets.ownMarker`).
    private var holdingOwn = false
    /// We cleared the clipboard holding our offer: the empty clipboard that follows is our doing.
    private var clearedOwn = false
    private var post: AsyncStream<ClipboardEvent>.Continuation?
    var paused = true
    /// Pastes asked of us: the descriptor to write each to.
    private var pending: [Int: Int32] = [:]
    private var nextRequest = 0
    /// Our source's types, as offered → as carried.
    private var offered: [String: String] = [:]
    private var finished = false

    static let stepTimeout: Duration = .seconds(5)

    init(display name: String, maximumSize: Int) throws(ClipboardBackendError) {
        guard let display = wl_display_connect(name) else {
            throw ClipboardBackendError("cannot connect to the Wayland compositor \(name)")
        }
        self.display = display
        self.maximumSize = maximumSize
        callbacks = UnsafeMutablePointer<handoff_wl_events>.allocate(capacity: 1)
        callbacks.initialize(to: handoff_wl_events(context: nil, event: nil))
        callbacks.pointee.context = Unmanaged.passUnretained(self).toOpaque()
        callbacks.pointee.event = { context, event in
            guard let context, let event else { return }
            Unmanaged<WaylandDataControl>.fromOpaque(context).takeUnretainedValue().handle(event.pointee)
        }
        registry = handoff_wl_registry(display, callbacks)
        // The globals, then (with the device) the clipboard as it is: not a copy now.
        guard wl_display_roundtrip(display) >= 0, let manager, let seat else {
            disconnect()
            throw ClipboardBackendError(
                "the Wayland compositor \(name) has no data-control protocol (GNOME's has none): the clipboard is not shared from this session"
            )
        }
        device = handoff_wl_get_device(manager, seat, callbacks)
        _ = wl_display_roundtrip(display)
    }

    func disconnect() {
        for offer in offers.keys { handoff_wl_offer_destroy(offer) }
        offers = [:]
        if let source { handoff_wl_source_destroy(source) }
        source = nil
        for fd in pending.values { Glibc.close(fd) }
        pending = [:]
        wl_display_flush(display)
        wl_display_disconnect(display)
        callbacks.deallocate()
    }

    func run(jobs: EngineJobs<WaylandDataControl>, post: AsyncStream<ClipboardEvent>.Continuation) {
        self.post = post
        let fd = wl_display_get_fd(display)
        while !jobs.closing.load(ordering: .acquiring), !finished {
            for job in jobs.take() { job(self) }
            while wl_display_prepare_read(display) != 0 {
                guard wl_display_dispatch_pending(display) >= 0 else { return }
            }
            _ = wl_display_flush(display)
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: jobs.wake.read, events: Int16(POLLIN), revents: 0)]
            _ = SystemCall.retrying { poll(&fds, 2, -1) }
            if fds[0].revents != 0 {
                guard wl_display_read_events(display) == 0 else { return }
            } else {
                wl_display_cancel_read(display)
            }
            guard wl_display_dispatch_pending(display) >= 0 else { return }
            if fds[1].revents != 0 { jobs.drain() }
        }
    }

    // MARK: Events

    private func handle(_ event: handoff_wl_event) {
        switch event.kind {
        case HANDOFF_WL_GLOBAL:
            let interface = event.text.map { String(cString: $0) } ?? ""
            if interface == "wl_seat", seat == nil {
                seat = handoff_wl_bind_seat(registry, event.number, event.version)
            } else if interface == "zwlr_data_control_manager_v1", manager == nil {
                manager = handoff_wl_bind_data_control(registry, event.number, event.version)
            }
        case HANDOFF_WL_OFFER:
            if let offer = event.offer, offers.count < 64 { offers[offer] = [] } else if let offer = event.offer { handoff_wl_offer_destroy(offer) }
        case HANDOFF_WL_OFFER_TYPE:
            if let offer = event.offer, let text = event.text, offers[offer] != nil, offers[offer]!.count < 512 {
                offers[offer]!.append(String(cString: text))
            }
        case HANDOFF_WL_SELECTION:
            changed(to: event.offer)
        case HANDOFF_WL_PRIMARY:
            if let offer = event.offer { forget(offer) }
        case HANDOFF_WL_SEND:
            asked(event)
        case HANDOFF_WL_CANCELLED:
            guard let cancelled = event.source else { return }
            handoff_wl_source_destroy(cancelled)
            if cancelled == source {
                source = nil
                offered = [:]
                post?.yield(.offerEnded)
            }
        case HANDOFF_WL_FINISHED:
            finished = true
        default:
            break
        }
    }

    private func forget(_ offer: OpaquePointer) {
        if offers.removeValue(forKey: offer) != nil { handoff_wl_offer_destroy(offer) }
    }

    /// The clipboard changed hands (`offer`: what it holds now, nil: nothing).
    private func changed(to offer: OpaquePointer?) {
        if let old = selection, old != offer { forget(old) }
        selection = offer
        // Before `run`: the clipboard as the agent found it, not a copy.
        guard let post else { return }
        let own = offer.map { offers[$0]?.contains(ClipboardTargets.ownMarker) == true } ?? false
        let ours = own || (offer == nil && clearedOwn)
        holdingOwn = own
        clearedOwn = false
        // Our offer, or its end: nobody copied anything.
        if ours { return }
        guard !paused else {
            post.yield(.notRead)
            return
        }
        guard let offer else {
            post.yield(.copied(forms: [], secret: false))
            return
        }
        let types = offers[offer] ?? []
        var secret = ClipboardNotice.isSecret(types: types, hint: nil)
        if !secret, types.contains(ClipboardNotice.secretHint) {
            // A hint that cannot be read counts as a secret.
            let hint = receive(ClipboardNotice.secretHint, from: offer, limit: 64).map { String(decoding: $0, as: UTF8.self) }
            secret = hint == nil || ClipboardNotice.isSecret(types: types, hint: hint)
        }
        guard !secret else {
            post.yield(.copied(forms: [], secret: true))
            return
        }
        var forms: [ClipboardForm] = []
        for kind in ClipboardTargets.readable(from: types) {
            if let bytes = receive(kind.target, from: offer, limit: maximumSize) { forms.append(ClipboardForm(type: kind.type, bytes: bytes)) }
        }
        post.yield(.copied(forms: forms, secret: false))
    }

    /// Type `type` of `offer`, through a pipe: nil when it is over `limit`, or its owner stops
    /// writing for `stepTimeout` before the end.
    private func receive(_ type: String, from offer: OpaquePointer, limit: Int) -> [UInt8]? {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        handoff_wl_offer_receive(offer, type, ends[1])
        Glibc.close(ends[1])
        _ = wl_display_flush(display)
        defer { Glibc.close(ends[0]) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        let timeout = Int32(Self.stepTimeout.components.seconds * 1000)
        while true {
            var fds = [pollfd(fd: ends[0], events: Int16(POLLIN), revents: 0)]
            guard SystemCall.retrying({ poll(&fds, 1, timeout) }) > 0 else { return nil }
            let n = SystemCall.retrying { read(ends[0], &chunk, chunk.count) }
            if n == 0 { return bytes }
            guard n > 0, bytes.count + n <= limit else { return nil }
            bytes += chunk[0..<n]
        }
    }

    // MARK: Offering another device's copy

    func offer(types: [String]) {
        withdraw()
        let targets = ClipboardTargets.offered(for: types)
        guard !targets.isEmpty, let manager, let device else { return }
        offered = Dictionary(targets.map { ($0.target, $0.type) }, uniquingKeysWith: { first, _ in first })
        var names = (targets.map(\.target) + [ClipboardTargets.ownMarker]).map { strdup($0) }
        defer { names.forEach { free($0) } }
        let made = names.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) { list in
                handoff_wl_offer(manager, device, list, Int32(buffer.count), callbacks)
            }
        }
        source = made
    }

    func withdraw() {
        guard let current = source else { return }
        source = nil
        offered = [:]
        // Destroying the source that is the clipboard empties it: our doing, not a copy.
        if holdingOwn { clearedOwn = true }
        handoff_wl_source_destroy(current)
    }

    private func asked(_ event: handoff_wl_event) {
        let fd = event.fd
        guard let from = event.source, from == source, let text = event.text, let type = offered[String(cString: text)], pending.count < 64 else {
            if fd >= 0 { Glibc.close(fd) }
            return
        }
        nextRequest += 1
        pending[nextRequest] = fd
        post?.yield(.pasteRequested(PasteRequest(id: nextRequest, type: type)))
    }

    func answer(_ id: Int, with bytes: [UInt8]?) {
        guard let fd = pending.removeValue(forKey: id) else { return }
        guard let bytes else {
            Glibc.close(fd)
            return
        }
        // On a thread of its own: the app reads at its pace, or never.
        if !BlockingThread.detach(name: "handoff-paste", { Self.write(bytes, to: fd) }) { Glibc.close(fd) }
    }

    /// Writes `bytes` to an app's pipe and closes it; an app that stopped reading (30 s without
    /// taking anything) or went away is let go (SIGPIPE is blocked on this thread, so its write
    /// fails instead of ending the agent).
    private static func write(_ bytes: [UInt8], to fd: Int32) {
        var pipeSignal = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var offset = 0
        while offset < bytes.count {
            var ready = [pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)]
            guard SystemCall.retrying({ poll(&ready, 1, 30_000) }) > 0 else { break }
            let n = bytes.withUnsafeBytes { raw in SystemCall.retrying { Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset) } }
            if n < 0, errno == EAGAIN { continue }
            guard n > 0 else { break }
            offset += n
        }
        Glibc.close(fd)
        // A SIGPIPE raised meanwhile is taken here, never delivered.
        var zero = timespec(tv_sec: 0, tv_nsec: 0)
        _ = sigtimedwait(&pipeSignal, nil, &zero)
    }
}
