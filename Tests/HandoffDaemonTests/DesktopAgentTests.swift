import DesktopAgent
import DesktopCore
import DesktopTray
import Foundation
import HandoffAPI
import HandoffClient
import HandoffDBus
import HandoffDiscovery
import HandoffModel
import HandoffTestSupport
import Logging
import Testing

/// The desktop agent in this process, with two daemons in this process, against a real session
/// bus and a real notification server (dunst under Xvfb): another device's activity shows as a
/// notification, clicking it continues exactly that activity into the running receiver, and a
/// resign withdraws it. (`DesktopEndToEndTests` does the same with the real binaries, as the
/// test user, on two simulated hosts.)
@Suite(.heavy, .timeLimit(.minutes(3))) struct DesktopAgentTests {
    static let type = "org.example.item"

    /// The agent for `daemon` in `session`, while `body` runs.
    static func withAgent(_ daemon: TestDaemon, _ session: DesktopSession, options: DesktopAgent.Options? = nil, _ body: () async throws -> Void) async throws {
        try await withAgent(daemon, bus: session.bus, environment: session.environment(), options: options, body)
    }

    /// Where the agent keeps its files in `directory`; no panel shows status icons in these
    /// tests, and the agent's one notice about it waits `grace` (past the test by default, which
    /// counts notifications).
    static func options(_ directory: String, grace: Duration = .seconds(3600)) -> DesktopAgent.Options {
        DesktopAgent.Options(environment: ["XDG_RUNTIME_DIR": directory + "/run", "XDG_STATE_HOME": directory + "/state"], statusIconGrace: grace)
    }

    /// The agent for `daemon` on `sessionBus`, while `body` runs.
    static func withAgent(
        _ daemon: TestDaemon, bus sessionBus: SessionBus, environment: [String: String] = [:], options: DesktopAgent.Options? = nil, _ body: () async throws -> Void
    ) async throws {
        let bus = try DBusConnection.connect(address: sessionBus.address)
        let files = try TempDirectory.make(prefix: "handoff-agent")
        defer { TempDirectory.remove(files) }
        let agent = DesktopAgent(
            bus: bus, client: daemon.client, session: environment, options: options ?? Self.options(files), logger: TestLogger.make("handoff-desktop")
        )
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await agent.run() }
            // Ready once its name is on the bus.
            let watcher = try DBusConnection.connect(address: sessionBus.address)
            defer { watcher.close() }
            let deadline = ContinuousClock.now + .seconds(10)
            while try await watcher.call(DBusMethodCall.busDaemon("NameHasOwner", [.string(DesktopAgent.busName)])) != [.bool(true)] {
                guard ContinuousClock.now < deadline else { throw TestFailure("the agent never took its name") }
                try await Task.sleep(for: .milliseconds(10))
            }
            try await body()
            group.cancelAll()
        }
        bus.close()
    }

    @Test func anotherDevicesActivityIsANotificationThatContinuesIntoTheReceiver() async throws {
        let directory = try TempDirectory.make(prefix: "handoff-desktop")
        defer { TempDirectory.remove(directory) }
        let session = try await DesktopSession(directory: directory)
        let (a, b, first) = try await ContinuationTests.paired(ActivityContent(type: Self.type, title: "Item 7", targetContentIdentifier: "item-7"))
        // The receiver: a running app for the type on B, named by its .desktop file.
        try OfferTests.desktopFile(b, id: "org.example.Viewer.desktop", """
            [Desktop Entry]
            Type=Application
            Name=Example Viewer
            Icon=image-x-generic
            Exec=/bin/false
            """)
        let app = try await b.client.subscribe(.registerApp(AppRegistration(appID: "org.example.Viewer", continues: [Self.type])))
        guard case .registered(let registration, _, _) = try await app.next()?.body else { throw TestFailure("no registration") }
        let monitor = try await session.monitorNotifications()
        try await Self.withAgent(b, session) {
            try await session.waitUntilDisplayed(1)
            // What the server was asked to show: the app's name and icon, and a Continue action.
            let expected = ["string \"Continue “Item 7” from desk\"", "string \"Opens in Example Viewer\"", "string \"image-x-generic\"", "string \"continue\""]
            try await monitor.wait(for: "the Notify call's arguments") { m in expected.allSatisfy { m.stdout.contains($0) } }
            try await session.screenshot(to: DesktopSession.outputPath("DesktopAgentTests/notification.png"))

            // Another client of the session cannot click for the user: a forged ActionInvoked
            // (unicast to the agent, so no match rule stops it) changes nothing.
            let forger = try DBusConnection.connect(address: session.bus.address)
            defer { forger.close() }
            let agentName = try #require(try await forger.call(DBusMethodCall.busDaemon("GetNameOwner", [.string(DesktopAgent.busName)])).first?.stringValue)
            for id in UInt32(0)...UInt32(8) {
                forger.emit(
                    DBusSignal(
                        destination: agentName, path: "/org/freedesktop/Notifications", interface: "org.freedesktop.Notifications", member: "ActionInvoked",
                        arguments: [.uint32(id), .string("default")]
                    )
                )
            }
            _ = try await forger.call(DBusMethodCall.busDaemon("GetId", []))  // the signals went out before this answer
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await session.displayed() == 1, "a forged click closed the notification")

            // A click on the notification continues exactly that activity into the running app.
            let client = b.client
            let taken = Task { () async throws -> Activity in
                while let event = try await app.next() {
                    if case .continue(let id, let activity, _, let window) = event.body {
                        _ = try await client.send(.answerContinuation(id, registration: registration, ContinuationAnswer(taken: true, window: window)))
                        return activity
                    }
                }
                throw TestFailure("the app's events ended")
            }
            let clicked = try await session.dunstctl(["action", "0"])
            #expect(clicked.status == 0, "\(clicked)")
            let activity = try await taken.value
            #expect(activity.id == first.id && activity.title == "Item 7")
            // And the notification goes.
            try await session.waitUntilDisplayed(0)

            // A new activity is a new notification; resigning it withdraws it.
            _ = try await a.client.send(.becomeCurrent(PutCurrentActivityRequest(content: ActivityContent(type: Self.type, title: "Item 8"))))
            try await session.waitUntilDisplayed(1)
            _ = try await a.client.send(.resignCurrent)
            try await session.waitUntilDisplayed(0)
        }
        app.close()
        try await a.finish()
        try await b.finish()
        await session.stop()
    }

    /// A session whose compositor has no data-control (GNOME's Wayland; here, a Wayland display
    /// that is not there) and no X server: the agent runs without the clipboard, and `doctor`
    /// says so with what still works.
    @Test func withoutAWayToTheClipboardDoctorSaysSo() async throws {
        let directory = try TempDirectory.make(prefix: "handoff-desktop")
        defer { TempDirectory.remove(directory) }
        let bus = try await SessionBus(directory: directory)
        let daemon = try await TestDaemon.start()
        let options = Self.options(directory)
        try await Self.withAgent(daemon, bus: bus, environment: ["WAYLAND_DISPLAY": "wayland-absent"], options: options) {
            _ = try await Rig.waitFor("desktop.json") { FileManager.default.fileExists(atPath: options.statusFile) }
            let data = FileManager.default.contents(atPath: options.statusFile) ?? Data()
            #expect(try JSONDecoder().decode(DesktopAgentStatus.self, from: data).clipboard == nil)
            let doctor = try await Subprocess.run(
                Subprocess.product("handoffctl"), ["doctor", "--socket", daemon.socketPath],
                environment: ["XDG_RUNTIME_DIR": directory + "/run", "WAYLAND_DISPLAY": "wayland-absent", "PATH": "/usr/bin:/bin"]
            )
            #expect(doctor.stdout.contains("warning  this session's clipboard cannot be shared"), "\(doctor)")
            #expect(doctor.stdout.contains("fix: paste another device's copy with: handoffctl clipboard paste"), "\(doctor)")
        }
        try await daemon.finish()
        await bus.stop()
    }

    /// Where the agent reaches no clipboard (here: no display server for it at all), another
    /// device's copy is a notification; choosing it keeps the copy in Downloads/Handoff (no
    /// xdg-open on the agent's PATH: the notification says the file cannot be opened here). A
    /// copy withdrawn takes its notification with it.
    @Test func withoutAClipboardAnotherDevicesCopyIsANotificationThatKeepsIt() async throws {
        let directory = try TempDirectory.make(prefix: "handoff-desktop")
        defer { TempDirectory.remove(directory) }
        let session = try await DesktopSession(directory: directory)
        let (a, b) = try await ContinuationTests.pair()
        let monitor = try await session.monitorNotifications()
        let home = directory + "/home"
        let source = directory + "/copied"
        try Data("hello there".utf8).write(to: URL(fileURLWithPath: source))
        let aAgent = try await ClipboardTests.Holder(a.client)
        let environment = ["HOME": home, "PATH": directory + "/no-programs", "DBUS_SESSION_BUS_ADDRESS": session.bus.address]
        try await Self.withAgent(b, bus: session.bus, environment: environment) {
            let text = [ClipboardItem(type: "text/plain;charset=utf-8", size: 11)]
            let copy = try #require(try await aAgent.announce(text).local)
            try await session.waitUntilDisplayed(1)
            try await monitor.wait(for: "the copy's notification") { $0.stdout.contains("string \"Copied on desk: text\"") }
            let clicked = try await session.dunstctl(["action", "0"])
            #expect(clicked.status == 0, "\(clicked)")

            // A's agent (this test) is asked for the text, and hands it over.
            let (streamID, copyID, type) = try await aAgent.nextPasteRequest()
            #expect(copyID == copy.id && type == "text/plain;charset=utf-8")
            let fd = try ClipboardTests.file(source, O_RDONLY)
            defer { close(fd) }
            let sending = try await a.client.fileStream(.takeStream(streamID), file: fd, role: .send)
            #expect(try await sending.outcome().state == .completed)
            try await monitor.wait(for: "the paste's notification") { $0.stdout.contains("string \"Pasted from desk\"") }
            let folder = home + "/Downloads/Handoff"
            #expect(FileManager.default.contents(atPath: folder + "/Clipboard from desk.txt") == Data("hello there".utf8))
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["Clipboard from desk.txt"], "no partial file stays")
            #expect(monitor.stdout.contains("xdg-open is not installed"), "\(monitor.stdout)")

            // A newer copy is a notification again; withdrawn, it goes.
            _ = try await session.dunstctl(["close-all"])
            try await session.waitUntilDisplayed(0)
            _ = try await aAgent.announce(text)
            try await session.waitUntilDisplayed(1)
            _ = try await aAgent.announce([])
            try await session.waitUntilDisplayed(0)
        }
        try await a.finish()
        try await b.finish()
        await session.stop()
    }

    /// Where no panel shows status icons (plain GNOME), the agent says so once — a notification
    /// the first time, never again — and notifications go on; `desktop.json` tells `doctor`.
    @Test func withoutAPanelForStatusIconsTheAgentSaysSoOnce() async throws {
        let directory = try TempDirectory.make(prefix: "handoff-desktop")
        defer { TempDirectory.remove(directory) }
        let session = try await DesktopSession(directory: directory)
        let daemon = try await TestDaemon.start()
        let options = Self.options(directory, grace: .milliseconds(200))
        let monitor = try await session.monitorNotifications()
        try await Self.withAgent(daemon, session, options: options) {
            try await session.waitUntilDisplayed(1)
            try await monitor.wait(for: "the notice") { $0.stdout.contains("string \"Handoff runs without a status icon\"") }
            _ = try await Rig.waitFor("desktop.json to say so") {
                let data = FileManager.default.contents(atPath: options.statusFile) ?? Data()
                return (try? JSONDecoder().decode(DesktopAgentStatus.self, from: data))?.statusIcon == .noHost
            }
            #expect(FileManager.default.fileExists(atPath: options.noHostNotedFile))
            // doctor, in this session, says what is missing and which package brings it.
            let doctor = try await Subprocess.run(
                Subprocess.product("handoffctl"), ["doctor", "--socket", daemon.socketPath],
                environment: ["XDG_RUNTIME_DIR": directory + "/run", "DISPLAY": session.display, "PATH": "/usr/bin:/bin"]
            )
            #expect(doctor.stdout.contains("warning  no panel in this session shows status icons"), "\(doctor)")
            #expect(doctor.stdout.contains("fix: sudo apt install gnome-shell-extension-appindicator"), "\(doctor)")
        }
        #expect(!FileManager.default.fileExists(atPath: options.statusFile), "the agent takes desktop.json away when it stops")
        _ = try await session.dunstctl(["close-all"])
        try await session.waitUntilDisplayed(0)
        // Again, with the same files: the agent says it in its log only.
        try await Self.withAgent(daemon, session, options: options) {
            _ = try await Rig.waitFor("desktop.json to say so again") {
                let data = FileManager.default.contents(atPath: options.statusFile) ?? Data()
                return (try? JSONDecoder().decode(DesktopAgentStatus.self, from: data))?.statusIcon == .noHost
            }
        }
        #expect(monitor.stdout.components(separatedBy: "Handoff runs without a status icon").count == 2, "said once: \(monitor.stdout)")
        try await daemon.finish()
        await session.stop()
    }

    /// The menu item with `label` in the agent's status-icon menu, as a panel reads it (nil while
    /// there is none).
    static func menuItem(_ label: String, on bus: DBusConnection) async throws -> Int32? {
        let layout = try await bus.call(
            DBusMethodCall(
                destination: DesktopAgent.busName, path: StatusIcon.menuPath, interface: "com.canonical.dbusmenu", member: "GetLayout",
                arguments: [.int32(0), .int32(-1), .strings([])]
            )
        )
        guard layout.count == 2, case .structure(let root) = layout[1], let children = root[2].arrayItems else { return nil }
        for case .variant(.structure(let node)) in children where node[1].dictionary?["label"]?.stringValue?.hasPrefix(label) == true {
            if case .int32(let id) = node[0] { return id }
        }
        return nil
    }

    static func click(_ id: Int32, on bus: DBusConnection) async throws {
        _ = try await bus.call(
            DBusMethodCall(
                destination: DesktopAgent.busName, path: StatusIcon.menuPath, interface: "com.canonical.dbusmenu", member: "Event",
                arguments: [.int32(id), .string("clicked"), .variant(.int32(0)), .uint32(0)]
            )
        )
    }

    /// "Add a device…" in the status icon's menu invites: the code in the menu and in a
    /// notification, a device joins with it, a notification says who; a second invite is
    /// cancelled from the menu and its code goes.
    /// The key holder offers this device the account key: a notification says so, and the menu's
    /// item takes it (docs/security.md, "Handing the key over").
    @Test func theAccountKeyOfferedToThisDeviceIsTakenFromTheMenu() async throws {
        let directory = try TempDirectory.make(prefix: "handoff-desktop")
        defer { TempDirectory.remove(directory) }
        let session = try await DesktopSession(directory: directory)
        let (a, b) = try await ContinuationTests.pair()
        try await KeyTransferTests.waitForSession(a, b)
        let monitor = try await session.monitorNotifications()
        let panel = try DBusConnection.connect(address: session.bus.address)
        defer { panel.close() }
        try await Self.withAgent(b, session) {
            let updates = try await a.client.subscribe(.transferKey(KeyTransferRequest(device: try await b.client.send(.account).deviceName)))
            let offered = try #require(try await updates.next()?.offered)
            #expect(offered.deviceName == (try await b.client.send(.account)).deviceName)
            try await monitor.wait(for: "the offer's notification") { $0.stdout.contains("offers this device the account key\"") }
            var take: Int32?
            _ = try await Rig.waitFor("the offer in the menu") {
                take = try await Self.menuItem("Take the account key from ", on: panel)
                return take != nil
            }
            try await Self.click(try #require(take), on: panel)
            try await monitor.wait(for: "the key taken") { $0.stdout.contains("string \"This device holds the account key now\"") }
            #expect(try #require(try await updates.next()?.transferred).isAdmin == false)
            #expect(try await b.client.send(.account).isAdmin)
            _ = try await Rig.waitFor("the offer to leave the menu") { try await Self.menuItem("Take the account key from ", on: panel) == nil }
        }
        for d in [a, b] { try await d.finish() }
    }

    @Test func addADeviceFromTheMenuShowsTheCodeAndWhoJoined() async throws {
        let directory = try TempDirectory.make(prefix: "handoff-desktop")
        defer { TempDirectory.remove(directory) }
        let session = try await DesktopSession(directory: directory)
        let network = DiscoveryNetwork()
        let a = try await TestDaemon.start(network: network)
        _ = try await a.client.send(.createAccount(CreateAccountRequest(deviceName: "desk")))
        let b = try await TestDaemon.start(network: network)
        let monitor = try await session.monitorNotifications()
        let panel = try DBusConnection.connect(address: session.bus.address)
        defer { panel.close() }
        try await Self.withAgent(a, session) {
            var add: Int32?
            _ = try await Rig.waitFor("Add a device… in the menu") {
                add = try await Self.menuItem("Add a device…", on: panel)
                return add != nil
            }
            try await Self.click(try #require(add), on: panel)
            var code = ""
            _ = try await Rig.waitFor("the code in the menu") {
                let label = try await panel.call(
                    DBusMethodCall(
                        destination: DesktopAgent.busName, path: StatusIcon.menuPath, interface: "com.canonical.dbusmenu", member: "GetLayout",
                        arguments: [.int32(0), .int32(-1), .strings([])]
                    )
                ).description
                guard let range = label.range(of: #"Code for the new device: ([0-9A-Z-]+)"#, options: .regularExpression) else { return false }
                code = String(label[range].dropFirst("Code for the new device: ".count))
                return true
            }
            try await monitor.wait(for: "the code's notification") { $0.stdout.contains("string \"Add a device: type this code on it\"") && $0.stdout.contains(code) }
            _ = try await b.client.send(.joinAccount(JoinAccountRequest(code: code, deviceName: "laptop")))
            try await monitor.wait(for: "who joined") { $0.stdout.contains("string \"laptop joined your handoff account\"") }
            _ = try await Rig.waitFor("the code to leave the menu") { try await Self.menuItem("Add a device…", on: panel) != nil }

            // Another invite, cancelled: its code goes from the menu, and no device can use it.
            try await Self.click(try #require(try await Self.menuItem("Add a device…", on: panel)), on: panel)
            var cancel: Int32?
            var second = ""
            _ = try await Rig.waitFor("Cancel the invite in the menu") {
                cancel = try await Self.menuItem("Cancel the invite", on: panel)
                second = try await Self.menuItem("Code for the new device: ", on: panel).map { _ in "shown" } ?? ""
                return cancel != nil && !second.isEmpty
            }
            let layout = try await panel.call(
                DBusMethodCall(
                    destination: DesktopAgent.busName, path: StatusIcon.menuPath, interface: "com.canonical.dbusmenu", member: "GetLayout",
                    arguments: [.int32(0), .int32(-1), .strings([])]
                )
            ).description
            let range = try #require(layout.range(of: #"Code for the new device: ([0-9A-Z-]+)"#, options: .regularExpression))
            let cancelledCode = String(layout[range].dropFirst("Code for the new device: ".count))
            try await Self.click(try #require(cancel), on: panel)
            _ = try await Rig.waitFor("the code to leave the menu") { try await Self.menuItem("Code for the new device: ", on: panel) == nil }
            let c = try await TestDaemon.start(network: network)
            await #expect(throws: HandoffClientError.self) {
                _ = try await c.client.send(.joinAccount(JoinAccountRequest(code: cancelledCode, deviceName: "phone")))
            }
            try await c.finish()

            // The clipboard's switch: off from the menu is off in handoffd; the menu then shows
            // it off, and choosing it again turns it back on.
            try await Self.click(try #require(try await Self.menuItem("Share the clipboard with your devices", on: panel)), on: panel)
            _ = try await Rig.waitFor("handoffd to have the clipboard off") { try await a.client.send(.settings).clipboard == false }
            var again: Int32?
            _ = try await Rig.waitFor("the menu to show it off") {
                again = try await Self.menuItem("Share the clipboard with your devices", on: panel)
                guard let again else { return false }
                // The menu may change between the two calls (the item then has another number): not yet.
                let state = try? await panel.call(
                    DBusMethodCall(
                        destination: DesktopAgent.busName, path: StatusIcon.menuPath, interface: "com.canonical.dbusmenu", member: "GetProperty",
                        arguments: [.int32(again), .string("toggle-state")]
                    )
                )
                return state?.first == .variant(.int32(0))
            }
            try await Self.click(try #require(again), on: panel)
            _ = try await Rig.waitFor("handoffd to have the clipboard on") { try await a.client.send(.settings).clipboard == true }
        }
        try await a.finish()
        try await b.finish()
        await session.stop()
    }

    /// The status icon follows handoffd: its menu says when handoffd is not running and how to
    /// start it, and shows the device again once it is back.
    @Test func theMenuFollowsHandoffdGoingAndComingBack() async throws {
        let directory = try TempDirectory.make(prefix: "handoff-desktop")
        defer { TempDirectory.remove(directory) }
        let session = try await DesktopSession(directory: directory)
        let daemon = try await TestDaemon.start()
        _ = try await daemon.client.send(.createAccount(CreateAccountRequest(deviceName: "desk")))
        let panel = try DBusConnection.connect(address: session.bus.address)
        defer { panel.close() }
        var restarted: TestDaemon?
        try await Self.withAgent(daemon, session) {
            _ = try await Rig.waitFor("the menu of a device in an account") { try await Self.menuItem("Add a device…", on: panel) != nil }
            try await daemon.stop()
            _ = try await Rig.waitFor("the menu to say handoffd is not running") { try await Self.menuItem("handoffd is not running", on: panel) != nil }
            #expect(try await Self.menuItem("Start it: systemctl --user start handoffd", on: panel) != nil)
            restarted = try await TestDaemon.start(directory: daemon.directory)
            _ = try await Rig.waitFor("the menu to be back") { try await Self.menuItem("Add a device…", on: panel) != nil }
        }
        try await restarted?.finish()
        await session.stop()
    }
}
