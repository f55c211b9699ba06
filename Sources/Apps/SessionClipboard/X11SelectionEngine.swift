import CHandoffXCB
import HandoffModel
import HandoffSystem

#if canImport(Glibc)
import Glibc
#endif

/// The X connection and everything done on it, confined to the clipboard's thread
/// (`X11Clipboard`): reading what another app copied, and serving what this device offers.
///
/// Reading (ICCCM's selection conversion): ask the owner for `TARGETS`; if a password manager
/// marked the copy, stop (reading `x-kde-passwordManagerHint` only, which says `secret` or not);
/// then ask for each carried kind in turn, taking large ones in pieces (`INCR`). A newer copy
/// restarts it; an owner that does not answer within `stepTimeout` ends it with what was read.
///
/// Serving: `TARGETS` at once; a carried kind becomes a `pasteRequested` event, answered later
/// with the bytes (in `INCR` pieces above `pieceSize`) or with nothing.
final class X11SelectionEngine: ClipboardEngine, @unchecked Sendable {
    private let connection: OpaquePointer
    private let window: xcb_window_t
    private let xfixesEvent: Int
    private let maximumSize: Int
    private var atoms: [String: xcb_atom_t] = [:]
    private var names: [xcb_atom_t: String] = [:]

    /// A copy being read.
    private struct Reading {
        var owner: xcb_window_t
        var time: xcb_timestamp_t
        var step: Step
        var forms: [ClipboardForm] = []
        var deadline: ContinuousClock.Instant
        /// Where this read's answers are written (each read its own, so a late answer to an
        /// earlier read is never taken for this one's), and the target asked for now.
        var property: xcb_atom_t
        var asked: xcb_atom_t = xcb_atom_t(XCB_NONE)

        enum Step {
            case targets
            case hint(kinds: [(type: String, target: String)])
            /// `kinds[0]` is being read; `pieces` holds what came of it in INCR pieces.
            case form(kinds: [(type: String, target: String)], pieces: [UInt8]?)
        }
    }

    private var reading: Reading?
    /// How many reads began: each takes the next of `properties`.
    private var reads = 0
    /// Who held the clipboard at the last change XFixes told.
    private var lastOwner = xcb_window_t(XCB_NONE)
    /// SelectionClear events our own withdrawals will bring (the server sends one even then).
    private var ownClears = 0
    /// Off: what apps copy is not read at all (the clipboard is not shared).
    private var paused = true
    /// What this device offers: target atom → MIME type.
    private var offered: [xcb_atom_t: String] = [:]
    /// Pastes asked of us, waiting for the agent's bytes.
    private var pending: [Int: xcb_selection_request_event_t] = [:]
    private var nextRequest = 0
    /// INCR answers under way, by requestor window and property.
    private struct Sending {
        var type: xcb_atom_t
        var bytes: [UInt8]
        var offset: Int
        var deadline: ContinuousClock.Instant
    }
    private var sending: [Pair: Sending] = [:]
    private struct Pair: Hashable {
        let window: xcb_window_t
        let property: xcb_atom_t
    }

    /// An answer above this goes in pieces of this size (`INCR`), or less where the server
    /// takes smaller requests.
    private let pieceSize: Int
    /// How long an app that copied, or one we send to in pieces, may take for each step.
    static let stepTimeout: Duration = .seconds(5)
    /// The properties on our window that conversions are written to, one read after another.
    static let properties = (0..<4).map { "HANDOFF_SELECTION_\($0)" }

    init(display: String, maximumSize: Int) throws(ClipboardBackendError) {
        var screenNumber: Int32 = 0
        guard let connection = xcb_connect(display, &screenNumber), xcb_connection_has_error(connection) == 0 else {
            throw ClipboardBackendError("cannot connect to the X display \(display)")
        }
        self.connection = connection
        self.maximumSize = maximumSize
        var screens = xcb_setup_roots_iterator(xcb_get_setup(connection))
        for _ in 0..<max(0, Int(screenNumber)) { xcb_screen_next(&screens) }
        guard let screen = screens.data?.pointee else {
            xcb_disconnect(connection)
            throw ClipboardBackendError("the X display has no screen \(screenNumber)")
        }
        let notify = handoff_xfixes_selection_notify(connection)
        guard notify >= 0, let version = xcb_xfixes_query_version_reply(connection, xcb_xfixes_query_version(connection, 5, 0), nil) else {
            xcb_disconnect(connection)
            throw ClipboardBackendError("the X server lacks the XFixes extension, which tells when something is copied")
        }
        free(version)
        xfixesEvent = Int(notify)
        window = xcb_generate_id(connection)
        var mask = [UInt32(XCB_EVENT_MASK_PROPERTY_CHANGE.rawValue)]
        xcb_create_window(
            connection, 0, window, screen.root, 0, 0, 1, 1, 0, UInt16(XCB_WINDOW_CLASS_INPUT_ONLY.rawValue), screen.root_visual,
            UInt32(XCB_CW_EVENT_MASK.rawValue), &mask
        )
        // In 4-byte units, BIG-REQUESTS' when the server has it (xcb turns it on); room left for
        // the request's own header.
        pieceSize = min(256 * 1024, Int(xcb_get_maximum_request_length(connection)) * 4 - 1024)
        for name in ["CLIPBOARD", "TARGETS", "INCR", "ATOM", "TIMESTAMP", "MULTIPLE", ClipboardTargets.utf8String, ClipboardNotice.secretHint] + Self.properties
            + ClipboardNotice.carriedTypes + Array(ClipboardNotice.secretMarkers)
        {
            _ = atom(name)
        }
        let events = XCB_XFIXES_SELECTION_EVENT_MASK_SET_SELECTION_OWNER.rawValue | XCB_XFIXES_SELECTION_EVENT_MASK_SELECTION_WINDOW_DESTROY.rawValue
            | XCB_XFIXES_SELECTION_EVENT_MASK_SELECTION_CLIENT_CLOSE.rawValue
        xcb_xfixes_select_selection_input(connection, window, atom("CLIPBOARD"), events)
        xcb_flush(connection)
        guard xcb_connection_has_error(connection) == 0 else {
            xcb_disconnect(connection)
            throw ClipboardBackendError("the X display refused the clipboard's window")
        }
    }

    func disconnect() {
        xcb_disconnect(connection)
    }

    // MARK: The loop

    func run(jobs: EngineJobs<X11SelectionEngine>, post: AsyncStream<ClipboardEvent>.Continuation) {
        let fd = xcb_get_file_descriptor(connection)
        while !jobs.closing.load(ordering: .acquiring), xcb_connection_has_error(connection) == 0 {
            for job in jobs.take() { job(self) }
            while let event = xcb_poll_for_event(connection) {
                handle(event, post: post)
                free(event)
            }
            expire(now: .now, post: post)
            xcb_flush(connection)
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: jobs.wake.read, events: Int16(POLLIN), revents: 0)]
            _ = SystemCall.retrying { poll(&fds, 2, pollTimeout(now: .now)) }
            if fds[1].revents != 0 { jobs.drain() }
        }
    }

    /// Until the next deadline (a step of a read or of a send), or for ever.
    private func pollTimeout(now: ContinuousClock.Instant) -> Int32 {
        let deadlines = [reading?.deadline].compactMap { $0 } + sending.values.map(\.deadline)
        guard let next = deadlines.min() else { return -1 }
        let left = next - now
        return left <= .zero ? 0 : Int32(min(60_000, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1))
    }

    private func expire(now: ContinuousClock.Instant, post: AsyncStream<ClipboardEvent>.Continuation) {
        if let reading, reading.deadline <= now { finishReading(post: post) }
        for (pair, send) in sending where send.deadline <= now { sending[pair] = nil }
    }

    private func handle(_ event: UnsafeMutablePointer<xcb_generic_event_t>, post: AsyncStream<ClipboardEvent>.Continuation) {
        let type = Int(handoff_event_type(event))
        let raw = UnsafeRawPointer(event)
        switch type {
        case xfixesEvent:
            let notify = raw.loadUnaligned(as: xcb_xfixes_selection_notify_event_t.self)
            copied(owner: notify.owner, time: notify.selection_timestamp, post: post)
        case Int(XCB_SELECTION_NOTIFY):
            let notify = raw.loadUnaligned(as: xcb_selection_notify_event_t.self)
            converted(notify, post: post)
        case Int(XCB_PROPERTY_NOTIFY):
            let notify = raw.loadUnaligned(as: xcb_property_notify_event_t.self)
            propertyChanged(notify, post: post)
        case Int(XCB_SELECTION_REQUEST):
            asked(raw.loadUnaligned(as: xcb_selection_request_event_t.self), post: post)
        case Int(XCB_SELECTION_CLEAR):
            let clear = raw.loadUnaligned(as: xcb_selection_clear_event_t.self)
            // The clear our own withdrawal caused may come after a new offer: not its end.
            if clear.selection == atom("CLIPBOARD"), ownClears > 0 {
                ownClears -= 1
            } else if clear.selection == atom("CLIPBOARD"), !offered.isEmpty {
                offered = [:]
                post.yield(.offerEnded)
            }
        default:
            break
        }
    }

    // MARK: Reading what another app copied

    func pause(_ paused: Bool) {
        self.paused = paused
        if paused { reading = nil }
    }

    private func copied(owner: xcb_window_t, time: xcb_timestamp_t, post: AsyncStream<ClipboardEvent>.Continuation) {
        let previous = lastOwner
        lastOwner = owner
        // Our own offer, or its end: nobody copied anything.
        guard owner != window, !(owner == xcb_window_t(XCB_NONE) && previous == window) else { return }
        reading = nil
        guard !paused else {
            post.yield(.notRead)
            return
        }
        guard owner != xcb_window_t(XCB_NONE) else {
            // Its owner quit: the clipboard is empty.
            post.yield(.copied(forms: [], secret: false))
            return
        }
        reads += 1
        reading = Reading(owner: owner, time: time, step: .targets, deadline: .now + Self.stepTimeout, property: atom(Self.properties[reads % Self.properties.count]))
        convert(atom("TARGETS"))
    }

    private func convert(_ target: xcb_atom_t) {
        guard var reading else { return }
        reading.asked = target
        self.reading = reading
        xcb_convert_selection(connection, window, atom("CLIPBOARD"), target, reading.property, reading.time)
    }

    private func converted(_ notify: xcb_selection_notify_event_t, post: AsyncStream<ClipboardEvent>.Continuation) {
        // Owners and the server echo the request's time: an answer (or refusal) to a read of an
        // earlier copy never passes for this one's.
        guard var reading, notify.requestor == window, notify.selection == atom("CLIPBOARD"), notify.target == reading.asked,
            notify.time == reading.time, notify.property == reading.property || notify.property == xcb_atom_t(XCB_NONE)
        else { return }
        // Refused (property None): nothing of that kind.
        let value = notify.property == xcb_atom_t(XCB_NONE) ? nil : takeProperty(reading.property)
        reading.deadline = .now + Self.stepTimeout
        switch reading.step {
        case .targets:
            let targets = value.map { atomList($0.bytes).map { name(of: $0) } } ?? []
            let kinds = ClipboardTargets.readable(from: targets)
            if ClipboardNotice.isSecret(types: targets, hint: nil) {
                self.reading = nil
                post.yield(.copied(forms: [], secret: true))
                return
            }
            if targets.contains(ClipboardNotice.secretHint) {
                reading.step = .hint(kinds: kinds)
                self.reading = reading
                convert(atom(ClipboardNotice.secretHint))
                return
            }
            reading.step = .form(kinds: kinds, pieces: nil)
        case .hint(let kinds):
            let hint = value.flatMap { $0.incremental || $0.overLimit ? nil : String(decoding: $0.bytes.prefix(64), as: UTF8.self) }
            // A hint that cannot be read counts as a secret: what a password manager marks is
            // never announced by mistake.
            if hint == nil || ClipboardNotice.isSecret(types: [ClipboardNotice.secretHint], hint: hint) {
                self.reading = nil
                post.yield(.copied(forms: [], secret: true))
                return
            }
            reading.step = .form(kinds: kinds, pieces: nil)
        case .form(let kinds, _):
            if let value, value.incremental {
                // The owner sends it in pieces as we delete each (PropertyNotify).
                reading.step = .form(kinds: kinds, pieces: [])
                self.reading = reading
                return
            }
            if let value, !value.overLimit, let kind = kinds.first {
                reading.forms.append(ClipboardForm(type: kind.type, bytes: value.bytes))
            }
            reading.step = .form(kinds: Array(kinds.dropFirst()), pieces: nil)
        }
        self.reading = reading
        next(post: post)
    }

    /// Asks for the next kind, or tells what was read.
    private func next(post: AsyncStream<ClipboardEvent>.Continuation) {
        guard let reading, case .form(let kinds, _) = reading.step else { return }
        guard let kind = kinds.first else { return finishReading(post: post) }
        convert(atom(kind.target))
    }

    private func finishReading(post: AsyncStream<ClipboardEvent>.Continuation) {
        guard let reading else { return }
        self.reading = nil
        post.yield(.copied(forms: reading.forms, secret: false))
    }

    private func propertyChanged(_ notify: xcb_property_notify_event_t, post: AsyncStream<ClipboardEvent>.Continuation) {
        if notify.window == window {
            // A piece of an INCR transfer to us.
            guard var reading, notify.atom == reading.property, notify.state == UInt8(XCB_PROPERTY_NEW_VALUE.rawValue),
                case .form(let kinds, .some(var pieces)) = reading.step, let kind = kinds.first
            else { return }
            let piece = takeProperty(reading.property)
            reading.deadline = .now + Self.stepTimeout
            if piece?.bytes.isEmpty ?? true, piece?.overLimit != true {
                reading.forms.append(ClipboardForm(type: kind.type, bytes: pieces))
                reading.step = .form(kinds: Array(kinds.dropFirst()), pieces: nil)
                self.reading = reading
                next(post: post)
                return
            }
            // Over the bound: that kind is dropped at once (its owner is left waiting; the next
            // kind is asked for).
            if piece?.overLimit == true || pieces.count + (piece?.bytes.count ?? 0) > maximumSize {
                reading.step = .form(kinds: Array(kinds.dropFirst()), pieces: nil)
                self.reading = reading
                next(post: post)
                return
            }
            if let piece { pieces += piece.bytes }
            reading.step = .form(kinds: kinds, pieces: pieces)
            self.reading = reading
            return
        }
        // A requestor took a piece of ours: the next one.
        guard notify.state == UInt8(XCB_PROPERTY_DELETE.rawValue) else { return }
        let pair = Pair(window: notify.window, property: notify.atom)
        guard var send = sending[pair] else { return }
        let end = min(send.bytes.count, send.offset + pieceSize)
        send.bytes.withUnsafeBufferPointer { all in
            _ = xcb_change_property(
                connection, UInt8(XCB_PROP_MODE_REPLACE.rawValue), pair.window, pair.property, send.type, 8, UInt32(end - send.offset),
                all.baseAddress.map { $0 + send.offset }
            )
        }
        if send.offset == send.bytes.count {
            // The empty piece that ends it is written.
            sending[pair] = nil
            // Its window's other answers under way still need its property changes.
            if !sending.keys.contains(where: { $0.window == pair.window }) {
                let none: [UInt32] = [UInt32(XCB_EVENT_MASK_NO_EVENT.rawValue)]
                xcb_change_window_attributes(connection, pair.window, UInt32(XCB_CW_EVENT_MASK.rawValue), none)
            }
            return
        }
        send.offset = end
        send.deadline = .now + Self.stepTimeout
        sending[pair] = send
    }

    /// Our window's conversion property `property`, read and deleted (deleting it is what asks
    /// an INCR owner for the next piece); `overLimit` (and no bytes) when it holds more than
    /// `maximumSize`.
    private func takeProperty(_ property: xcb_atom_t) -> (bytes: [UInt8], incremental: Bool, overLimit: Bool)? {
        let words = UInt32(min(Int(UInt32.max / 4), maximumSize / 4 + 2))
        guard let reply = xcb_get_property_reply(connection, xcb_get_property(connection, 1, window, property, 0, 0, words), nil) else {
            return nil
        }
        defer { free(reply) }
        let length = Int(xcb_get_property_value_length(reply))
        let incremental = reply.pointee.type == atom("INCR")
        // More than asked for, or than the bound: not kept (its end is not even read).
        if reply.pointee.bytes_after > 0 || length > maximumSize { return ([], incremental, true) }
        guard length > 0, let value = xcb_get_property_value(reply) else { return ([], incremental, false) }
        return (Array(UnsafeRawBufferPointer(start: value, count: length)), incremental, false)
    }

    private func atomList(_ bytes: [UInt8]) -> [xcb_atom_t] {
        stride(from: 0, to: bytes.count - bytes.count % 4, by: 4).map { i in
            bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: i, as: UInt32.self) }
        }.prefix(512).map { $0 }
    }

    // MARK: Offering another device's copy

    func offer(types: [String]) {
        // An app's copy being read is newer than any notice: it is read and announced, and then
        // this offer is not wanted any more. Taking the clipboard now would lose it.
        guard reading == nil else { return }
        offered = Dictionary(ClipboardTargets.offered(for: types).map { (atom($0.target), $0.type) }, uniquingKeysWith: { first, _ in first })
        guard !offered.isEmpty else { return withdraw() }
        xcb_set_selection_owner(connection, window, atom("CLIPBOARD"), xcb_timestamp_t(XCB_CURRENT_TIME))
    }

    func withdraw() {
        guard !offered.isEmpty else { return }
        offered = [:]
        let owner = xcb_get_selection_owner_reply(connection, xcb_get_selection_owner(connection, atom("CLIPBOARD")), nil)
        defer { free(owner) }
        if owner?.pointee.owner == window {
            xcb_set_selection_owner(connection, xcb_window_t(XCB_NONE), atom("CLIPBOARD"), xcb_timestamp_t(XCB_CURRENT_TIME))
            ownClears += 1
        }
    }

    private func asked(_ request: xcb_selection_request_event_t, post: AsyncStream<ClipboardEvent>.Continuation) {
        var request = request
        // Obsolete clients name no property: the target is the property then (ICCCM 2.2).
        if request.property == xcb_atom_t(XCB_NONE) { request.property = request.target }
        // Our own reading asking our own offer (never meant): refused, nothing is fetched.
        guard request.selection == atom("CLIPBOARD"), !offered.isEmpty, request.requestor != window else { return notify(request, answered: false) }
        if request.target == atom("TARGETS") {
            var list = [atom("TARGETS"), atom("TIMESTAMP")] + offered.keys.sorted()
            xcb_change_property(
                connection, UInt8(XCB_PROP_MODE_REPLACE.rawValue), request.requestor, request.property, atom("ATOM"), 32, UInt32(list.count), &list
            )
            return notify(request, answered: true)
        }
        if request.target == atom("TIMESTAMP") {
            var time = [request.time]
            xcb_change_property(
                connection, UInt8(XCB_PROP_MODE_REPLACE.rawValue), request.requestor, request.property, xcb_atom_t(XCB_ATOM_INTEGER.rawValue), 32, 1, &time
            )
            return notify(request, answered: true)
        }
        guard let type = offered[request.target], pending.count < 64 else { return notify(request, answered: false) }
        nextRequest += 1
        pending[nextRequest] = request
        post.yield(.pasteRequested(PasteRequest(id: nextRequest, type: type)))
    }

    func answer(_ id: Int, with bytes: [UInt8]?) {
        guard let request = pending.removeValue(forKey: id) else { return }
        guard let bytes else { return notify(request, answered: false) }
        if bytes.count <= pieceSize {
            bytes.withUnsafeBufferPointer { buffer in
                _ = xcb_change_property(
                    connection, UInt8(XCB_PROP_MODE_REPLACE.rawValue), request.requestor, request.property, request.target, 8, UInt32(buffer.count),
                    buffer.baseAddress
                )
            }
            return notify(request, answered: true)
        }
        // In pieces: the requestor deletes the property for each next one (ICCCM 2.7.2).
        let mask: [UInt32] = [UInt32(XCB_EVENT_MASK_PROPERTY_CHANGE.rawValue)]
        xcb_change_window_attributes(connection, request.requestor, UInt32(XCB_CW_EVENT_MASK.rawValue), mask)
        var size = [UInt32(clamping: bytes.count)]
        xcb_change_property(connection, UInt8(XCB_PROP_MODE_REPLACE.rawValue), request.requestor, request.property, atom("INCR"), 32, 1, &size)
        sending[Pair(window: request.requestor, property: request.property)] = Sending(
            type: request.target, bytes: bytes, offset: 0, deadline: .now + Self.stepTimeout
        )
        notify(request, answered: true)
    }

    /// Tells the requestor its conversion is done (or refused: property None).
    private func notify(_ request: xcb_selection_request_event_t, answered: Bool) {
        var event = xcb_selection_notify_event_t()
        event.response_type = UInt8(XCB_SELECTION_NOTIFY)
        event.time = request.time
        event.requestor = request.requestor
        event.selection = request.selection
        event.target = request.target
        event.property = answered ? request.property : xcb_atom_t(XCB_NONE)
        // SendEvent always takes 32 bytes.
        var bytes = [UInt8](repeating: 0, count: 32)
        withUnsafeBytes(of: &event) { raw in
            for (i, b) in raw.enumerated() where i < 32 { bytes[i] = b }
        }
        bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                _ = xcb_send_event(connection, 0, request.requestor, UInt32(XCB_EVENT_MASK_NO_EVENT.rawValue), chars.baseAddress)
            }
        }
    }

    // MARK: Atoms

    private func atom(_ name: String) -> xcb_atom_t {
        if let known = atoms[name] { return known }
        let reply = xcb_intern_atom_reply(connection, xcb_intern_atom(connection, 0, UInt16(name.utf8.count), name), nil)
        defer { free(reply) }
        let value = reply?.pointee.atom ?? xcb_atom_t(XCB_NONE)
        atoms[name] = value
        names[value] = name
        return value
    }

    private func name(of atom: xcb_atom_t) -> String {
        if let known = names[atom] { return known }
        guard let reply = xcb_get_atom_name_reply(connection, xcb_get_atom_name(connection, atom), nil) else { return "" }
        defer { free(reply) }
        let length = Int(xcb_get_atom_name_name_length(reply))
        let name = xcb_get_atom_name_name(reply).map { String(decoding: UnsafeRawBufferPointer(start: $0, count: length), as: UTF8.self) } ?? ""
        // Cached: a hostile app could offer thousands of atoms, but X holds at most what the
        // server interned, and we keep only names of atoms asked about.
        if names.count < 4096 { names[atom] = name }
        return name
    }
}
