import CHandoffSDBus
import HandoffSystem
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A connection to a message bus (the session bus), driven by one thread of its own: sd-bus
/// objects are not thread-safe, so every sd-bus call happens on that thread, and the async
/// methods here hand it jobs and wait for their answers. The thread sleeps in poll(2) on the
/// bus socket and a wake-up pipe: no timers while nothing happens.
///
/// The connection ends when `close()` is called or the bus goes away (the session ends); then
/// every waiting call fails with `DBusError.disconnectedName`, every signal and incoming-call
/// stream finishes, and `closed()` returns.
public final class DBusConnection: Sendable {
    /// Our unique name on the bus (`:1.42`).
    public let uniqueName: String
    private let loop: BusLoop

    /// Connects to the bus at `address` (`unix:path=/run/user/1000/bus`) and says Hello.
    public static func connect(address: String) throws(DBusError) -> DBusConnection {
        var bus: OpaquePointer?
        try MessageCodec.check(sd_bus_new(&bus), "create a bus connection")
        guard let bus else { throw DBusError.errno(-ENOMEM, "cannot create a bus connection") }
        do {
            try MessageCodec.check(address.withCString { sd_bus_set_address(bus, $0) }, "use the bus address \(address)")
            try MessageCodec.check(sd_bus_set_bus_client(bus, 1), "act as a bus client")
            try MessageCodec.check(sd_bus_negotiate_fds(bus, 1), "ask for descriptor passing")
            try MessageCodec.check(sd_bus_start(bus), "connect to the bus at \(address)")
            var name: UnsafePointer<CChar>?
            // Waits for the bus daemon's answer to Hello, before the loop thread exists.
            try MessageCodec.check(sd_bus_get_unique_name(bus, &name), "get a name on the bus at \(address)")
            let loop = try BusLoop(bus: bus)
            return DBusConnection(uniqueName: name.map { String(cString: $0) } ?? "", loop: loop)
        } catch {
            sd_bus_flush_close_unref(bus)
            throw error
        }
    }

    /// The session bus's address: `DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus`
    /// (where a systemd user session puts it); nil when neither is set.
    public static func sessionBusAddress(environment: [String: String]) -> String? {
        if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty { return address }
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") { return "unix:path=" + runtime + "/bus" }
        return nil
    }

    private init(uniqueName: String, loop: BusLoop) {
        self.uniqueName = uniqueName
        self.loop = loop
    }

    deinit { loop.close() }

    /// Calls a method and returns its reply's arguments; the other side's error is thrown as it
    /// sent it. `timeout` nil: sd-bus's default (25 s).
    public func call(_ call: DBusMethodCall, timeout: Duration? = nil) async throws(DBusError) -> [DBusValue] {
        let usec = timeout.map { UInt64(max(1, $0.components.seconds * 1_000_000 + $0.components.attoseconds / 1_000_000_000_000)) } ?? 0
        let result = await withCheckedContinuation { (done: CheckedContinuation<Result<[DBusValue], DBusError>, Never>) in
            loop.submit { state in
                guard let state else {
                    DBusValue.closeDescriptors(in: call.arguments)
                    return done.resume(returning: .failure(.disconnected))
                }
                state.startCall(call, timeoutMicroseconds: usec) { done.resume(returning: $0) }
            }
        }
        return try result.get()
    }

    /// Sends a signal (without waiting: it is queued in order with everything else we send).
    public func emit(_ signal: DBusSignal) {
        loop.submit { state in
            guard let state else { return DBusValue.closeDescriptors(in: signal.arguments) }
            state.emit(signal)
        }
    }

    /// Takes a well-known name (`org.handoff.Desktop`); fails if another connection has it.
    public func requestName(_ name: String) async throws(DBusError) {
        // RequestName flags: DBUS_NAME_FLAG_DO_NOT_QUEUE (4); reply 1 = primary owner.
        let reply = try await call(DBusMethodCall.busDaemon("RequestName", [.string(name), .uint32(4)]))
        guard reply.first?.integerValue == 1 else {
            throw DBusError(name: DBusError.addressInUseName, message: "another program already owns \(name) on the bus")
        }
    }

    /// The Unix user id of the process behind a unique name, as the bus daemon knows it (from
    /// the socket's credentials, not from anything the client says). Remembered per name:
    /// unique names are never reused while the bus runs.
    public func unixUser(of sender: String) async throws(DBusError) -> UInt32 {
        if let known = loop.knownUsers.withLock({ $0[sender] }) { return known }
        let reply = try await call(DBusMethodCall.busDaemon("GetConnectionUnixUser", [.string(sender)]))
        guard let uid = reply.first?.integerValue, let user = UInt32(exactly: uid) else {
            throw DBusError(name: DBusError.failedName, message: "the bus daemon did not say who \(sender) is")
        }
        loop.knownUsers.withLock { users in
            if users.count >= 1024 { users.removeAll() }
            users[sender] = user
        }
        return user
    }

    /// Signals matching `rule` (a D-Bus match rule: `type='signal',interface='…',member='…'`),
    /// from the moment this returns (the bus daemon has the rule) until the stream is dropped.
    /// At most `buffer` undelivered signals are kept (the newest). Signals that carry descriptors
    /// are dropped unless `allowDescriptors` (then the stream's reader must close them).
    public func signals(matching rule: String, buffer: Int = 1024, allowDescriptors: Bool = false) async throws(DBusError) -> AsyncStream<DBusSignal> {
        let (stream, continuation) = AsyncStream.makeStream(of: DBusSignal.self, bufferingPolicy: .bufferingNewest(buffer))
        let installed = await withCheckedContinuation { (done: CheckedContinuation<Result<UInt64, DBusError>, Never>) in
            loop.submit { state in
                guard let state else { return done.resume(returning: .failure(.disconnected)) }
                state.addMatch(rule, allowDescriptors: allowDescriptors, deliver: continuation) { done.resume(returning: $0) }
            }
        }
        let key = try installed.get()
        continuation.onTermination = { [loop] _ in loop.submit { state in state?.removeMatch(key) } }
        return stream
    }

    /// Exports an object at `path`: method calls to it arrive on the stream (at most `buffer`
    /// waiting; a caller beyond that is told the service is busy), and `Introspect` is answered
    /// with `introspection`. Exported until the stream is dropped.
    public func export(path: String, introspection: String, buffer: Int = 256) async throws(DBusError) -> AsyncStream<DBusIncomingCall> {
        let (stream, continuation) = AsyncStream.makeStream(of: DBusIncomingCall.self, bufferingPolicy: .bufferingOldest(buffer))
        let added = await withCheckedContinuation { (done: CheckedContinuation<Result<UInt64, DBusError>, Never>) in
            loop.submit { state in
                guard let state else { return done.resume(returning: .failure(.disconnected)) }
                done.resume(returning: state.addObject(path: path, introspection: introspection, deliver: continuation))
            }
        }
        let key = try added.get()
        continuation.onTermination = { [loop] _ in loop.submit { state in state?.removeObject(key) } }
        return stream
    }

    /// Answers an incoming call.
    public func reply(to call: DBusIncomingCall, _ values: [DBusValue] = []) {
        loop.submit { state in
            guard let state else { return DBusValue.closeDescriptors(in: values) }
            state.reply(call.token, .success(values))
        }
    }

    /// Answers an incoming call with an error.
    public func reply(to call: DBusIncomingCall, error: DBusError) {
        loop.submit { state in state?.reply(call.token, .failure(error)) }
    }

    /// Ends the connection (what is queued is still sent).
    public func close() { loop.close() }

    /// Returns once the connection has ended, by `close()` or because the bus went away.
    public func closed() async { await loop.ended() }
}

extension DBusMethodCall {
    /// A call to the bus daemon itself (`org.freedesktop.DBus`).
    public static func busDaemon(_ member: String, _ arguments: [DBusValue]) -> DBusMethodCall {
        DBusMethodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: member, arguments: arguments)
    }
}

extension DBusError {
    static let disconnected = DBusError(name: disconnectedName, message: "the connection to the bus ended")
}

/// The loop thread and what only it touches (`BusState`); other threads only queue jobs.
final class BusLoop: Sendable {
    /// A pipe (read end, write end): a byte written wakes the loop's poll.
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private struct Queue {
        var jobs: [@Sendable (BusState?) -> Void] = []
        var ended = false
        var closing = false
        /// Who waits in `ended()`, by key (so a cancelled wait can take itself out).
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
    }

    private let queue = Mutex(Queue())
    let knownUsers = Mutex<[String: UInt32]>([:])

    init(bus: OpaquePointer) throws(DBusError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw DBusError.errno(-errno, "cannot create the bus thread's wake-up") }
        for fd in ends {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        }
        (wakeRead, wakeWrite) = (ends[0], ends[1])
        let state = BusState(bus: bus)
        let started = BlockingThread.detach(name: "handoff-dbus") { [self] in run(state) }
        guard started else {
            // deinit closes the pipe.
            throw DBusError(name: DBusError.failedName, message: "cannot start the bus thread (at the thread limit)")
        }
    }

    /// Runs `job` on the loop thread with its state, or at once with nil when the loop has ended.
    func submit(_ job: @escaping @Sendable (BusState?) -> Void) {
        let queued = queue.withLock { q in
            guard !q.ended else { return false }
            q.jobs.append(job)
            return true
        }
        if queued { wake() } else { job(nil) }
    }

    func close() {
        queue.withLock { $0.closing = true }
        wake()
    }

    // The pipe lives as long as anything can still write to it.
    deinit {
        Glibc.close(wakeRead)
        Glibc.close(wakeWrite)
    }

    /// Returns once the loop has ended, or the calling task is cancelled.
    func ended() async {
        let key = queue.withLock { q -> Int in
            q.nextWaiter += 1
            return q.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                let now = queue.withLock { q -> Bool in
                    if q.ended || Task.isCancelled { return true }
                    q.waiters[key] = done
                    return false
                }
                if now { done.resume() }
            }
        } onCancel: {
            queue.withLock { $0.waiters.removeValue(forKey: key) }?.resume()
        }
    }

    private func wake() {
        // A full pipe already wakes the loop: a failed write loses nothing.
        var one: UInt8 = 1
        _ = write(wakeWrite, &one, 1)
    }

    private func run(_ state: BusState) {
        let bus = state.bus
        while true {
            var drained = [UInt8](repeating: 0, count: 64)
            while read(wakeRead, &drained, 64) == 64 {}
            let (jobs, closing) = queue.withLock { q in
                defer { q.jobs.removeAll() }
                return (q.jobs, q.closing)
            }
            for job in jobs { job(state) }
            if closing { break }
            var lost = false
            var more = false
            // At most a batch of incoming messages between looks at the jobs: a client that
            // floods the bus does not hold back what we send.
            for _ in 0..<64 {
                let rc = sd_bus_process(bus, nil)
                if rc < 0 { lost = true }
                more = rc > 0
                if rc <= 0 { break }
            }
            if lost || sd_bus_is_open(bus) <= 0 { break }
            // Whatever the jobs and callbacks queued goes out before we sleep.
            _ = sd_bus_flush(bus)
            var fds = [
                pollfd(fd: sd_bus_get_fd(bus), events: Int16(truncatingIfNeeded: sd_bus_get_events(bus)), revents: 0),
                pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
            ]
            // sd-bus may hold messages it already read: then only look, do not sleep.
            _ = SystemCall.retrying { poll(&fds, 2, more ? 0 : Self.pollTimeout(bus)) }
        }
        let (late, waiters) = queue.withLock { q in
            q.ended = true
            defer {
                q.jobs.removeAll()
                q.waiters.removeAll()
            }
            return (q.jobs, q.waiters)
        }
        for job in late { job(nil) }
        state.end()
        for waiter in waiters.values { waiter.resume() }
    }

    /// Milliseconds until sd-bus's next deadline (a call's timeout), or -1 for none.
    private static func pollTimeout(_ bus: OpaquePointer) -> Int32 {
        var deadline: UInt64 = 0
        guard sd_bus_get_timeout(bus, &deadline) >= 0, deadline != UInt64.max else { return -1 }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let nowMicroseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
        guard deadline > nowMicroseconds else { return 0 }
        return Int32(min(UInt64(Int32.max), (deadline - nowMicroseconds + 999) / 1000))
    }
}
