#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffClient
import HandoffDBus
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `org.handoff.Desktop1` at `/org/handoff/Desktop` (docs/dbus.md; the introspection XML is
/// `Interfaces/org.handoff.Desktop1.xml`, served as it is): the local API and HandoffKit for apps
/// in any language. Every call is checked first: the caller must be this user (the bus daemon
/// says who it is), call a method that exists, with the arguments it takes. Window calls go to
/// the caller's registration (`BusApp`), in order; the others are answered as they complete.
package struct DesktopInterface: Sendable {
    let bus: DBusConnection
    let client: HandoffClient
    let logger: Logger
    /// The `Handoff` property as last told (`PropertiesChanged` only when it changes).
    private let told = LastTold()

    final class LastTold: Sendable {
        let value = Mutex<Bool?>(nil)
    }

    package init(bus: DBusConnection, client: HandoffClient, logger: Logger) {
        self.bus = bus
        self.client = client
        self.logger = logger
    }

    package static let path = "/org/handoff/Desktop"
    package static let interface = "org.handoff.Desktop1"
    package static var introspection: String { String(decoding: PackageResources.org_handoff_Desktop1_xml, as: UTF8.self) }

    /// Each method and the arguments it takes (D-Bus signatures).
    static let signatures: [String: String] = [
        "Register": "saso", "RegisterClaiming": "sasaso", "Unregister": "", "BecomeCurrent": "sa{sv}", "Update": "sa{sv}", "Resign": "s", "Invalidate": "s", "Focus": "s",
        "CloseWindow": "s", "CloseWindowKeepingRestoration": "s", "SetActivationConditions": "sasas", "SaveRestoration": "sa{sv}", "RemoveRestoration": "s", "Continue": "s", "OpenStream": "s", "TakeStream": "s",
        "History": "", "SavedActivity": "s", "OpenLink": "s", "DeleteSavedActivities": "asas", "DeleteAllSavedActivities": "as",
        "Clipboard": "", "PasteFromDevice": "s",
    ]
    /// The methods that are one local-API request each, answered as they complete (no
    /// registration needed).
    static let requests: Set<String> = [
        "Continue", "OpenStream", "TakeStream", "History", "SavedActivity", "OpenLink", "DeleteSavedActivities", "DeleteAllSavedActivities",
        "Clipboard", "PasteFromDevice",
    ]
    static let propertiesInterface = "org.freedesktop.DBus.Properties"
    /// The properties' calls and what they take.
    static let propertySignatures: [String: String] = ["Get": "ss", "GetAll": "s", "Set": "ssv"]

    /// Registered apps at once (each holds a local-API connection to handoffd).
    static let maximumApps = 64
    /// Window calls of one app waiting their turn.
    static let maximumQueued = 64
    /// Continue, OpenStream and TakeStream under way at once (each waits on the network).
    static let maximumRequests = 16

    /// The exported object's calls, and the connections that end (which end their registrations).
    package struct Listening: Sendable {
        let calls: AsyncStream<DBusIncomingCall>
        let gone: AsyncStream<DBusSignal>
    }

    /// Exports the object: before the agent takes its name, so that once the name is there, so is
    /// the interface.
    package func listen() async throws(DBusError) -> Listening {
        // Only names that went (new owner empty); unique names start with ':'.
        let gone = try await bus.signals(
            matching: "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg2=''"
        )
        let calls = try await bus.export(path: Self.path, introspection: Self.introspection)
        return Listening(calls: calls, gone: gone)
    }

    /// Answers calls until the bus goes away or the task is cancelled.
    package func serve(_ listening: Listening) async {
        let apps = Registrations()
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await change in listening.gone where change.sender == "org.freedesktop.DBus" {
                    if let name = change.arguments.first?.stringValue, name.hasPrefix(":") { apps.remove(name)?.yield(.end(answering: nil)) }
                }
            }
            for await call in listening.calls {
                // None of these methods takes a descriptor: one sent anyway is not kept open.
                DBusValue.closeDescriptors(in: call.arguments)
                do throws(DBusError) {
                    try await check(call)
                } catch {
                    bus.reply(to: call, error: error)
                    continue
                }
                switch call.member {
                case "Register", "RegisterClaiming":
                    register(call, apps: apps, group: &group)
                case "Unregister":
                    guard let inbox = apps.remove(call.sender) else {
                        bus.reply(to: call, error: Self.notRegistered)
                        continue
                    }
                    // Answered once the calls before it are.
                    inbox.yield(.end(answering: call))
                case _ where call.interface == Self.propertiesInterface || Self.requests.contains(call.member):
                    guard apps.startRequest() else {
                        bus.reply(to: call, error: Self.error("limits_exceeded", "handoff-desktop has \(Self.maximumRequests) requests under way; try again"))
                        continue
                    }
                    group.addTask {
                        if call.interface == Self.propertiesInterface { await property(call) } else { await request(call) }
                        apps.requestEnded()
                    }
                default:
                    switch apps.submit(call) {
                    case .queued: break
                    case .notRegistered: bus.reply(to: call, error: Self.notRegistered)
                    case .busy: bus.reply(to: call, error: Self.error("limits_exceeded", "\(Self.maximumQueued) calls of this app are waiting; try again"))
                    }
                }
            }
            apps.endAll()
            group.cancelAll()
        }
    }

    /// This user's, a method of ours, the arguments it takes.
    private func check(_ call: DBusIncomingCall) async throws(DBusError) {
        guard (try? await bus.unixUser(of: call.sender)) == getuid() else {
            throw DBusError(name: DBusError.accessDeniedName, message: "handoff-desktop answers its own user only")
        }
        if call.interface == Self.propertiesInterface {
            guard let expected = Self.propertySignatures[call.member] else {
                throw DBusError(name: DBusError.unknownMethodName, message: "\(Self.propertiesInterface) has no method \(call.member)")
            }
            let given = call.arguments.map(\.signature).joined()
            guard given == expected else { throw DBusError(name: DBusError.invalidArgsName, message: "\(call.member) takes (\(expected)), not (\(given))") }
            return
        }
        guard call.interface.isEmpty || call.interface == Self.interface, let expected = Self.signatures[call.member] else {
            throw DBusError(name: DBusError.unknownMethodName, message: "\(Self.path) has no method \(call.interface).\(call.member) (see its introspection)")
        }
        let given = call.arguments.map(\.signature).joined()
        guard given == expected else {
            throw DBusError(name: DBusError.invalidArgsName, message: "\(call.member) takes (\(expected)), not (\(given))")
        }
    }

    private func register(_ call: DBusIncomingCall, apps: Registrations, group: inout DiscardingTaskGroup) {
        let claiming = call.member == "RegisterClaiming"
        let app = BusApp(
            bus: bus, client: client, sender: call.sender,
            registration: AppRegistration(
                appID: call.arguments[0].stringValue ?? "", continues: call.arguments[1].arrayItems?.compactMap(\.stringValue) ?? [],
                webDomains: claiming ? call.arguments[2].arrayItems?.compactMap(\.stringValue) ?? [] : []
            ),
            receiver: call.arguments[claiming ? 3 : 2].stringValue ?? "/", logger: logger
        )
        let (inbox, post) = AsyncStream.makeStream(of: BusApp.Input.self)
        guard let key = apps.add(call.sender, post) else {
            let why =
                apps.has(call.sender)
                ? Self.error("already_registered", "this connection registered an app already; Unregister first, or use another connection")
                : Self.error("limits_exceeded", "\(Self.maximumApps) apps are registered; try again once one quits")
            bus.reply(to: call, error: why)
            return
        }
        group.addTask {
            // The caller may have gone before its registration was there to end.
            let present = try? await bus.call(DBusMethodCall.busDaemon("NameHasOwner", [.string(call.sender)]), timeout: .seconds(5)).first?.boolValue
            if present == true {
                await app.run(answering: call, inbox: inbox, post: post) { apps.handled(call.sender, key: key) }
            } else {
                bus.reply(to: call, error: Self.error("not_registered", "the bus could not say whether the caller is still there; register again"))
            }
            apps.remove(call.sender, key: key)
            // Calls queued behind a registration that failed or ended are answered, not dropped.
            post.finish()
            for await input in inbox {
                switch input {
                case .call(let waiting): bus.reply(to: waiting, error: Self.notRegistered)
                case .end(let unregister?): bus.reply(to: unregister)
                default: break
                }
            }
        }
    }

    /// Continue, OpenStream, TakeStream, History, SavedActivity, OpenLink, the deletions of saved
    /// activities, Clipboard and PasteFromDevice: one local-API request each.
    private func request(_ call: DBusIncomingCall) async {
        let argument = call.arguments.first?.stringValue ?? ""
        do throws(DBusError) {
            switch call.member {
            case "History":
                let response = try await relayed { () async throws(HandoffClientError) in try await client.send(.history) }
                bus.reply(to: call, [.array(element: "a{sv}", response.entries.map(Self.historyEntry))])
            case "DeleteSavedActivities", "DeleteAllSavedActivities":
                let strings = { (value: DBusValue?) in value?.arrayItems?.compactMap(\.stringValue) ?? [] }
                // No ids is nothing to delete (as Apple's call with none), never "all of these types".
                if call.member == "DeleteSavedActivities", strings(call.arguments.first).isEmpty {
                    throw Self.error("invalid_value", "name the persistent identifiers to delete; DeleteAllSavedActivities deletes all of your types")
                }
                let request =
                    call.member == "DeleteSavedActivities"
                    ? DeleteSavedRequest(persistentIdentifiers: strings(call.arguments.first), types: strings(call.arguments.last))
                    : DeleteSavedRequest(types: strings(call.arguments.first))
                let response = try await relayed { () async throws(HandoffClientError) in try await client.send(.deleteSaved(request)) }
                bus.reply(to: call, [.string(response.deletion.lowercasedString)])
            case "SavedActivity":
                let response = try await relayed { () async throws(HandoffClientError) in try await client.send(.history(persistentIdentifier: argument)) }
                bus.reply(to: call, [response.entries.first.map(Self.historyEntry) ?? .vardict([:])])
            case "OpenLink":
                // Opened in this graphical session, whichever the daemon started in.
                let request = OpenLinkRequest(link: argument, environment: SessionEnvironment.pick(ProcessInfo.processInfo.environment))
                let response = try await relayed { () async throws(HandoffClientError) in try await client.send(.openLink(request)) }
                let continued = response.continued
                bus.reply(
                    to: call,
                    [.string(response.source.rawValue), .string(continued.continuationID.lowercasedString), ActivityDictionary.dictionary(continued.activity), .string(continued.peerName)]
                )
            case "Continue":
                let response = try await relayed { () async throws(HandoffClientError) in try await client.send(.continueActivity(ContinueRequest(peer: argument))) }
                bus.reply(to: call, [.string(response.continuationID.lowercasedString), ActivityDictionary.dictionary(response.activity), .string(response.peerName)])
            case "Clipboard":
                let state = try await relayed { () async throws(HandoffClientError) in try await client.send(.clipboard) }
                bus.reply(to: call, [Self.clipboard(state)])
            case "PasteFromDevice":
                let state = try await relayed { () async throws(HandoffClientError) in try await client.send(.clipboard) }
                guard let copy = state.newest, copy.peer != nil else {
                    throw Self.error(APIErrorCode.noClipboard.rawValue, "no other device copied anything in the last minutes")
                }
                let types = copy.items.map(\.type)
                guard let type = argument.isEmpty ? ClipboardCopy.preferredTypes.first(where: types.contains) ?? types.first : argument, types.contains(type) else {
                    throw Self.error(APIErrorCode.noClipboard.rawValue, "the copy has no \(argument); it has \(types.joined(separator: ", "))")
                }
                // The app only reads: its side says so at once, so that the other device's end
                // of the stream finishes as soon as the bytes are out.
                try await replyWithPipe(to: call, readOnly: true) { () async throws(HandoffClientError) in
                    try await client.pipe(.pasteClipboard(copy.id, type: type))
                }
            default:
                guard let id = UUID(uuidString: argument) else { throw DBusError(name: DBusError.invalidArgsName, message: "\(argument) is not an id (a UUID)") }
                try await replyWithPipe(to: call) { () async throws(HandoffClientError) in
                    call.member == "OpenStream" ? try await client.pipe(.openStream(continuationID: id)) : try await client.pipe(.takeStream(id))
                }
            }
        } catch {
            bus.reply(to: call, error: error)
        }
    }

    /// Opens a stream and answers `call` with its socket (`readOnly`: its writing side ended).
    private func replyWithPipe(
        to call: DBusIncomingCall, readOnly: Bool = false, _ open: () async throws(HandoffClientError) -> StreamPipe
    ) async throws(DBusError) {
        let pipe = try await relayed(open)
        if readOnly { pipe.finishWriting() }
        // The reply closes its copy once sent; the pipe closes its own.
        let copy = fcntl(pipe.fileDescriptor, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else { throw DBusError(name: DBusError.failedName, message: "cannot pass the stream: out of descriptors") }
        bus.reply(to: call, [.unixFD(copy)])
    }

    /// The clipboard as D-Bus says it (docs/dbus.md): the newest copy's `copy`, `device` (its
    /// name; "" for this device's own), `types`, `sizes`, `expires_at`; and `enabled`. No copy: only
    /// `enabled`.
    static func clipboard(_ state: ClipboardState) -> DBusValue {
        var entries: [String: DBusValue] = ["enabled": .bool(state.enabled)]
        if let copy = state.newest {
            entries["copy"] = .string(copy.id.lowercasedString)
            entries["device"] = .string(copy.peer?.name ?? "")
            entries["types"] = .array(element: "s", copy.items.map { .string($0.type) })
            entries["sizes"] = .array(element: "t", copy.items.map { .uint64(UInt64(max(0, $0.size))) })
            entries["expires_at"] = .string(copy.expiresAt.rfc3339)
        }
        return .vardict(entries)
    }

    /// Tells every app following the clipboard what it now holds (`ClipboardChanged`).
    package func clipboardChanged(_ state: ClipboardState) {
        bus.emit(DBusSignal(path: Self.path, interface: Self.interface, member: "ClipboardChanged", arguments: [Self.clipboard(state)]))
    }

    /// The interface's one property, `Handoff` (b, read and write): the device's handoff switch
    /// (docs/local-api.md, "Settings"), as `handoffctl config handoff on|off` sets it.
    private func property(_ call: DBusIncomingCall) async {
        let a = call.arguments
        do throws(DBusError) {
            guard a[0].stringValue == Self.interface else {
                // Another interface of ours (Introspectable) has no properties.
                guard call.member == "GetAll" else { throw DBusError(name: "org.freedesktop.DBus.Error.UnknownInterface", message: "no properties in \(a[0].stringValue ?? "")") }
                return bus.reply(to: call, [.vardict([:])])
            }
            if call.member != "GetAll", a[1].stringValue != "Handoff" {
                throw DBusError(name: "org.freedesktop.DBus.Error.UnknownProperty", message: "no property \(a[1].stringValue ?? "") in \(Self.interface); it has Handoff")
            }
            switch call.member {
            case "Set":
                guard case .variant(let value) = a[2], let on = value.boolValue else {
                    throw DBusError(name: DBusError.invalidArgsName, message: "Handoff is a boolean")
                }
                // What it was, so that the change is told even if the agent had not read it yet.
                let before = try await relayed { () async throws(HandoffClientError) in try await client.send(.settings) }
                handoffChanged(to: before.handoff)
                let now = try await relayed { () async throws(HandoffClientError) in try await client.send(.changeSettings(SettingsChange(handoff: on))) }
                bus.reply(to: call)
                handoffChanged(to: now.handoff)
            default:
                let now = try await relayed { () async throws(HandoffClientError) in try await client.send(.settings) }
                handoffChanged(to: now.handoff)
                bus.reply(to: call, [call.member == "Get" ? .variant(.bool(now.handoff)) : .vardict(["Handoff": .bool(now.handoff)])])
            }
        } catch {
            bus.reply(to: call, error: error)
        }
    }

    /// Tells whoever follows the property that the switch is now `on` (`PropertiesChanged`),
    /// when that is news: the agent calls it whenever handoffd says its status changed.
    package func handoffChanged(to on: Bool) {
        let news = told.value.withLock { last in
            defer { last = on }
            return last != nil && last != on
        }
        guard news else { return }
        bus.emit(
            DBusSignal(
                path: Self.path, interface: Self.propertiesInterface, member: "PropertiesChanged",
                arguments: [.string(Self.interface), .vardict(["Handoff": .bool(on)]), .array(element: "s", [])]
            )
        )
    }

    /// One entry of `History`: the activity as apps give theirs (`a{sv}`), the device, when.
    static func historyEntry(_ entry: HistoryEntry) -> DBusValue {
        var fields: [String: DBusValue] = [
            "activity": ActivityDictionary.dictionary(entry.activity), "own": .bool(entry.own), "seen_at": .int64(entry.seenAt.microsecondsSinceEpoch),
        ]
        if let device = entry.device {
            fields["device_id"] = .string(device.id.text)
            fields["device_name"] = .string(device.name)
        }
        return .vardict(fields)
    }

    private func relayed<T>(_ body: () async throws(HandoffClientError) -> T) async throws(DBusError) -> T {
        do throws(HandoffClientError) {
            return try await body()
        } catch {
            throw Self.dbusError(error)
        }
    }

    // MARK: Arguments and errors

    /// A window call's window (its first argument).
    static func window(of call: DBusIncomingCall) throws(DBusError) -> String {
        guard let window = call.arguments.first?.stringValue, !window.isEmpty else {
            throw DBusError(name: DBusError.invalidArgsName, message: "a window is a non-empty string the app chooses, e.g. \"main\"")
        }
        return window
    }

    /// The one place handoffd's errors become D-Bus errors: `org.handoff.Error.` + the local
    /// API's code (docs/local-api.md), or what kept handoff-desktop from asking.
    static func dbusError(_ error: HandoffClientError) -> DBusError {
        let code: String =
            switch error.code {
            case .api(let code): code.rawValue
            case .daemonNotRunning: "handoffd_not_running"
            case .permissionDenied: "permission_denied"
            case .protocolError: "protocol_error"
            case .timeout: "timeout"
            }
        return Self.error(code, error.message)
    }

    static func error(_ code: String, _ message: String) -> DBusError {
        DBusError(name: "org.handoff.Error." + code, message: message)
    }

    static let notRegistered = error("not_registered", "this connection has no app registered; call Register first")
}

/// The registered apps, by their unique bus names: what the call loop, the name watcher and the
/// apps' own tasks share.
final class Registrations: Sendable {
    private struct Entry {
        let key: UInt64
        let inbox: AsyncStream<BusApp.Input>.Continuation
        var queued = 0
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var nextKey: UInt64 = 0
        var requests = 0
    }

    private let state = Mutex(State())

    enum Submitted { case queued, notRegistered, busy }

    /// Nil when `sender` has one already or there are too many.
    func add(_ sender: String, _ inbox: AsyncStream<BusApp.Input>.Continuation) -> UInt64? {
        state.withLock { s in
            guard s.entries[sender] == nil, s.entries.count < DesktopInterface.maximumApps else { return nil }
            s.nextKey += 1
            s.entries[sender] = Entry(key: s.nextKey, inbox: inbox)
            return s.nextKey
        }
    }

    func has(_ sender: String) -> Bool { state.withLock { $0.entries[sender] != nil } }

    func remove(_ sender: String) -> AsyncStream<BusApp.Input>.Continuation? {
        state.withLock { $0.entries.removeValue(forKey: sender)?.inbox }
    }

    /// Only the registration `key` (a new one of the same connection stays).
    func remove(_ sender: String, key: UInt64) {
        state.withLock { s in
            if s.entries[sender]?.key == key { s.entries[sender] = nil }
        }
    }

    func submit(_ call: DBusIncomingCall) -> Submitted {
        state.withLock { s in
            guard let entry = s.entries[call.sender] else { return .notRegistered }
            guard entry.queued < DesktopInterface.maximumQueued else { return .busy }
            s.entries[call.sender]?.queued += 1
            entry.inbox.yield(.call(call))
            return .queued
        }
    }

    /// One call of registration `key` was carried out.
    func handled(_ sender: String, key: UInt64) {
        state.withLock { s in
            if let entry = s.entries[sender], entry.key == key, entry.queued > 0 { s.entries[sender]?.queued = entry.queued - 1 }
        }
    }

    func startRequest() -> Bool {
        state.withLock { s in
            guard s.requests < DesktopInterface.maximumRequests else { return false }
            s.requests += 1
            return true
        }
    }

    func requestEnded() { state.withLock { $0.requests -= 1 } }

    func endAll() {
        let inboxes = state.withLock { s in
            defer { s.entries.removeAll() }
            return s.entries.values.map(\.inbox)
        }
        for inbox in inboxes { inbox.yield(.end(answering: nil)) }
    }
}
