import CHandoffDNSSD
import HandoffSystem
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Every dns_sd call, made from one thread that owns every `DNSServiceRef`.
///
/// Avahi's compat layer gives each ref its own client, thread and socket; a ref's socket becomes
/// readable on every D-Bus wake-up and `DNSServiceProcessResult` then does a blocking read, so it
/// must be called exactly once per readable event and never otherwise (docs/platform.md). The engine
/// thread polls the refs' sockets and a pipe on which other threads post commands; callbacks
/// run on it and are turned into `Event`s on an AsyncStream.
final class DNSSDEngine: @unchecked Sendable {
    typealias ID = Int

    enum Command: Sendable {
        case register(ID, name: String, type: String, port: UInt16, txt: [UInt8])
        case updateTXT(ID, txt: [UInt8])
        case browse(ID, type: String, domain: String?)
        case resolve(ID, name: String, type: String, domain: String, interface: UInt32)
        case query(ID, fullname: String, recordType: UInt16, interface: UInt32)
        case cancel(ID)
        case cancelAll
        case stop
    }

    enum Event: Sendable {
        case registered(ID, name: String)
        case browsed(ID, added: Bool, name: String, type: String, domain: String, interface: UInt32)
        case resolved(ID, fullname: String, host: String, port: UInt16, txt: [UInt8], interface: UInt32)
        case record(ID, added: Bool, rdata: [UInt8], interface: UInt32)
        /// The call for `ID` was accepted (a failure would have come as `.failed` instead).
        case started(ID)
        /// A call or callback failed; `code` is dns_sd's (-65537 when avahi is gone).
        case failed(ID, code: Int32)
    }

    static let daemonGone: Int32 = -65537

    let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    private let pending = Mutex<[Command]>([])
    /// A pipe: other threads write a byte to wake the engine's poll.
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private var thread: pthread_t?

    // Owned by the engine thread only.
    private var refs: [ID: RefHandle] = [:]
    /// Refs whose callback said they are done: released once `DNSServiceProcessResult` has
    /// returned, never inside their own callback — the library still uses the ref then, and
    /// freeing it there crashed handoffd when avahi-daemon restarted under a flood of adverts.
    private var finished: [ID] = []

    /// Once per process, before the first avahi call (shim.h says why).
    private static let allocationsZeroed: Void = handoff_dnssd_zero_allocations()

    init() {
        // Avahi prints a three-line "Bonjour compatibility layer" warning on first use otherwise.
        setenv("AVAHI_COMPAT_NOWARN", "1", 1)
        Self.allocationsZeroed
        (events, continuation) = AsyncStream.makeStream(of: Event.self)
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            for fd in fds {
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            }
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
        let box = Unmanaged.passRetained(self)
        var t = pthread_t()
        let rc = pthread_create(&t, nil, { raw in
            let engine = Unmanaged<DNSSDEngine>.fromOpaque(raw!).takeRetainedValue()
            BlockingThread.nameThisThread("handoff-dnssd")
            engine.run()
            return nil
        }, box.toOpaque())
        if rc == 0 {
            thread = t
        } else {
            box.release()
            continuation.finish()
        }
    }

    /// Queues a command for the engine thread.
    func send(_ command: Command) {
        pending.withLock { $0.append(command) }
        var one: UInt8 = 1
        _ = write(wakeWrite, &one, 1)
    }

    /// Stops the thread and releases every ref; waits for it.
    func shutdown() {
        send(.stop)
        if let thread { pthread_join(thread, nil) }
        thread = nil
    }

    // MARK: The engine thread

    private func run() {
        var running = true
        while running {
            var fds = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            let ids = Array(refs.keys)
            for id in ids { fds.append(pollfd(fd: DNSServiceRefSockFD(refs[id]!.ref), events: Int16(POLLIN), revents: 0)) }
            let n = SystemCall.retrying { poll(&fds, nfds_t(fds.count), -1) }
            if n < 0 { break }
            if fds[0].revents != 0 {
                var drain = [UInt8](repeating: 0, count: 64)
                while read(wakeRead, &drain, drain.count) > 0 {}
                let commands = pending.withLock { p -> [Command] in
                    defer { p = [] }
                    return p
                }
                for command in commands where running {
                    running = execute(command)
                }
            }
            guard running else { break }
            for (index, id) in ids.enumerated() where fds[index + 1].revents != 0 {
                // The ref may have been cancelled by a command above, or by an earlier callback.
                guard let handle = refs[id] else { continue }
                let rc = DNSServiceProcessResult(handle.ref)
                if rc != 0 {
                    refs[id] = nil
                    continuation.yield(.failed(id, code: rc))
                }
                for done in finished { refs[done] = nil }
                finished.removeAll()
            }
        }
        refs.removeAll()
        close(wakeRead)
        close(wakeWrite)
        continuation.finish()
    }

    private func execute(_ command: Command) -> Bool {
        switch command {
        case .register(let id, let name, let type, let port, let txt):
            let context = CallbackContext(engine: self, id: id)
            var ref: DNSServiceRef?
            let rc = txt.withUnsafeBytes { raw in
                DNSServiceRegister(
                    &ref, 0, 0, name, type, nil, nil, port.bigEndian, UInt16(raw.count), raw.baseAddress,
                    DNSSDEngine.registerReply, context.pointer
                )
            }
            adopt(ref, rc: rc, id: id, context: context)
        case .updateTXT(let id, let txt):
            guard let handle = refs[id] else { return true }
            let rc = txt.withUnsafeBytes { DNSServiceUpdateRecord(handle.ref, nil, 0, UInt16($0.count), $0.baseAddress, 0) }
            if rc != 0 { continuation.yield(.failed(id, code: rc)) }
        case .browse(let id, let type, let domain):
            let context = CallbackContext(engine: self, id: id)
            var ref: DNSServiceRef?
            let rc = DNSServiceBrowse(&ref, 0, 0, type, domain, DNSSDEngine.browseReply, context.pointer)
            adopt(ref, rc: rc, id: id, context: context)
        case .resolve(let id, let name, let type, let domain, let interface):
            let context = CallbackContext(engine: self, id: id)
            var ref: DNSServiceRef?
            let rc = DNSServiceResolve(&ref, 0, interface, name, type, domain, DNSSDEngine.resolveReply, context.pointer)
            adopt(ref, rc: rc, id: id, context: context)
        case .query(let id, let fullname, let recordType, let interface):
            let context = CallbackContext(engine: self, id: id)
            var ref: DNSServiceRef?
            let rc = DNSServiceQueryRecord(&ref, 0, interface, fullname, recordType, 1, DNSSDEngine.queryReply, context.pointer)
            adopt(ref, rc: rc, id: id, context: context)
        case .cancel(let id):
            refs[id] = nil
        case .cancelAll:
            refs.removeAll()
        case .stop:
            return false
        }
        return true
    }

    private func adopt(_ ref: DNSServiceRef?, rc: DNSServiceErrorType, id: ID, context: CallbackContext) {
        guard rc == 0, let ref else {
            context.release()
            continuation.yield(.failed(id, code: rc == 0 ? DNSSDEngine.daemonGone : rc))
            return
        }
        refs[id] = RefHandle(ref: ref, context: context)
        continuation.yield(.started(id))
    }

    fileprivate func deliver(_ event: Event) {
        continuation.yield(event)
    }

    /// A resolve is one-shot: once answered, its ref (and avahi client) is released — after the
    /// callback has returned.
    fileprivate func finishResolve(_ id: ID) {
        finished.append(id)
    }

    // MARK: Callbacks (C function pointers; the context names the engine and the ref's id)

    static let registerReply: DNSServiceRegisterReply = { _, _, error, name, _, _, context in
        let c = CallbackContext.from(context)
        guard let engine = c.engine else { return }
        if error != 0 {
            engine.deliver(.failed(c.id, code: error))
        } else {
            engine.deliver(.registered(c.id, name: name.map { String(cString: $0) } ?? ""))
        }
    }

    static let browseReply: DNSServiceBrowseReply = { _, flags, interface, error, name, type, domain, context in
        let c = CallbackContext.from(context)
        guard let engine = c.engine else { return }
        guard error == 0, let name, let type, let domain else {
            engine.deliver(.failed(c.id, code: error == 0 ? -65540 : error))
            return
        }
        engine.deliver(
            .browsed(
                c.id, added: flags & UInt32(kDNSServiceFlagsAdd) != 0, name: String(cString: name), type: String(cString: type),
                domain: String(cString: domain), interface: interface
            )
        )
    }

    static let resolveReply: DNSServiceResolveReply = { _, _, interface, error, fullname, host, port, txtLength, txt, context in
        let c = CallbackContext.from(context)
        guard let engine = c.engine else { return }
        defer { engine.finishResolve(c.id) }
        guard error == 0, let fullname, let host else {
            engine.deliver(.failed(c.id, code: error == 0 ? -65540 : error))
            return
        }
        let record = txt.map { Array(UnsafeBufferPointer(start: $0, count: Int(txtLength))) } ?? []
        engine.deliver(
            .resolved(
                c.id, fullname: String(cString: fullname), host: String(cString: host), port: UInt16(bigEndian: port), txt: record,
                interface: interface
            )
        )
    }

    static let queryReply: DNSServiceQueryRecordReply = { _, flags, interface, error, _, _, _, length, rdata, _, context in
        let c = CallbackContext.from(context)
        guard let engine = c.engine else { return }
        guard error == 0 else {
            engine.deliver(.failed(c.id, code: error))
            return
        }
        let bytes = rdata.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(length))) } ?? []
        engine.deliver(.record(c.id, added: flags & UInt32(kDNSServiceFlagsAdd) != 0, rdata: bytes, interface: interface))
    }
}

/// A ref and its callback context, released together (on the engine thread).
private final class RefHandle {
    let ref: DNSServiceRef
    let context: CallbackContext

    init(ref: DNSServiceRef, context: CallbackContext) {
        self.ref = ref
        self.context = context
    }

    deinit {
        DNSServiceRefDeallocate(ref)
        context.release()
    }
}

/// What a C callback needs to find its way back: retained for as long as its ref lives.
private final class CallbackContext {
    weak var engine: DNSSDEngine?
    let id: DNSSDEngine.ID
    private var unmanaged: Unmanaged<CallbackContext>?

    init(engine: DNSSDEngine, id: DNSSDEngine.ID) {
        self.engine = engine
        self.id = id
    }

    /// Retains itself until `release()`: avahi holds this pointer.
    var pointer: UnsafeMutableRawPointer {
        if unmanaged == nil { unmanaged = Unmanaged.passRetained(self) }
        return unmanaged!.toOpaque()
    }

    func release() {
        unmanaged?.release()
        unmanaged = nil
    }

    static func from(_ raw: UnsafeMutableRawPointer?) -> CallbackContext {
        Unmanaged<CallbackContext>.fromOpaque(raw!).takeUnretainedValue()
    }
}
