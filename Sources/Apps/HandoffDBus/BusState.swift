import CHandoffSDBus

#if canImport(Glibc)
import Glibc
#endif

/// Everything sd-bus touches, used only on the loop thread (hence `@unchecked Sendable`: it is
/// handed to jobs that run there and nowhere else).
///
/// sd-bus calls back through C function pointers with one `userdata` pointer: that is an
/// unretained pointer to a handler object this state keeps alive until the bus itself is gone,
/// so a callback sd-bus makes late (while closing) still finds a live object, marked done.
final class BusState: @unchecked Sendable {
    let bus: OpaquePointer
    private var nextKey: UInt64 = 1
    private var calls: [UInt64: PendingCall] = [:]
    private var matches: [UInt64: MatchHandler] = [:]
    private var objects: [UInt64: ObjectHandler] = [:]
    /// Incoming calls waiting for their reply, each holding a reference on its message.
    private var heldCalls: [UInt64: OpaquePointer] = [:]
    /// Handlers let go of while the bus closes, kept until it is gone (sd-bus may still call
    /// back while closing). Otherwise a handler goes with its slot: no callback comes after that.
    private var retired: [AnyObject] = []

    init(bus: OpaquePointer) { self.bus = bus }

    private func key() -> UInt64 {
        defer { nextKey += 1 }
        return nextKey
    }

    // MARK: calls we make

    final class PendingCall {
        unowned let state: BusState
        let key: UInt64
        var resume: ((Result<[DBusValue], DBusError>) -> Void)?
        init(state: BusState, key: UInt64, resume: @escaping (Result<[DBusValue], DBusError>) -> Void) {
            self.state = state
            self.key = key
            self.resume = resume
        }
        func finish(_ result: Result<[DBusValue], DBusError>) {
            guard let resume else { return }
            self.resume = nil
            state.calls[key] = nil
            resume(result)
        }
    }

    func startCall(_ call: DBusMethodCall, timeoutMicroseconds: UInt64, resume: @escaping (Result<[DBusValue], DBusError>) -> Void) {
        defer { DBusValue.closeDescriptors(in: call.arguments) }
        var message: OpaquePointer?
        let rc = call.destination.withCString { d in
            call.path.withCString { p in
                call.interface.withCString { i in call.member.withCString { m in sd_bus_message_new_method_call(bus, &message, d, p, i, m) } }
            }
        }
        guard rc >= 0, let message else { return resume(.failure(.errno(rc, "cannot call \(call.interface).\(call.member)"))) }
        defer { sd_bus_message_unref(message) }
        do throws(DBusError) {
            try MessageCodec.append(call.arguments, to: message)
        } catch {
            return resume(.failure(error))
        }
        let pending = PendingCall(state: self, key: key(), resume: resume)
        calls[pending.key] = pending
        let sent = sd_bus_call_async(bus, nil, message, BusState.replyArrived, Unmanaged.passUnretained(pending).toOpaque(), timeoutMicroseconds)
        if sent < 0 { pending.finish(.failure(.errno(sent, "cannot call \(call.interface).\(call.member)"))) }
    }

    private static let replyArrived: sd_bus_message_handler_t = { message, userdata, _ in
        let pending = Unmanaged<PendingCall>.fromOpaque(userdata!).takeUnretainedValue()
        guard let message else {
            pending.finish(.failure(DBusError(name: DBusError.failedName, message: "a reply without a message")))
            return 0
        }
        if sd_bus_message_is_method_error(message, nil) > 0 {
            pending.finish(.failure(BusState.error(of: message)))
        } else {
            pending.finish(Result { () throws(DBusError) in try MessageCodec.read(message) })
        }
        return 0
    }

    static func error(of message: OpaquePointer) -> DBusError {
        guard let e = sd_bus_message_get_error(message) else { return DBusError(name: DBusError.failedName, message: "an error without a name") }
        return DBusError(name: e.pointee.name.map { String(cString: $0) } ?? DBusError.failedName, message: e.pointee.message.map { String(cString: $0) } ?? "")
    }

    // MARK: signals

    func emit(_ signal: DBusSignal) {
        defer { DBusValue.closeDescriptors(in: signal.arguments) }
        var message: OpaquePointer?
        let rc = signal.path.withCString { p in
            signal.interface.withCString { i in signal.member.withCString { m in sd_bus_message_new_signal(bus, &message, p, i, m) } }
        }
        guard rc >= 0, let message else { return }
        defer { sd_bus_message_unref(message) }
        if let destination = signal.destination {
            guard destination.withCString({ sd_bus_message_set_destination(message, $0) }) >= 0 else { return }
        }
        guard (try? MessageCodec.append(signal.arguments, to: message)) != nil else { return }
        _ = sd_bus_send(bus, message, nil)
    }

    final class MatchHandler {
        weak var state: BusState?
        let deliver: AsyncStream<DBusSignal>.Continuation
        /// Signals carrying descriptors are dropped (their descriptors closed) unless allowed:
        /// a descriptor nobody reads would stay open.
        var allowDescriptors = false
        var installed: ((Result<UInt64, DBusError>) -> Void)?
        var slot: OpaquePointer?
        let key: UInt64
        init(key: UInt64, deliver: AsyncStream<DBusSignal>.Continuation, installed: @escaping (Result<UInt64, DBusError>) -> Void) {
            self.key = key
            self.deliver = deliver
            self.installed = installed
        }
    }

    func addMatch(
        _ rule: String, allowDescriptors: Bool, deliver: AsyncStream<DBusSignal>.Continuation, installed: @escaping (Result<UInt64, DBusError>) -> Void
    ) {
        let handler = MatchHandler(key: key(), deliver: deliver, installed: installed)
        handler.state = self
        handler.allowDescriptors = allowDescriptors
        var slot: OpaquePointer?
        let rc = rule.withCString {
            sd_bus_add_match_async(bus, &slot, $0, BusState.signalArrived, BusState.matchInstalled, Unmanaged.passUnretained(handler).toOpaque())
        }
        guard rc >= 0, let slot else {
            deliver.finish()
            return installed(.failure(.errno(rc, "cannot watch for \(rule)")))
        }
        handler.slot = slot
        matches[handler.key] = handler
    }

    func removeMatch(_ key: UInt64) {
        guard let handler = matches.removeValue(forKey: key) else { return }
        handler.slot.map { _ = sd_bus_slot_unref($0) }
        handler.slot = nil
        handler.deliver.finish()
        if let installed = handler.installed {
            handler.installed = nil
            installed(.failure(.disconnected))
        }
    }

    private static let matchInstalled: sd_bus_message_handler_t = { message, userdata, _ in
        let handler = Unmanaged<MatchHandler>.fromOpaque(userdata!).takeUnretainedValue()
        guard let installed = handler.installed else { return 0 }
        handler.installed = nil
        if let message, sd_bus_message_is_method_error(message, nil) > 0 {
            handler.state?.removeMatch(handler.key)
            installed(.failure(BusState.error(of: message)))
        } else {
            installed(.success(handler.key))
        }
        return 0
    }

    private static let signalArrived: sd_bus_message_handler_t = { message, userdata, _ in
        let handler = Unmanaged<MatchHandler>.fromOpaque(userdata!).takeUnretainedValue()
        guard let message, handler.slot != nil, let arguments = try? MessageCodec.read(message) else { return 0 }
        guard handler.allowDescriptors || !DBusValue.holdDescriptors(arguments) else {
            DBusValue.closeDescriptors(in: arguments)
            return 0
        }
        handler.deliver.yield(
            DBusSignal(
                sender: text(sd_bus_message_get_sender(message)), path: text(sd_bus_message_get_path(message)),
                interface: text(sd_bus_message_get_interface(message)), member: text(sd_bus_message_get_member(message)), arguments: arguments
            )
        )
        return 0
    }

    // MARK: objects we export

    final class ObjectHandler {
        unowned let state: BusState
        let introspection: String
        let deliver: AsyncStream<DBusIncomingCall>.Continuation
        var slot: OpaquePointer?
        init(state: BusState, introspection: String, deliver: AsyncStream<DBusIncomingCall>.Continuation) {
            self.state = state
            self.introspection = introspection
            self.deliver = deliver
        }
    }

    func addObject(path: String, introspection: String, deliver: AsyncStream<DBusIncomingCall>.Continuation) -> Result<UInt64, DBusError> {
        let handler = ObjectHandler(state: self, introspection: introspection, deliver: deliver)
        var slot: OpaquePointer?
        let rc = path.withCString { sd_bus_add_object(bus, &slot, $0, BusState.callArrived, Unmanaged.passUnretained(handler).toOpaque()) }
        guard rc >= 0, let slot else {
            deliver.finish()
            return .failure(.errno(rc, "cannot export \(path)"))
        }
        handler.slot = slot
        let key = key()
        objects[key] = handler
        return .success(key)
    }

    func removeObject(_ key: UInt64) {
        guard let handler = objects.removeValue(forKey: key) else { return }
        handler.slot.map { _ = sd_bus_slot_unref($0) }
        handler.slot = nil
        handler.deliver.finish()
    }

    private static let callArrived: sd_bus_message_handler_t = { message, userdata, _ in
        let handler = Unmanaged<ObjectHandler>.fromOpaque(userdata!).takeUnretainedValue()
        guard let message, handler.slot != nil else { return 0 }
        let state = handler.state
        if sd_bus_message_is_method_call(message, "org.freedesktop.DBus.Introspectable", "Introspect") > 0 {
            state.replyNow(to: message, .success([.string(handler.introspection)]))
            return 1
        }
        guard sd_bus_message_is_method_call(message, nil, nil) > 0 else { return 0 }
        let arguments: [DBusValue]
        do throws(DBusError) {
            arguments = try MessageCodec.read(message)
        } catch {
            state.replyNow(to: message, .failure(DBusError(name: DBusError.invalidArgsName, message: error.message)))
            return 1
        }
        let token = state.key()
        let call = DBusIncomingCall(
            sender: text(sd_bus_message_get_sender(message)), path: text(sd_bus_message_get_path(message)),
            interface: text(sd_bus_message_get_interface(message)), member: text(sd_bus_message_get_member(message)), arguments: arguments, token: token
        )
        state.heldCalls[token] = sd_bus_message_ref(message)
        if case .enqueued = handler.deliver.yield(call) { return 1 }
        DBusValue.closeDescriptors(in: arguments)
        state.reply(token, .failure(DBusError(name: "org.freedesktop.DBus.Error.LimitsExceeded", message: "too many calls are waiting; try again")))
        return 1
    }

    func reply(_ token: UInt64, _ result: Result<[DBusValue], DBusError>) {
        defer { if case .success(let values) = result { DBusValue.closeDescriptors(in: values) } }
        guard let message = heldCalls.removeValue(forKey: token) else { return }
        replyNow(to: message, result)
        sd_bus_message_unref(message)
    }

    private func replyNow(to call: OpaquePointer, _ result: Result<[DBusValue], DBusError>) {
        var reply: OpaquePointer?
        switch result {
        case .success(let values):
            guard sd_bus_message_new_method_return(call, &reply) >= 0, let reply else { return }
            defer { sd_bus_message_unref(reply) }
            if (try? MessageCodec.append(values, to: reply)) == nil {
                return replyNow(to: call, .failure(DBusError(name: DBusError.failedName, message: "the reply could not be built")))
            }
            _ = sd_bus_send(bus, reply, nil)
        case .failure(let error):
            var e = sd_bus_error()
            _ = error.name.withCString { n in error.message.withCString { m in sd_bus_error_set(&e, n, m) } }
            defer { sd_bus_error_free(&e) }
            guard sd_bus_message_new_method_error(call, &reply, &e) >= 0, let reply else { return }
            defer { sd_bus_message_unref(reply) }
            _ = sd_bus_send(bus, reply, nil)
        }
    }

    // MARK: the end

    /// The bus is gone or closing: every waiter hears so, then sd-bus lets go of everything.
    func end() {
        retired = Array(calls.values) + Array(matches.values) + Array(objects.values)
        for call in calls.values { call.finish(.failure(.disconnected)) }
        for key in Array(matches.keys) { removeMatch(key) }
        for key in Array(objects.keys) { removeObject(key) }
        for message in heldCalls.values { sd_bus_message_unref(message) }
        heldCalls.removeAll()
        sd_bus_flush_close_unref(bus)
        retired.removeAll()
    }
}

private func text(_ p: UnsafePointer<CChar>?) -> String { p.map { String(cString: $0) } ?? "" }
