#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DesktopCore
import HandoffAPI
import HandoffClient
import HandoffDBus
import HandoffModel
import HandoffSystem
import Logging

/// One app registered over D-Bus (`org.handoff.Desktop1.Register`, docs/dbus.md): the agent holds
/// a local-API app registration for it (docs/apps.md) and relays both ways — the app's window
/// calls to handoffd in the order it made them, handoffd's events to the app as unicast signals,
/// and continuations as calls to the app's `org.handoff.Receiver1` object.
///
/// It keeps what it gave handoffd (each window's activity, the focus), so that when handoffd
/// restarts the app's windows are given again as the app left them, as HandoffKit does.
struct BusApp: Sendable {
    let bus: DBusConnection
    let client: HandoffClient
    /// The app's unique bus name: where signals and continuations go.
    let sender: String
    let registration: AppRegistration
    /// The app's `org.handoff.Receiver1` object.
    let receiver: String
    let logger: Logger

    enum Input: Sendable {
        /// A window call from the app, in the order it made them.
        case call(DBusIncomingCall)
        case event(AppEvent, registration: UUID)
        /// The registration's event stream ended: handoffd went away or forgot it.
        case lost(registration: UUID)
        case registered(Registered)
        /// Unregister (answered once the calls before it are), or the app's connection ended.
        case end(answering: DBusIncomingCall?)
    }

    struct Registered: @unchecked Sendable {
        let events: NDJSONSubscription<AppEvent>
        let id: UUID
        let restored: [RestoredWindow]
        /// How long the app's receiver has (`AppEvent.receiverDeadline`).
        let receiverDeadline: Duration
    }

    /// What handoffd has been given for the app's windows.
    struct Windows {
        private(set) var activities: [String: ActivityContent] = [:]
        /// Their encoded sizes, and those together: bounded as handoffd bounds them, also while
        /// it is away.
        private var sizes: [String: Int] = [:]
        private(set) var bytes = 0
        var focused: String?
        /// Windows whose activity was invalidated: Update is refused until BecomeCurrent.
        var invalidated: Set<String> = []
        /// What windows declared they take (SetActivationConditions), given again with the rest.
        var conditions: [String: ActivationConditions] = [:]

        /// The windows it knows of: with an activity, invalidated, or with conditions.
        var count: Int { Set(activities.keys).union(invalidated).union(conditions.keys).count }

        /// The activities' size together if `window`'s were `size` bytes.
        func bytes(with size: Int, for window: String) -> Int { bytes - (sizes[window] ?? 0) + size }

        mutating func keep(_ content: ActivityContent, size: Int, for window: String) {
            bytes = bytes(with: size, for: window)
            activities[window] = content
            sizes[window] = size
        }

        mutating func forget(_ window: String) {
            activities[window] = nil
            bytes -= sizes.removeValue(forKey: window) ?? 0
        }
    }

    /// Windows an app may have (activities and invalidated ones together), and their activities'
    /// size together: handoffd's bounds (docs/apps.md, "Bounds"), kept here too because what an
    /// app does while handoffd is away is held here until it is back.
    static let maximumWindows = 256
    static let maximumBytes = 512 * 1024
    static let maximumWindowIDBytes = 64

    /// Registers, answers `register` (the app's Register call) and relays until `.end`. Returns
    /// at once if the first registration fails (the app was told why).
    func run(answering register: DBusIncomingCall, inbox: AsyncStream<Input>, post: AsyncStream<Input>.Continuation, handled: @escaping @Sendable () -> Void) async {
        let first: Registered
        do throws(HandoffClientError) {
            first = try await connect()
        } catch {
            bus.reply(to: register, error: DesktopInterface.dbusError(error))
            return
        }
        let restored = first.restored.map { DBusValue.dictEntry(.string($0.window), ActivityDictionary.dictionary($0.activity)) }
        bus.reply(to: register, [.array(element: "{sa{sv}}", restored)])
        logger.info("app registered over D-Bus", metadata: ["app": "\(registration.appID)"])
        var current: UUID? = first.id
        var receiverDeadline = first.receiverDeadline
        var windows = Windows()
        var ended = false
        await withDiscardingTaskGroup { group in
            group.addTask { await follow(first, post: post) }
            for await input in inbox {
                if ended {
                    // Only what was already queued: a registration made meanwhile is closed.
                    if case .registered(let late) = input { late.events.close() }
                    continue
                }
                switch input {
                case .call(let call):
                    await handle(call, windows: &windows, registration: &current)
                    handled()
                case .event(let event, let id) where id == current:
                    relay(event, registration: id, receiverDeadline: receiverDeadline, group: &group)
                case .lost(let id) where id == current:
                    current = nil
                    logger.notice("an app's registration ended; registering it again", metadata: ["app": "\(registration.appID)"])
                    group.addTask { await reconnect(post: post) }
                case .registered(let again):
                    guard current == nil else {
                        again.events.close()
                        continue
                    }
                    current = again.id
                    receiverDeadline = again.receiverDeadline
                    group.addTask { await follow(again, post: post) }
                    await giveAgain(windows, registration: again.id)
                case .end(let unregister):
                    ended = true
                    group.cancelAll()
                    post.finish()
                    if let unregister { bus.reply(to: unregister) }
                case .event, .lost:
                    continue
                }
            }
            group.cancelAll()
        }
        logger.info("app unregistered from D-Bus", metadata: ["app": "\(registration.appID)"])
    }

    private func connect() async throws(HandoffClientError) -> Registered {
        let events = try await client.subscribe(.registerApp(registration))
        guard case .registered(let id, let restored, let answerWithin)? = try await events.next()?.body else {
            events.close()
            throw HandoffClientError(.protocolError, "handoffd did not confirm the registration; are handoff-desktop and handoffd the same version?")
        }
        return Registered(events: events, id: id, restored: restored, receiverDeadline: AppEvent.receiverDeadline(answerWithin: answerWithin))
    }

    /// The registration's events until it ends (or the app does).
    private func follow(_ registered: Registered, post: AsyncStream<Input>.Continuation) async {
        await withTaskCancellationHandler {
            while let event = try? await registered.events.next() {
                post.yield(.event(event, registration: registered.id))
            }
            registered.events.close()
            post.yield(.lost(registration: registered.id))
        } onCancel: {
            registered.events.close()
        }
    }

    private func reconnect(post: AsyncStream<Input>.Continuation) async {
        var attempt = 0
        while !Task.isCancelled {
            let delay = AgentOptions.reconnectDelays[min(attempt, AgentOptions.reconnectDelays.count - 1)]
            attempt += 1
            guard (try? await QuietSleep.sleep(for: delay)) != nil else { return }
            if let again = try? await connect() {
                post.yield(.registered(again))
                return
            }
        }
    }

    /// After registering again: each window's activity, then the focus.
    private func giveAgain(_ windows: Windows, registration id: UUID) async {
        for (window, declared) in windows.conditions.sorted(by: { $0.key < $1.key }) {
            _ = try? await client.send(.setActivationConditions(declared, window: window, registration: id))
        }
        for (window, content) in windows.activities.sorted(by: { $0.key < $1.key }) {
            _ = try? await client.send(.setWindowActivity(content, window: window, registration: id))
        }
        if let focused = windows.focused { _ = try? await client.send(.focusWindow(focused, registration: id)) }
    }

    // MARK: The app's calls

    private func handle(_ call: DBusIncomingCall, windows: inout Windows, registration: inout UUID?) async {
        do throws(DBusError) {
            let window = try DesktopInterface.window(of: call)
            guard window.utf8.count <= Self.maximumWindowIDBytes else {
                throw DesktopInterface.error("invalid_window_id", "a window id is 1 to \(Self.maximumWindowIDBytes) bytes")
            }
            guard windows.count < Self.maximumWindows || windows.activities[window] != nil || windows.conditions[window] != nil
                || windows.invalidated.contains(window)
                || ["Resign", "Focus", "CloseWindow", "CloseWindowKeepingRestoration", "RemoveRestoration"].contains(call.member)
            else {
                throw DesktopInterface.error("too_many_windows", "\(self.registration.appID) has \(Self.maximumWindows) windows with activities; close some (CloseWindow)")
            }
            var reply: [DBusValue] = []
            switch call.member {
            case "BecomeCurrent", "Update":
                let content = try ActivityDictionary.content(from: call.arguments[1])
                if call.member == "Update" {
                    guard !windows.invalidated.contains(window) else {
                        throw DesktopInterface.error("invalidated", "the activity of window \(window) was invalidated; make a new one current with BecomeCurrent")
                    }
                    guard windows.activities[window] != nil else {
                        throw DesktopInterface.error("no_activity", "window \(window) has no activity to update; make one current with BecomeCurrent")
                    }
                }
                let size = try Self.checkedSize(of: content)
                guard windows.bytes(with: size, for: window) <= Self.maximumBytes else {
                    throw DesktopInterface.error("too_many_windows", "\(self.registration.appID)'s window activities would be larger than \(Self.maximumBytes / 1024) KiB together")
                }
                let answer = try await relayed(&registration) { id async throws(HandoffClientError) in
                    let set = try await client.send(.setWindowActivity(content, window: window, registration: id))
                    if call.member == "BecomeCurrent" { _ = try await client.send(.focusWindow(window, registration: id)) }
                    return set
                } keep: {
                    windows.keep(content, size: size, for: window)
                    if call.member == "BecomeCurrent" {
                        windows.focused = window
                        windows.invalidated.remove(window)
                    }
                }
                reply = [.string(answer.activityID?.lowercasedString ?? ""), .strings(answer.warnings)]
            case "Resign", "Invalidate":
                _ = try await relayed(&registration) { id async throws(HandoffClientError) in
                    try await client.send(.withdrawWindowActivity(window: window, registration: id))
                } keep: {
                    windows.forget(window)
                    if call.member == "Invalidate" { windows.invalidated.insert(window) }
                }
            case "Focus":
                _ = try await relayed(&registration) { id async throws(HandoffClientError) in try await client.send(.focusWindow(window, registration: id)) } keep: {
                    windows.focused = window
                }
            case "CloseWindow", "CloseWindowKeepingRestoration":
                // Kept: the window's activity as the app last gave it (also one handoffd has not
                // had yet), as its restoration activity.
                let keeping = call.member == "CloseWindowKeepingRestoration"
                let last = keeping ? windows.activities[window] : nil
                _ = try await relayed(&registration) { id async throws(HandoffClientError) in
                    if let last { _ = try await client.send(.saveRestoration(last, window: window, registration: id)) }
                    return try await client.send(.closeWindow(window, registration: id, keepingRestoration: keeping))
                } keep: {
                    windows.forget(window)
                    windows.invalidated.remove(window)
                    windows.conditions[window] = nil
                    if windows.focused == window { windows.focused = nil }
                }
            case "SetActivationConditions":
                let strings = { (value: DBusValue) in value.arrayItems?.compactMap(\.stringValue) ?? [] }
                let declared = ActivationConditions(can: strings(call.arguments[1]), prefers: strings(call.arguments[2]))
                if let problem = declared.problem { throw DesktopInterface.error("invalid_value", "activation conditions: \(problem)") }
                _ = try await relayed(&registration) { id async throws(HandoffClientError) in
                    try await client.send(.setActivationConditions(declared, window: window, registration: id))
                } keep: {
                    windows.conditions[window] = declared
                }
            case "SaveRestoration":
                let content = try ActivityDictionary.content(from: call.arguments[1])
                _ = try Self.checkedSize(of: content)
                _ = try await relayed(&registration) { id async throws(HandoffClientError) in
                    try await client.send(.saveRestoration(content, window: window, registration: id))
                } keep: {}
            case "RemoveRestoration":
                _ = try await relayed(&registration) { id async throws(HandoffClientError) in
                    try await client.send(.removeRestoration(window: window, registration: id))
                } keep: {}
            default:
                throw DBusError(name: DBusError.unknownMethodName, message: "org.handoff.Desktop1 has no method \(call.member)")
            }
            bus.reply(to: call, reply)
        } catch {
            bus.reply(to: call, error: error)
        }
    }

    /// An activity's size as the local API carries it (JSON), refused alone when it is more than
    /// the agent keeps of an app's activities altogether: it could never be kept, nor should it
    /// be sent. Below that, handoffd judges it by its own limit (`max_activity_bytes`).
    private static func checkedSize(of content: ActivityContent) throws(DBusError) -> Int {
        let size = (try? LocalAPIJSON.encoder().encode(content).count) ?? Int.max
        guard size <= Self.maximumBytes else {
            throw DesktopInterface.error(
                "payload_too_large",
                "the activity is \(size) bytes; handoff-desktop holds at most \(Self.maximumBytes / 1024) KiB of an app's activities — move bulk data into a continuation stream"
            )
        }
        return size
    }

    /// A window call for the current registration. What handoffd takes is kept (`keep`); while
    /// handoffd is away it is kept too, and given once it is back — the app is told it is away.
    private func relayed(
        _ registration: inout UUID?, _ body: (UUID) async throws(HandoffClientError) -> WindowResponse, keep: () -> Void
    ) async throws(DBusError) -> WindowResponse {
        guard let id = registration else {
            keep()
            throw Self.away
        }
        do throws(HandoffClientError) {
            let answer = try await body(id)
            keep()
            return answer
        } catch {
            switch error.code {
            case .api(.unknownRegistration), .daemonNotRunning:
                keep()
                throw Self.away
            default:
                throw DesktopInterface.dbusError(error)
            }
        }
    }

    private static let away = DesktopInterface.error(
        "handoffd_not_running", "handoffd is not running (start it: systemctl --user start handoffd); handoff-desktop hands this over once it is back"
    )

    // MARK: handoffd's events

    private func relay(_ event: AppEvent, registration id: UUID, receiverDeadline: Duration, group: inout DiscardingTaskGroup) {
        switch event.body {
        case .registered, .unknown:
            return
        case .willContinue(let continuation, let type, let peer, let window):
            signal("WillContinue", [.string(continuation.lowercasedString), .string(type), .string(peer.name), .string(window ?? "")])
        case .continueFailed(let continuation, let type, let code, let reason):
            signal("ContinueFailed", [.string(continuation.lowercasedString), .string(type), .string(code.rawValue), .string(reason)])
        case .willSave(let window, let activity, let peer):
            signal("WillSave", [.string(window), .string(activity.lowercasedString), .string(peer.name)])
        case .wasContinued(let window, let activity, let peer):
            signal("WasContinued", [.string(window), .string(activity.lowercasedString), .string(peer.name)])
        case .streamRequested(let window, let activity, let stream, let peer):
            signal("StreamRequested", [.string(window), .string(activity.lowercasedString), .string(stream.lowercasedString), .string(peer.name)])
        case .continue(let continuation, let activity, let peer, let window):
            group.addTask { await deliver(continuation, activity, from: peer, window: window, registration: id, within: receiverDeadline) }
        }
    }

    private func signal(_ member: String, _ arguments: [DBusValue]) {
        bus.emit(DBusSignal(destination: sender, path: DesktopInterface.path, interface: DesktopInterface.interface, member: member, arguments: arguments))
    }

    /// Calls the app's receiver and answers handoffd with what it said (not taken when it did
    /// not answer within `deadline`, or has no receiver).
    private func deliver(_ continuation: UUID, _ activity: Activity, from peer: LocalEvent.PeerRef, window: String?, registration id: UUID, within deadline: Duration) async {
        let call = DBusMethodCall(
            destination: sender, path: receiver, interface: "org.handoff.Receiver1", member: "Continue",
            arguments: [.string(continuation.lowercasedString), ActivityDictionary.dictionary(activity), .string(peer.name), .string(window ?? "")]
        )
        let answer: ContinuationAnswer
        do throws(DBusError) {
            let reply = try await bus.call(call, timeout: deadline)
            guard reply.map(\.signature).joined() == "bss", let taken = reply[0].boolValue else {
                throw DBusError(name: DBusError.invalidArgsName, message: "Receiver1.Continue answered (\(reply.map(\.signature).joined())), not (bss)")
            }
            let chosen = reply[1].stringValue ?? ""
            let reason = reply[2].stringValue ?? ""
            answer = ContinuationAnswer(taken: taken, window: chosen.isEmpty ? nil : chosen, reason: taken || reason.isEmpty ? nil : reason)
        } catch {
            logger.notice("an app's receiver did not take a continuation", metadata: ["app": "\(registration.appID)", "error": "\(error.name)"])
            let timedOut = error.name == "org.freedesktop.DBus.Error.NoReply" || error.name == "org.freedesktop.DBus.Error.Timeout"
            answer = ContinuationAnswer(taken: false, reason: timedOut ? "\(registration.appID) did not take the activity in time" : "\(registration.appID): \(error.message)")
        }
        _ = try? await client.send(.answerContinuation(continuation, registration: id, answer))
    }
}
