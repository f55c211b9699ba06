import DesktopAgent
import DesktopTray
import Foundation
import HandoffAPI
import HandoffDBus
import HandoffModel
import HandoffTestSupport
import Synchronization
import Testing

/// `StatusIcon` on a real session bus, read by another connection as a panel reads it: every
/// property in one `GetAll` with the types the specification gives, the menu's layout, a click
/// that names the item the user saw, changes announced, nothing registered where no watcher runs.
/// (`TrayEndToEndTests` shows it in Debian's xfce4-panel.)
@Suite(.timeLimit(.minutes(1))) struct StatusIconTests {
    /// What the icon heard the user choose.
    final class Clicks: Sendable {
        private let keys = Mutex<[TrayMenu.Key]>([])
        func add(_ key: TrayMenu.Key) { keys.withLock { $0.append(key) } }
        var all: [TrayMenu.Key] { keys.withLock { $0 } }
    }

    func withIcon(_ menu: TrayMenu, _ body: (StatusIcon, DBusConnection, DBusConnection, Clicks) async throws -> Void) async throws {
        let directory = try TempDirectory.make(prefix: "handoff-tray")
        defer { TempDirectory.remove(directory) }
        let bus = try await SessionBus(directory: directory)
        let service = try DBusConnection.connect(address: bus.address)
        let panel = try DBusConnection.connect(address: bus.address)
        let icon = StatusIcon(bus: service, menu: menu)
        let listening = try await icon.listen()
        let clicks = Clicks()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await icon.serve(listening) { clicks.add($0) } }
            try await body(icon, service, panel, clicks)
            service.close()
            panel.close()
            group.cancelAll()
        }
        await bus.stop()
    }

    static func menu(_ title: String) -> TrayMenu {
        var facts = TrayFacts()
        facts.daemon = .running
        facts.account = TrayMenuTests.account()
        let activity = TrayMenuTests.activity(title)
        facts.peers = [TrayMenuTests.peer(TrayMenuTests.desk, "desk", activity: activity)]
        facts.offers = [TrayMenuTests.offer(TrayMenuTests.desk, "desk", activity)]
        return TrayMenu(facts, clock: TrayMenuTests.clock)
    }

    func call(_ panel: DBusConnection, _ service: DBusConnection, _ path: String, _ interface: String, _ member: String, _ arguments: [DBusValue] = [])
        async throws(DBusError) -> [DBusValue]
    {
        try await panel.call(DBusMethodCall(destination: service.uniqueName, path: path, interface: interface, member: member, arguments: arguments))
    }

    @Test func aPanelReadsEveryPropertyInOneGetAllWithTheRightTypes() async throws {
        try await withIcon(Self.menu("Report")) { _, service, panel, _ in
            let all = try await call(panel, service, StatusIcon.itemPath, "org.freedesktop.DBus.Properties", "GetAll", [.string("org.kde.StatusNotifierItem")])
            let properties = try #require(all.first?.dictionary)
            let expected: [String: String] = [
                "Category": "s", "Id": "s", "Title": "s", "Status": "s", "WindowId": "i", "IconThemePath": "s", "Menu": "o", "ItemIsMenu": "b",
                "IconName": "s", "IconPixmap": "a(iiay)", "OverlayIconName": "s", "OverlayIconPixmap": "a(iiay)", "AttentionIconName": "s",
                "AttentionIconPixmap": "a(iiay)", "AttentionMovieName": "s", "ToolTip": "(sa(iiay)ss)",
            ]
            #expect(properties.mapValues(\.signature) == expected)
            #expect(properties["Id"] == .string("handoff"))
            #expect(properties["Menu"] == .objectPath(StatusIcon.menuPath))
            #expect(properties["ItemIsMenu"] == .bool(true))
            guard case .structure(let tip) = properties["ToolTip"] else { throw TestFailure("no tooltip") }
            #expect(tip[3] == .string("Continue “Report” from desk"))

            // What the introspection says is what is served.
            let xml = try await call(panel, service, StatusIcon.itemPath, "org.freedesktop.DBus.Introspectable", "Introspect").first?.stringValue ?? ""
            for (name, type) in expected { #expect(xml.contains("<property name=\"\(name)\" type=\"\(type)\""), "\(name)") }
            let one = try await call(panel, service, StatusIcon.itemPath, "org.freedesktop.DBus.Properties", "Get", [.string("org.kde.StatusNotifierItem"), .string("Status")])
            #expect(one == [.variant(.string("Active"))])
            await #expect(throws: DBusError.self) {
                _ = try await call(panel, service, StatusIcon.itemPath, "org.freedesktop.DBus.Properties", "Set", [.string("org.kde.StatusNotifierItem"), .string("Status"), .variant(.string("Passive"))])
            }
            let menuProperties = try await call(panel, service, StatusIcon.menuPath, "org.freedesktop.DBus.Properties", "GetAll", [.string("com.canonical.dbusmenu")])
            #expect(menuProperties.first?.dictionary?["Version"] == .uint32(3))
        }
    }

    @Test func aClickNamesTheItemTheUserSawAndAnOutdatedNumberNothing() async throws {
        try await withIcon(Self.menu("Report")) { icon, service, panel, clicks in
            let reply = try await call(panel, service, StatusIcon.menuPath, "com.canonical.dbusmenu", "GetLayout", [.int32(0), .int32(-1), .strings([])])
            #expect(reply.map(\.signature) == ["u", "(ia{sv}av)"])
            guard case .structure(let root) = reply[1], let children = root[2].arrayItems else { throw TestFailure("\(reply)") }
            // Each child: a variant holding (ia{sv}av); find "Continue in Editor".
            var continueID: Int32?
            for case .variant(.structure(let node)) in children where node[1].dictionary?["label"] == .string("Continue in Editor") {
                if case .int32(let id) = node[0] { continueID = id }
            }
            let id = try #require(continueID)
            // The panel sends clicks in groups (dbusmenu version 3).
            let errors = try await call(panel, service, StatusIcon.menuPath, "com.canonical.dbusmenu", "EventGroup", [
                .array(element: "(isvu)", [.structure([.int32(id), .string("clicked"), .variant(.int32(0)), .uint32(0)])]),
            ])
            #expect(errors == [.array(element: "i", [])])
            let clicked = clicks.all
            #expect(clicked.count == 1)
            guard case .continueFrom(TrayMenuTests.desk, _) = clicked.first else { throw TestFailure("clicked \(clicked)") }

            // The menu changes (another activity) and the panel hears it; a click the panel sends
            // for the old item is refused, not taken for the new one.
            let changes = try await panel.signals(matching: "type='signal',interface='com.canonical.dbusmenu',member='LayoutUpdated'")
            icon.show(Self.menu("Report v2"))
            var iterator = changes.makeAsyncIterator()
            let next = await iterator.next()
            let updated = try #require(next)
            #expect(updated.arguments.first.flatMap(\.integerValue).map { $0 > 1 } == true)
            await #expect(throws: DBusError.self) {
                _ = try await call(panel, service, StatusIcon.menuPath, "com.canonical.dbusmenu", "Event", [.int32(id), .string("clicked"), .variant(.int32(0)), .uint32(0)])
            }
            // A disabled item ("desk — …") is not a click.
            _ = try await call(panel, service, StatusIcon.menuPath, "com.canonical.dbusmenu", "Event", [.int32(0), .string("opened"), .variant(.int32(0)), .uint32(0)])
            #expect(clicks.all.count == 1)
            // Wrong arguments are refused, saying what is expected.
            await #expect(throws: DBusError.self) {
                _ = try await call(panel, service, StatusIcon.menuPath, "com.canonical.dbusmenu", "GetLayout", [.string("0")])
            }
        }
    }

    @Test func withoutAWatcherNothingIsRegistered() async throws {
        try await withIcon(Self.menu("Report")) { icon, _, _, _ in
            #expect(await icon.register() == false)
            #expect(await icon.hostRegistered() == false)
        }
    }
}
