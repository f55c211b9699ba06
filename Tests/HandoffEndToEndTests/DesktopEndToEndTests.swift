import Foundation
import HandoffAPI
import HandoffModel
import HandoffTestSupport
import Testing

/// The desktop agent as it runs: the real `handoff-desktop` in a graphical session of the test
/// user on bravo (Xvfb, a session bus and dunst, all as that user in bravo's namespace); alpha
/// ("desk") makes an item current with the viewer example; bravo shows "Continue “Item 7” from
/// desk", a click on it continues the item into the viewer already running on bravo, and closing
/// the window on alpha withdraws the next one. Root only builds the hosts.
@Suite(.heavy, .timeLimit(.minutes(5))) struct DesktopEndToEndTests {
    @Test func aNotificationOnOneHostContinuesWhatTheOtherShows() async throws {
        await Rig.withHosts(["alpha", "bravo"]) { rig in
            try await run(rig)
        }
    }

    func run(_ rig: Rig) async throws {
        try await EndToEndTests().startPaired(rig)

        // The agent counts notifications: its notice about status icons is put off past the test.
        let (session, agent) = try await rig.desktopAgent(on: "bravo")

        // The viewer is installed on bravo: its .desktop file names it in the notification.
        try rig.write(
            to: rig.home("bravo") + "/.local/share/applications/org.handoff.example.Viewer.desktop",
            "[Desktop Entry]\nType=Application\nName=Example Viewer\nIcon=image-x-generic\nExec=handoff-example-viewer\n"
        )
        let notifyCalls = try await session.monitorNotifications()
        let deskViewer = try AppsEndToEndTests().app(rig, "alpha", "handoff-example-viewer")
        let laptopViewer = try AppsEndToEndTests().app(rig, "bravo", "handoff-example-viewer")
        try await deskViewer.expect("ready")
        try await laptopViewer.expect("ready")

        deskViewer.send("open 7")
        try await session.waitUntilDisplayed(1)
        try await session.screenshot(to: DesktopSession.outputPath("DesktopEndToEndTests/notification.png"))
        let expected = ["string \"Continue “Item 7” from desk\"", "string \"Opens in Example Viewer\"", "string \"image-x-generic\""]
        try await notifyCalls.wait(for: "the Notify call's arguments") { m in expected.allSatisfy { m.stdout.contains($0) } }
        let clicked = try await session.dunstctl(["action", "0"])
        #expect(clicked.status == 0, "\(clicked)")
        try await laptopViewer.expect("item 7 continued in new window w:7")
        try await session.waitUntilDisplayed(0)

        // Another item: a new notification (after the 5 s spacing); its window closing on alpha
        // (the activity resigned, no other window left) withdraws it.
        deskViewer.send("close 7")
        deskViewer.send("open 9")
        try await session.waitUntilDisplayed(1)
        deskViewer.send("close 9")
        try await session.waitUntilDisplayed(0)

        #expect(try await laptopViewer.quit() == 0)
        #expect(try await deskViewer.quit() == 0)
        #expect(try await agent.stop() == 0, "handoff-desktop on SIGTERM: \(agent.stderr)")
        await session.stop()
    }
}
