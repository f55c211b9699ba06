#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffDBus
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The status icon on the session bus (docs/desktop.md, "The status icon"): a StatusNotifierItem
/// at `/StatusNotifierItem` whose menu is served at `/MenuBar` (`com.canonical.dbusmenu`), both
/// described in `Interfaces/`. It shows whatever `TrayMenu` it was last given, and says which item
/// the user clicked. Panels find it through the StatusNotifierWatcher, which this registers with —
/// again each time a watcher appears (a panel that restarts forgets its items).
package final class StatusIcon: Sendable {
    package static let itemPath = "/StatusNotifierItem"
    package static let menuPath = "/MenuBar"
    static let itemInterface = "org.kde.StatusNotifierItem"
    static let menuInterface = "com.canonical.dbusmenu"
    package static let propertiesInterface = "org.freedesktop.DBus.Properties"
    package static let watcherName = "org.kde.StatusNotifierWatcher"
    static let watcherPath = "/StatusNotifierWatcher"

    static var itemIntrospection: String { String(decoding: PackageResources.org_kde_StatusNotifierItem_xml, as: UTF8.self) }
    static var menuIntrospection: String { String(decoding: PackageResources.com_canonical_dbusmenu_xml, as: UTF8.self) }

    private struct Shown {
        var menu: TrayMenu
        var layout = DBusMenuLayout()
    }

    package let bus: DBusConnection
    private let shown: Mutex<Shown>

    package init(bus: DBusConnection, menu: TrayMenu) {
        self.bus = bus
        var first = Shown(menu: menu)
        _ = first.layout.update(menu.items)
        shown = Mutex(first)
    }

    /// The objects' calls, and the watcher coming and going.
    package struct Listening: Sendable {
        let item: AsyncStream<DBusIncomingCall>
        let menu: AsyncStream<DBusIncomingCall>
        /// `NameOwnerChanged` for the watcher's name.
        package let watchers: AsyncStream<DBusSignal>
    }

    /// Exports both objects: before registering, since a panel asks for everything at once.
    package func listen() async throws(DBusError) -> Listening {
        let watchers = try await bus.signals(
            matching: "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(Self.watcherName)'"
        )
        let item = try await bus.export(path: Self.itemPath, introspection: Self.itemIntrospection)
        let menu = try await bus.export(path: Self.menuPath, introspection: Self.menuIntrospection)
        return Listening(item: item, menu: menu, watchers: watchers)
    }

    /// Tells the watcher the icon is there. False when no watcher runs (no panel shows status
    /// icons, or none has started yet) or it refused.
    package func register() async -> Bool {
        let call = DBusMethodCall(
            destination: Self.watcherName, path: Self.watcherPath, interface: Self.watcherName, member: "RegisterStatusNotifierItem",
            arguments: [.string(bus.uniqueName)]
        )
        return (try? await bus.call(call, timeout: .seconds(5))) != nil
    }

    /// Whether a watcher runs now (a panel, or a program between panels and icons).
    package func watcherRuns() async -> Bool {
        (try? await bus.call(DBusMethodCall.busDaemon("NameHasOwner", [.string(Self.watcherName)]), timeout: .seconds(5)))?.first?.boolValue == true
    }

    /// Whether a panel shows the registered icons (the watcher's `IsStatusNotifierHostRegistered`).
    package func hostRegistered() async -> Bool {
        let call = DBusMethodCall(
            destination: Self.watcherName, path: Self.watcherPath, interface: Self.propertiesInterface, member: "Get",
            arguments: [.string(Self.watcherName), .string("IsStatusNotifierHostRegistered")]
        )
        return (try? await bus.call(call, timeout: .seconds(5)))?.first?.boolValue == true
    }

    /// Shows `menu`: the panel hears what changed and reads it again.
    package func show(_ menu: TrayMenu) {
        let (layoutChanged, revision, lookChanged) = shown.withLock { s in
            let look = s.menu.active != menu.active || s.menu.title != menu.title || s.menu.detail != menu.detail
            s.menu = menu
            let changed = s.layout.update(menu.items)
            return (changed, s.layout.revision, look)
        }
        if layoutChanged {
            bus.emit(DBusSignal(path: Self.menuPath, interface: Self.menuInterface, member: "LayoutUpdated", arguments: [.uint32(revision), .int32(0)]))
        }
        if lookChanged {
            for member in ["NewIcon", "NewToolTip", "NewTitle"] {
                bus.emit(DBusSignal(path: Self.itemPath, interface: Self.itemInterface, member: member))
            }
        }
    }

    /// Answers the panel until the streams end; `clicked` hears each item the user chooses.
    package func serve(_ listening: Listening, clicked: @escaping @Sendable (TrayMenu.Key) -> Void) async {
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await call in listening.item { await self.answer(call) { call throws(DBusError) in try self.answerItem(call) } }
            }
            group.addTask {
                for await call in listening.menu { await self.answer(call) { call throws(DBusError) in try self.answerMenu(call, clicked: clicked) } }
            }
        }
    }

    /// Checks the caller first (this user only), then answers.
    private func answer(_ call: DBusIncomingCall, _ body: (DBusIncomingCall) throws(DBusError) -> [DBusValue]) async {
        DBusValue.closeDescriptors(in: call.arguments)
        guard (try? await bus.unixUser(of: call.sender)) == getuid() else {
            return bus.reply(to: call, error: DBusError(name: DBusError.accessDeniedName, message: "handoff-desktop answers its own user only"))
        }
        do throws(DBusError) {
            bus.reply(to: call, try body(call))
        } catch {
            bus.reply(to: call, error: error)
        }
    }

    // MARK: The item

    func itemProperties() -> [String: DBusValue] {
        let menu = shown.withLock { $0.menu }
        let pixmaps = TrayIcon.pixmaps(active: menu.active)
        let none = DBusValue.array(element: "(iiay)", [])
        return [
            "Category": .string("ApplicationStatus"), "Id": .string("handoff"), "Title": .string(menu.title), "Status": .string("Active"),
            "WindowId": .int32(0), "IconThemePath": .string(""), "Menu": .objectPath(Self.menuPath), "ItemIsMenu": .bool(true),
            "IconName": .string(""), "IconPixmap": pixmaps, "OverlayIconName": .string(""), "OverlayIconPixmap": none,
            "AttentionIconName": .string(""), "AttentionIconPixmap": none, "AttentionMovieName": .string(""),
            "ToolTip": .structure([.string(""), none, .string(menu.title), .string(menu.detail)]),
        ]
    }

    private func answerItem(_ call: DBusIncomingCall) throws(DBusError) -> [DBusValue] {
        switch (call.interface, call.member) {
        case (Self.propertiesInterface, _):
            return try Self.answerProperties(call, interface: Self.itemInterface, itemProperties())
        case (Self.itemInterface, "Activate"), (Self.itemInterface, "SecondaryActivate"), (Self.itemInterface, "ContextMenu"),
            ("", "Activate"), ("", "SecondaryActivate"), ("", "ContextMenu"):
            // The menu is the icon's only action (ItemIsMenu): panels open it themselves.
            try Self.expect(call, "ii")
            return []
        case (Self.itemInterface, "Scroll"), ("", "Scroll"):
            try Self.expect(call, "is")
            return []
        default:
            throw Self.unknown(call, at: Self.itemPath)
        }
    }

    // MARK: The menu

    package static let menuProperties: [String: DBusValue] = [
        "Version": .uint32(3), "TextDirection": .string("ltr"), "Status": .string("normal"), "IconThemePath": .strings([]),
    ]

    private func answerMenu(_ call: DBusIncomingCall, clicked: @Sendable (TrayMenu.Key) -> Void) throws(DBusError) -> [DBusValue] {
        let a = call.arguments
        if call.interface == Self.propertiesInterface { return try Self.answerProperties(call, interface: Self.menuInterface, Self.menuProperties) }
        guard call.interface.isEmpty || call.interface == Self.menuInterface else { throw Self.unknown(call, at: Self.menuPath) }
        let layout = shown.withLock { $0.layout }
        switch call.member {
        case "GetLayout":
            try Self.expect(call, "iias")
            guard let parent = a[0].integerValue.flatMap({ Int32(exactly: $0) }), let node = layout.layout(parent: parent) else {
                throw DBusError(name: DBusError.invalidArgsName, message: "no menu item has that number (the menu changed; read it again)")
            }
            return [.uint32(layout.revision), node]
        case "GetGroupProperties":
            try Self.expect(call, "aias")
            let ids = a[0].arrayItems?.compactMap { $0.integerValue.flatMap { Int32(exactly: $0) } } ?? []
            return [layout.properties(of: ids, names: a[1].arrayItems?.compactMap(\.stringValue) ?? [])]
        case "GetProperty":
            try Self.expect(call, "is")
            guard let id = a[0].integerValue.flatMap({ Int32(exactly: $0) }), let value = layout.property(a[1].stringValue ?? "", of: id) else {
                throw DBusError(name: DBusError.invalidArgsName, message: "no such menu item or property")
            }
            return [.variant(value)]
        case "Event":
            try Self.expect(call, "isvu")
            let id = a[0].integerValue.flatMap { Int32(exactly: $0) } ?? -1
            guard Self.happen(id, a[1].stringValue ?? "", layout, clicked) else {
                throw DBusError(name: DBusError.invalidArgsName, message: "no menu item has that number (the menu changed)")
            }
            return []
        case "EventGroup":
            try Self.expect(call, "a(isvu)")
            var unknown: [DBusValue] = []
            for event in a[0].arrayItems ?? [] {
                guard case .structure(let fields) = event, fields.count == 4, let id = fields[0].integerValue.flatMap({ Int32(exactly: $0) }) else { continue }
                if !Self.happen(id, fields[1].stringValue ?? "", layout, clicked) { unknown.append(.int32(id)) }
            }
            return [.array(element: "i", unknown)]
        case "AboutToShow":
            try Self.expect(call, "i")
            // The menu is always up to date: LayoutUpdated is sent as soon as anything changes.
            return [.bool(false)]
        case "AboutToShowGroup":
            try Self.expect(call, "ai")
            return [.array(element: "i", []), .array(element: "i", [])]
        default:
            throw Self.unknown(call, at: Self.menuPath)
        }
    }

    /// An event on item `id`: a click on an item that can be chosen reaches the agent; other
    /// events ("opened", "closed", "hovered") are noted by nobody. False: no such item.
    private static func happen(_ id: Int32, _ event: String, _ layout: DBusMenuLayout, _ clicked: @Sendable (TrayMenu.Key) -> Void) -> Bool {
        if id == 0 { return true }
        guard let key = layout.key(for: id) else { return false }
        if event == "clicked", layout.items.first(where: { $0.key == key })?.enabled == true { clicked(key) }
        return true
    }

    // MARK: Both

    private static func answerProperties(_ call: DBusIncomingCall, interface: String, _ properties: [String: DBusValue]) throws(DBusError) -> [DBusValue] {
        let a = call.arguments
        switch call.member {
        case "GetAll":
            try expect(call, "s")
            // Another interface of ours (Introspectable) has no properties.
            return [.vardict(a[0].stringValue == interface ? properties : [:])]
        case "Get":
            try expect(call, "ss")
            guard a[0].stringValue == interface, let value = properties[a[1].stringValue ?? ""] else {
                throw DBusError(name: "org.freedesktop.DBus.Error.UnknownProperty", message: "no property \(a[1].stringValue ?? "") in \(a[0].stringValue ?? "")")
            }
            return [.variant(value)]
        case "Set":
            throw DBusError(name: "org.freedesktop.DBus.Error.PropertyReadOnly", message: "the status icon's properties are read-only")
        default:
            throw unknown(call, at: call.path)
        }
    }

    private static func expect(_ call: DBusIncomingCall, _ signature: String) throws(DBusError) {
        let given = call.arguments.map(\.signature).joined()
        guard given == signature else { throw DBusError(name: DBusError.invalidArgsName, message: "\(call.member) takes (\(signature)), not (\(given))") }
    }

    private static func unknown(_ call: DBusIncomingCall, at path: String) -> DBusError {
        DBusError(name: DBusError.unknownMethodName, message: "\(path) has no method \(call.interface).\(call.member) (see its introspection)")
    }
}
