import Foundation
import HandoffAPI
import HandoffModel
import HandoffTestSupport
import Testing

/// The status icon and the join dialog as a user meets them, on two simulated hosts: bravo has a
/// graphical session of the test user (Xvfb, a session bus, dunst, and Debian's xfce4-panel with
/// its status tray) running the real `handoff-desktop`; alpha ("desk") has an account and
/// invites. Bravo's agent notices the invite and offers to join; the code goes into zenity's
/// dialog, typed with xdotool — first wrong (refused, nothing changes, the dialog asks again),
/// then right (bravo joins). Then alpha's viewer shows an item, and "Continue in Example Viewer"
/// in bravo's status-icon menu continues it. Screenshots are saved under
/// `.build/test-output/TrayEndToEndTests/` (and are docs/desktop.md's pictures). Root only builds
/// the hosts.
@Suite(.heavy, .timeLimit(.minutes(6))) struct TrayEndToEndTests {
    static let dialogTitle = "^Join a handoff account$"

    @Test func theStatusIconJoinsAnAccountAndContinuesFromItsMenu() async throws {
        await Rig.withHosts(["alpha", "bravo"]) { rig in
            try await run(rig)
        }
    }

    func run(_ rig: Rig) async throws {
        try await rig.startDaemon("alpha")
        try await rig.startDaemon("bravo")
        _ = try await rig.ctlJSON("alpha", AccountInfo.self, ["account", "create", "--name", "Ana's devices", "--device-name", "desk"])

        let directory = rig.home("bravo") + "/session"
        try rig.user.makeDirectory(directory)
        let onBravo: ([String]) throws -> [String] = { command in
            [Rig.script, "exec", rig.name, "bravo"] + rig.user.command(command, environment: rig.environment("bravo"))
        }
        let session = try await DesktopSession(directory: directory, base: rig.environment("bravo"), wrap: onBravo)
        let panel = try await StatusPanel(session: session, home: rig.home("bravo"), base: rig.environment("bravo")) { path, text in
            try rig.write(to: path, text)
        }
        let graphical = session.environment(rig.environment("bravo"))
        // X clients of the session (xdotool), as the user.
        let x: ([String]) async throws -> ProcessResult = { command in
            try await Subprocess.run(Rig.script, ["exec", rig.name, "bravo"] + rig.user.command(command, environment: graphical))
        }
        let notifyCalls = try await session.monitorNotifications()
        let agent = try RunningProcess(
            Rig.script, ["exec", rig.name, "bravo"] + rig.user.command([try rig.user.product("handoff-desktop")], environment: graphical)
        )
        try await agent.wait(for: "the status icon to be shown") { $0.stderr.contains("the status icon is shown") }
        let doctor = try await Subprocess.run(
            Rig.script, ["exec", rig.name, "bravo"] + rig.user.command([try rig.user.product("handoffctl"), "doctor"], environment: graphical)
        )
        #expect(doctor.stdout.contains("ok       the status icon is shown"), "\(doctor)")
        let output = DesktopSession.outputPath("TrayEndToEndTests")

        // Alpha invites; bravo's agent says a device nearby is inviting, and its click opens the
        // dialog.
        let invite = try RunningProcessForInvite(rig)
        let code = try await invite.code()
        try await notifyCalls.wait(for: "the invitation notification") { $0.stdout.contains("string \"A device nearby is inviting\"") }
        try await session.waitUntilDisplayed(1)
        #expect(try await session.dunstctl(["action", "0"]).status == 0)
        let first = try await dialog(x)

        // Wrong codes are refused, the dialog says why and asks again, and nothing changes: a typo
        // (one character changed: the code's check characters catch it), then a well-formed code
        // that no device nearby invites with.
        let typo = String(code.prefix(code.count - 1)) + (code.hasSuffix("A") ? "B" : "A")
        try await type(typo, into: first, x)
        try await agent.wait(for: "the agent to hear the refusal") { $0.stderr.components(separatedBy: "a join from the dialog failed").count == 2 }
        let second = try await dialog(x)
        try await session.screenshot(to: output + "/join-dialog-typo.png")
        var secret = try InviteCode(parsing: code).secret
        secret[0] ^= 0xff
        try await type(InviteCode(secret: secret).text, into: second, x)
        try await agent.wait(for: "the agent to hear the second refusal") { $0.stderr.components(separatedBy: "a join from the dialog failed").count == 3 }
        let third = try await dialog(x)
        try await session.screenshot(to: output + "/join-dialog-refused.png")
        let before = try await rig.ctlJSON("bravo", DaemonStatus.self, ["status"])
        #expect(before.account == nil, "a wrong code joined nothing")

        // The right code: bravo joins alpha's account.
        try await type(code, into: third, x)
        try await invite.finished()
        _ = try await Rig.waitFor("bravo to be in the account") {
            try await rig.ctlJSON("bravo", DaemonStatus.self, ["status"]).account?.accountName == "Ana's devices"
        }
        try await notifyCalls.wait(for: "the joined notification") { $0.stdout.contains("string \"This device joined Ana's devices\"") }

        // Alpha shows an item; bravo's menu lists desk and its item, and Continue continues it.
        try rig.write(
            to: rig.home("bravo") + "/.local/share/applications/org.handoff.example.Viewer.desktop",
            "[Desktop Entry]\nType=Application\nName=Example Viewer\nIcon=image-x-generic\nExec=handoff-example-viewer\n"
        )
        let deskViewer = try AppsEndToEndTests().app(rig, "alpha", "handoff-example-viewer")
        let laptopViewer = try AppsEndToEndTests().app(rig, "bravo", "handoff-example-viewer")
        try await deskViewer.expect("ready")
        try await laptopViewer.expect("ready")
        deskViewer.send("open 7")
        // The menu as the panel reads it (dbusmenu's GetLayout) has desk's item and Continue.
        _ = try await Rig.waitFor("the menu to offer Item 7") {
            let layout = try await x([
                "/usr/bin/dbus-send", "--bus=" + session.bus.address, "--print-reply", "--dest=org.handoff.Desktop", "/MenuBar", "com.canonical.dbusmenu.GetLayout",
                "int32:0", "int32:-1", "array:string:",
            ])
            return layout.stdout.contains("desk — “Item 7”") && layout.stdout.contains("Continue in Example Viewer")
        }
        // The notifications (joined, the offer) are closed, so that the screenshot shows the menu.
        try await notifyCalls.wait(for: "the offer's notification") { $0.stdout.contains("string \"Continue “Item 7” from desk\"") }
        _ = try await session.dunstctl(["close-all"])
        try await session.waitUntilDisplayed(0)
        var centre: (x: Int, y: Int)?
        _ = try await Rig.waitFor("the status icon on the panel") {
            centre = try await panel.iconCentre(shot: output + "/panel.png")
            return centre != nil
        }
        let icon = try #require(centre)
        // Until the menu is there: a click while the panel still reads the new menu opens nothing.
        _ = try await Rig.waitFor("the status icon's menu to open") {
            if try await panel.menuOpen(shot: output + "/menu.png") { return true }
            _ = try await x(["/usr/bin/xdotool", "mousemove", "\(icon.x)", "\(icon.y)", "click", "1"])
            try await Task.sleep(for: .milliseconds(500))
            return try await panel.menuOpen(shot: output + "/menu.png")
        }
        // The first item that can be chosen: "Continue in Example Viewer", under "desk — “Item 7”".
        _ = try await x(["/usr/bin/xdotool", "key", "Down"])
        _ = try await x(["/usr/bin/xdotool", "key", "Return"])
        try await laptopViewer.expect("item 7 continued in new window w:7")

        #expect(try await laptopViewer.quit() == 0)
        #expect(try await deskViewer.quit() == 0)
        #expect(try await agent.stop() == 0, "handoff-desktop on SIGTERM: \(agent.stderr)")
        await panel.stop()
        await session.stop()
    }

    /// The join dialog's window, once it is mapped.
    func dialog(_ x: ([String]) async throws -> ProcessResult) async throws -> String {
        var window = ""
        _ = try await Rig.waitFor("the join dialog", seconds: 60) {
            let found = try await x(["/usr/bin/xdotool", "search", "--onlyvisible", "--name", Self.dialogTitle])
            window = found.stdout.split(separator: "\n").last.map(String.init) ?? ""
            return found.status == 0 && !window.isEmpty
        }
        return window
    }

    /// Types `text` into the dialog and presses Return (OK). Separate xdotool runs: typed into the
    /// focused window through XTEST, which toolkits take as the user's typing.
    func type(_ text: String, into window: String, _ x: ([String]) async throws -> ProcessResult) async throws {
        let focus = try await x(["/usr/bin/xdotool", "windowfocus", "--sync", window])
        #expect(focus.status == 0, "\(focus)")
        let typed = try await x(["/usr/bin/xdotool", "type", "--delay", "15", text])
        #expect(typed.status == 0, "\(typed)")
        let ok = try await x(["/usr/bin/xdotool", "key", "Return"])
        #expect(ok.status == 0, "\(ok)")
    }
}
