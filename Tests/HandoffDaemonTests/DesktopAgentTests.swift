import DesktopAgent
import Foundation
import HandoffAPI
import HandoffClient
import HandoffDBus
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
    static func withAgent(_ daemon: TestDaemon, _ session: DesktopSession, _ body: () async throws -> Void) async throws {
        try await withAgent(daemon, bus: session.bus, environment: session.environment(), body)
    }

    /// The agent for `daemon` on `sessionBus`, while `body` runs.
    static func withAgent(_ daemon: TestDaemon, bus sessionBus: SessionBus, environment: [String: String] = [:], _ body: () async throws -> Void) async throws {
        let bus = try DBusConnection.connect(address: sessionBus.address)
        let agent = DesktopAgent(bus: bus, client: daemon.client, session: environment, logger: TestLogger.make("handoff-desktop"))
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
        let app = try await b.client.registerApp(AppRegistration(appID: "org.example.Viewer", continues: [Self.type]))
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
                        _ = try await client.answerContinuation(id, registration: registration, ContinuationAnswer(taken: true, window: window))
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
            _ = try await a.client.becomeCurrent(PutCurrentActivityRequest(content: ActivityContent(type: Self.type, title: "Item 8")))
            try await session.waitUntilDisplayed(1)
            _ = try await a.client.resignCurrent()
            try await session.waitUntilDisplayed(0)
        }
        app.close()
        try await a.finish()
        try await b.finish()
        await session.stop()
    }
}
