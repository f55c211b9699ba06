import HandoffAPI
import HandoffDBus

/// The desktop's notification server, `org.freedesktop.Notifications` on the session bus (the
/// Desktop Notifications specification): what it can do, showing and closing notifications, and
/// what the user did with them.
package struct NotificationServer: Sendable {
    package enum Reply: Equatable, Sendable {
        /// The user chose an action (`default` is a click on the notification itself).
        case invoked(id: UInt32, action: String)
        /// Reasons: 1 expired, 2 dismissed by the user, 3 closed by CloseNotification, 4 other.
        case closed(id: UInt32, reason: UInt32)
    }

    package static let name = "org.freedesktop.Notifications"
    package static let path = "/org/freedesktop/Notifications"
    package static let interface = "org.freedesktop.Notifications"
    /// The action key of the "Continue" button; `default` is the notification's body.
    package static let continueAction = "continue"

    package let bus: DBusConnection

    package init(bus: DBusConnection) { self.bus = bus }

    /// `GetCapabilities`: "actions", "body-markup", "icon-static"…
    package func capabilities() async throws(DBusError) -> Set<String> {
        let reply = try await bus.call(call("GetCapabilities"), timeout: .seconds(5))
        return Set(reply.first?.arrayItems?.compactMap(\.stringValue) ?? [])
    }

    /// The signals that say what the user does with notifications, from now on (`reply(from:)`
    /// reads them). Any client may send us such a signal (a unicast one passes every match): only
    /// those whose sender is `owner()` count.
    package func signals() async throws(DBusError) -> AsyncStream<DBusSignal> {
        try await bus.signals(matching: "type='signal',sender='\(Self.name)',interface='\(Self.interface)',path='\(Self.path)'")
    }

    /// Who serves notifications now (a unique name), from the bus daemon; nil: nobody.
    package func owner() async -> String? {
        try? await bus.call(DBusMethodCall.busDaemon("GetNameOwner", [.string(Self.name)]), timeout: .seconds(5)).first?.stringValue
    }

    /// The bus daemon's word each time the server changes hands (arguments: name, old, new owner).
    package func ownerChanges() async throws(DBusError) -> AsyncStream<DBusSignal> {
        try await bus.signals(
            matching: "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(Self.name)'"
        )
    }

    package static func reply(from signal: DBusSignal) -> Reply? {
        guard let id = signal.arguments.first?.integerValue.flatMap({ UInt32(exactly: $0) }), signal.arguments.count >= 2 else { return nil }
        switch signal.member {
        case "ActionInvoked": return signal.arguments[1].stringValue.map { .invoked(id: id, action: $0) }
        case "NotificationClosed": return signal.arguments[1].integerValue.flatMap { UInt32(exactly: $0) }.map { .closed(id: id, reason: $0) }
        default: return nil
        }
    }

    /// Shows a notification (in place of `replacing`); returns its id.
    package func notify(_ note: Note, replacing: UInt32?) async throws(DBusError) -> UInt32 {
        var hints: [String: DBusValue] = ["urgency": .byte(1), "category": .string("device")]
        if let desktopEntry = note.desktopEntry { hints["desktop-entry"] = .string(desktopEntry) }
        let reply = try await bus.call(
            call(
                "Notify",
                [
                    .string(note.appName), .uint32(replacing ?? 0), .string(note.icon ?? ""), .string(note.summary), .string(note.body),
                    .strings(note.actions.flatMap { [$0.key, $0.label] }), .vardict(hints), .int32(note.expireMilliseconds),
                ]
            ),
            timeout: .seconds(5)
        )
        guard let id = reply.first?.integerValue.flatMap({ UInt32(exactly: $0) }) else {
            throw DBusError(name: DBusError.failedName, message: "the notification server did not say which notification it showed")
        }
        return id
    }

    package func close(_ id: UInt32) async throws(DBusError) {
        _ = try await bus.call(call("CloseNotification", [.uint32(id)]), timeout: .seconds(5))
    }

    private func call(_ member: String, _ arguments: [DBusValue] = []) -> DBusMethodCall {
        DBusMethodCall(destination: Self.name, path: Self.path, interface: Self.interface, member: member, arguments: arguments)
    }
}

/// One notification's text, as the server gets it.
package struct Note: Equatable, Sendable {
    package struct Action: Equatable, Sendable {
        package var key: String
        package var label: String

        package init(key: String, label: String) {
            self.key = key
            self.label = label
        }
    }

    package var appName: String
    package var icon: String?
    package var summary: String
    package var body: String
    package var actions: [Action]
    /// 0: until we close it.
    package var expireMilliseconds: Int32
    package var desktopEntry: String?

    package init(
        appName: String, icon: String? = nil, summary: String, body: String, actions: [Action], expireMilliseconds: Int32, desktopEntry: String? = nil
    ) {
        self.appName = appName
        self.icon = icon
        self.summary = summary
        self.body = body
        self.actions = actions
        self.expireMilliseconds = expireMilliseconds
        self.desktopEntry = desktopEntry
    }

    /// "Continue “TITLE” from DEVICE", with the app that would take it — and, for a server that
    /// cannot show actions, the command that does the same.
    package static func offer(_ offer: Offer, capabilities: Set<String>) -> Note {
        let markup = capabilities.contains("body-markup")
        let app = markup ? escaped(offer.target.name) : offer.target.name
        var body = "Opens in \(app)"
        var actions: [Action] = []
        if capabilities.contains("actions") {
            actions = [Action(key: "default", label: "Continue"), Action(key: NotificationServer.continueAction, label: "Continue")]
        } else {
            let command = "handoffctl continue \(offer.peer.name)"
            body += "\n" + (markup ? escaped(command) : command)
        }
        return Note(
            appName: "Handoff", icon: offer.target.icon, summary: "Continue “\(offer.activity.title)” from \(offer.peer.name)", body: body,
            actions: actions, expireMilliseconds: 0, desktopEntry: "handoff-desktop"
        )
    }

    /// A continuation the user asked for that did not happen, and why.
    package static func failure(title: String, device: String, reason: String, capabilities: Set<String>) -> Note {
        Note(
            appName: "Handoff", icon: "dialog-warning", summary: "Could not continue “\(title)” from \(device)",
            body: capabilities.contains("body-markup") ? escaped(reason) : reason, actions: [], expireMilliseconds: 10_000,
            desktopEntry: "handoff-desktop"
        )
    }

    /// The body-markup subset is XML-like: these three must be escaped.
    package static func escaped(_ text: String) -> String {
        text.replacing("&", with: "&amp;").replacing("<", with: "&lt;").replacing(">", with: "&gt;")
    }
}
