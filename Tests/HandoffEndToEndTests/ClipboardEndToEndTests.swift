import Foundation
import HandoffAPI
import HandoffModel
import HandoffTestSupport
import Testing

/// The clipboard as it runs (docs/clipboard.md): alpha ("desk") and bravo ("laptop"), each with a
/// graphical session of the test user (Xvfb, a session bus, dunst) and the real handoff-desktop
/// in it; apps are `xclip` and, copying as a password manager does, `scripts/clipboard-owner.py`
/// (python3-xlib). Text copied on alpha is pasted on bravo, a 5 MiB picture byte for byte; a
/// secret is never announced; nothing is announced while the clipboard is off; a copy runs out.
/// The bridge is captured throughout: nothing copied crosses it in clear. Root only builds the
/// hosts and captures the bridge.
@Suite(.heavy, .timeLimit(.minutes(5))) struct ClipboardEndToEndTests {
    @Test func copiedOnOneHostPastedOnTheOther() async throws {
        await Rig.withHosts(["alpha", "bravo"]) { rig in
            try await run(rig)
        }
    }

    /// The same in Wayland sessions (headless sway, data-control): text and a picture each way,
    /// with `wl-copy` and `wl-paste`; then files, which come into Downloads.
    @Test func copiedInOneWaylandSessionPastedInAnother() async throws {
        await Rig.withHosts(["alpha", "bravo"]) { rig in
            try await EndToEndTests().startPaired(rig)
            let (alpha, alphaAgent) = try await rig.waylandAgent(on: "alpha")
            let (bravo, bravoAgent) = try await rig.waylandAgent(on: "bravo")
            for agent in [alphaAgent, bravoAgent] {
                try await agent.wait(for: "the agent to share the clipboard") { $0.stderr.contains("the clipboard is shared") }
            }
            let doctor = try await rig.ctl("alpha", ["doctor"])
            #expect(doctor.stdout.contains("the clipboard is shared with your other devices through the compositor's data-control"), "\(doctor)")
            let wl: (String, WaylandSession, String) async throws -> ProcessResult = { host, session, script in
                try await rig.run(host, ["/usr/bin/env", "WAYLAND_DISPLAY=\(session.display)", "sh", "-c", script])
            }
            #expect(try await wl("alpha", alpha, "printf 'Hello from alpha ✓' | wl-copy").status == 0)
            try await Rig.waitFor("bravo to paste alpha's text") { try await wl("bravo", bravo, "wl-paste --no-newline").stdout == "Hello from alpha ✓" }

            let (alphaHome, bravoHome) = (rig.home("alpha"), rig.home("bravo"))
            #expect(try await rig.run("bravo", ["sh", "-c", "head -c 5242880 /dev/urandom > \(bravoHome)/picture.png"]).status == 0)
            // alpha dials bravo for the bytes: once it has seen bravo's advert (bravo dialled it so far).
            try await Rig.waitFor("alpha to see bravo's advert") {
                try await rig.ctlJSON("alpha", PeersResponse.self, ["peers"]).peers.first.map { !$0.foundVia.isEmpty } == true
            }
            #expect(try await wl("bravo", bravo, "wl-copy --type image/png < \(bravoHome)/picture.png").status == 0)
            try await Rig.waitFor("alpha to offer bravo's picture") {
                try await wl("alpha", alpha, "wl-paste --list-types").stdout.split(separator: "\n").contains("image/png")
            }
            #expect(try await wl("alpha", alpha, "wl-paste --type image/png > \(alphaHome)/pasted.png").status == 0)
            let original = FileManager.default.contents(atPath: bravoHome + "/picture.png")
            #expect(original?.count == 5 << 20 && FileManager.default.contents(atPath: alphaHome + "/pasted.png") == original, "the picture, byte for byte")
            #expect(
                bravoAgent.stderr.contains("a copy here was announced") && alphaAgent.stderr.contains("pasted from another device"),
                "alpha: \(alphaAgent.stderr)\nbravo: \(bravoAgent.stderr)"
            )

            // Files, as a file manager copies them (text/uri-list): pasted on bravo, each file
            // comes into bravo's Downloads/Handoff and the list bravo's app gets names those; a
            // link stays a link, a folder is left out.
            let report = "Report 1 from alpha\n"
            try rig.write(to: alphaHome + "/Report 1.txt", report)
            #expect(try await rig.run("alpha", ["mkdir", "-p", alphaHome + "/folder"]).status == 0)
            let list = "file://\(alphaHome)/Report%201.txt\r\nhttps://example.org/\r\nfile://\(alphaHome)/folder\r\n"
            try rig.write(to: alphaHome + "/list", list)
            #expect(try await wl("alpha", alpha, "wl-copy --type text/uri-list < \(alphaHome)/list").status == 0)
            try await Rig.waitFor("bravo to offer alpha's files") {
                try await wl("bravo", bravo, "wl-paste --list-types").stdout.split(separator: "\n").contains("text/uri-list")
            }
            let files = try await wl("bravo", bravo, "wl-paste --no-newline --type text/uri-list")
            let lines = files.stdout.split(separator: "\r\n").map(String.init)
            let kept = bravoHome + "/Downloads/Handoff/Report 1.txt"
            #expect(files.status == 0 && lines.count == 2, "\(files)")
            #expect(lines.first.flatMap { $0.hasPrefix("file://") ? String($0.dropFirst(7)).removingPercentEncoding : nil } == kept, "\(files)")
            #expect(lines.last == "https://example.org/", "\(files)")
            #expect(FileManager.default.contents(atPath: kept) == Data(report.utf8))
            #expect(alphaAgent.stderr.contains("another device asked for a file of the copy here that is not served"), "the folder: \(alphaAgent.stderr)")

            #expect(try await alphaAgent.stop() == 0, "\(alphaAgent.stderr)")
            #expect(try await bravoAgent.stop() == 0, "\(bravoAgent.stderr)")
            await alpha.stop()
            await bravo.stop()
        }
    }

    /// Issue 54: alpha's agent goes after a copy — killed (a crash), and once more stopped
    /// after its restart made a copy. Each time alpha's copy is withdrawn on both hosts, so a
    /// paste on bravo is refused at once (exit 49, no copy) instead of waiting for an agent that
    /// is not there; the agent started anew announces its next copy, which bravo pastes.
    @Test func aCopyIsWithdrawnWhenItsAgentGoes() async throws {
        await Rig.withHosts(["alpha", "bravo"]) { rig in
            try await EndToEndTests().startPaired(rig)
            let (alpha, firstAgent) = try await rig.waylandAgent(on: "alpha")
            let (bravo, bravoAgent) = try await rig.waylandAgent(on: "bravo")
            for agent in [firstAgent, bravoAgent] {
                try await agent.wait(for: "the agent to share the clipboard") { $0.stderr.contains("the clipboard is shared") }
            }
            let wl: (String, WaylandSession, String) async throws -> ProcessResult = { host, session, script in
                try await rig.run(host, ["/usr/bin/env", "WAYLAND_DISPLAY=\(session.display)", "sh", "-c", script])
            }
            let newest = { () async throws -> ClipboardCopy? in try await rig.ctlJSON("bravo", ClipboardState.self, ["clipboard", "--json"]).newest }
            #expect(try await wl("alpha", alpha, "printf 'before the crash' | wl-copy").status == 0)
            try await Rig.waitFor("bravo to offer alpha's copy") { try await newest()?.peer != nil }

            // The agent crashes.
            _ = try await firstAgent.stop(signal: SIGKILL)
            try await Rig.waitFor("alpha to withdraw the copy its agent held") {
                try await rig.ctlJSON("alpha", ClipboardState.self, ["clipboard", "--json"]).local == nil
            }
            try await Rig.waitFor("bravo to forget it") { try await newest() == nil }
            let refused = try await rig.ctl("bravo", ["clipboard", "paste"])
            #expect(refused.status == 49 && refused.stdout.isEmpty, "\(refused)")
            #expect(try await wl("bravo", bravo, "wl-paste --no-newline").stdout.isEmpty, "bravo offers nothing")

            // Started anew, it announces the next copy; stopped in order, that goes too.
            let secondAgent = try await rig.waylandAgent(on: "alpha", in: alpha)
            try await secondAgent.wait(for: "the new agent to share the clipboard") { $0.stderr.contains("the clipboard is shared") }
            #expect(try await newest() == nil, "nothing is offered again after the restart")
            try await Rig.waitFor("the new agent's copy on bravo") {
                _ = try await wl("alpha", alpha, "printf 'after the restart' | wl-copy")
                return try await wl("bravo", bravo, "wl-paste --no-newline").stdout == "after the restart"
            }
            #expect(try await secondAgent.stop() == 0, "\(secondAgent.stderr)")
            try await Rig.waitFor("bravo to forget the copy of the agent that stopped") { try await newest() == nil }
            #expect(try await rig.ctl("bravo", ["clipboard", "paste"]).status == 49)
            #expect(try await bravoAgent.stop() == 0, "\(bravoAgent.stderr)")
            await alpha.stop()
            await bravo.stop()
        }
    }

    static let owner = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../scripts/clipboard-owner.py").standardizedFileURL.path

    /// `command` in `session` on `host`, as the test user.
    static func inSession(_ rig: Rig, _ host: String, _ session: DesktopSession, _ command: [String]) -> [String] {
        rig.asUser(host, ["/usr/bin/env", "DISPLAY=\(session.display)"] + command)
    }

    static func x(_ rig: Rig, _ host: String, _ session: DesktopSession, _ command: [String], stdin: Data? = nil) async throws -> ProcessResult {
        let line = inSession(rig, host, session, command)
        return try await Subprocess.run(line[0], Array(line.dropFirst()), stdin: stdin)
    }

    /// Copies on `host` with xclip (which stays, serving it, until another app copies).
    static func copy(_ rig: Rig, _ host: String, _ session: DesktopSession, _ text: String) async throws {
        let copied = try await x(rig, host, session, ["xclip", "-selection", "clipboard", "-i"], stdin: Data(text.utf8))
        #expect(copied.status == 0, "\(copied)")
    }

    static func paste(_ rig: Rig, _ host: String, _ session: DesktopSession) async throws -> ProcessResult {
        try await x(rig, host, session, ["xclip", "-selection", "clipboard", "-o"])
    }

    /// The kinds of the newest copy in each `clipboardChanged` bravo's `watch --json` printed
    /// (none: no copy), in order.
    static func newestKinds(_ watch: RunningProcess) -> [[String]] {
        watch.stdout.split(separator: "\n").compactMap { line -> [String]? in
            guard let event = try? LocalAPIJSON.decoder().decode(LocalEvent.self, from: Data(line.utf8)),
                case .clipboardChanged(let state) = event.body
            else { return nil }
            return state.newest?.items.map(\.type) ?? []
        }
    }

    func run(_ rig: Rig) async throws {
        try await EndToEndTests().startPaired(rig)
        let pcap = rig.directory + "/clipboard.pcap"
        let capture = try await rig.captureBridge(to: pcap)
        let (alpha, alphaAgent) = try await rig.desktopAgent(on: "alpha")
        let (bravo, bravoAgent) = try await rig.desktopAgent(on: "bravo")
        for agent in [alphaAgent, bravoAgent] {
            try await agent.wait(for: "the agent to share the clipboard") { $0.stderr.contains("the clipboard is shared") }
        }
        let doctor = try await rig.ctl("alpha", ["doctor"])
        #expect(doctor.stdout.contains("the clipboard is shared with your other devices through the X server"), "\(doctor)")
        // bravo's events from here on: once its watch printed the switch going off and on, it
        // hears everything after.
        let watch = try rig.ctlProcess("bravo", ["watch", "--json"])
        try await Rig.waitFor("bravo's watch to subscribe") {
            let off = try await rig.ctl("bravo", ["clipboard", "off"])
            let on = try await rig.ctl("bravo", ["clipboard", "on"])
            #expect(off.status == 0 && on.status == 0, "\(off) \(on)")
            return Self.newestKinds(watch).count >= 2
        }
        try await bravoAgent.wait(for: "bravo's agent to share the clipboard again") {
            $0.stderr.components(separatedBy: "the clipboard is shared").count > 2
        }
        // (The switch's events are all without a copy: what bravo heard starts at the first copy.)

        // 1. Text: announced, then pulled when bravo pastes.
        let text = "Hello from alpha ✓"
        try await Self.copy(rig, "alpha", alpha, text)
        try await bravoAgent.wait(for: "bravo to offer alpha's copy") { $0.stderr.contains("another device's copy is offered") }
        let pasted = try await Self.paste(rig, "bravo", bravo)
        #expect(pasted.status == 0 && pasted.stdout == text, "\(pasted)")
        let cli = try await rig.ctl("bravo", ["clipboard", "paste"])
        #expect(cli.status == 0 && cli.stdout == text, "\(cli)")
        let shown = try await rig.ctl("bravo", ["clipboard"])
        #expect(shown.stdout.hasPrefix("copied on desk") && shown.stdout.contains("text/plain;charset=utf-8 (20 B)"), "\(shown)")

        // 2. A 5 MiB picture, byte for byte.
        let (alphaHome, bravoHome) = (rig.home("alpha"), rig.home("bravo"))
        #expect(try await rig.run("alpha", ["sh", "-c", "head -c 5242880 /dev/urandom > \(alphaHome)/picture.png"]).status == 0)
        let offered = bravoAgent.stderr.components(separatedBy: "another device's copy is offered").count
        let image = try await Self.x(rig, "alpha", alpha, ["xclip", "-selection", "clipboard", "-t", "image/png", "-i", alphaHome + "/picture.png"])
        #expect(image.status == 0, "\(image)")
        try await bravoAgent.wait(for: "bravo to offer the picture") { $0.stderr.components(separatedBy: "another device's copy is offered").count > offered }
        let out = try await Self.x(rig, "bravo", bravo, ["sh", "-c", "xclip -selection clipboard -o -t image/png > \(bravoHome)/pasted.png"])
        #expect(out.status == 0, "\(out)")
        let original = FileManager.default.contents(atPath: alphaHome + "/picture.png")
        #expect(original?.count == 5 << 20 && FileManager.default.contents(atPath: bravoHome + "/pasted.png") == original, "the picture, byte for byte")

        // 3. A password manager's copy: never announced (alpha withdraws its picture instead),
        //    and not offered on bravo; the copy after it is.
        let owner = try RunningProcess(
            Rig.script,
            Array(Self.inSession(rig, "alpha", alpha, ["/usr/bin/python3", Self.owner, "UTF8_STRING=hunter2", "x-kde-passwordManagerHint=secret"]).dropFirst())
        )
        try await owner.wait(for: "the password manager to copy") { $0.stdout.contains("owned") }
        try await alphaAgent.wait(for: "alpha to withdraw its copy") { $0.stderr.contains("secret=true") }
        try await Rig.waitFor("bravo to forget alpha's picture") { try await rig.ctlJSON("bravo", ClipboardState.self, ["clipboard", "--json"]).newest == nil }
        #expect(try await Self.paste(rig, "bravo", bravo).status != 0, "nothing to paste on bravo")
        try await Self.copy(rig, "alpha", alpha, "after the secret")
        try await Rig.waitFor("bravo to hear of the next copy") { try await Self.paste(rig, "bravo", bravo).stdout == "after the secret" }
        _ = try? await owner.stop()

        // 4. Off on alpha: its copy is withdrawn, a copy is not even read, nothing is announced;
        //    on again, the next copy is.
        #expect(try await rig.ctl("alpha", ["clipboard", "off"]).stdout == "clipboard off\n")
        try await alphaAgent.wait(for: "alpha's agent to stop reading") { $0.stderr.contains("the clipboard is off here") }
        try await Self.copy(rig, "alpha", alpha, "while off")
        try await alphaAgent.wait(for: "alpha's agent to skip the copy") { $0.stderr.contains("a copy here was not read") }
        #expect(try await rig.ctl("alpha", ["clipboard", "on"]).stdout == "clipboard on\n")
        try await alphaAgent.wait(for: "alpha's agent to read again") { $0.stderr.components(separatedBy: "the clipboard is shared").count > 2 }
        try await Self.copy(rig, "alpha", alpha, "on again")
        try await Rig.waitFor("bravo to hear of the copy after the switch") { try await Self.paste(rig, "bravo", bravo).stdout == "on again" }

        // What bravo heard, in order: text, the picture, the withdrawal for the secret, the next
        // text, the withdrawal when alpha turned off, and the copy after it turned on — nothing
        // for the secret or the copy made while off.
        let utf8 = ["text/plain;charset=utf-8"]
        let heard = { Array(Self.newestKinds(watch).drop(while: \.isEmpty)) }
        try await Rig.waitFor("bravo's watch to print the last copy") { heard().count >= 6 }
        #expect(heard() == [utf8, ["image/png"], [], utf8, [], utf8], "\(watch.stdout)")

        // 5. A copy runs out: alpha gives copies out for 3 s from now on (a reload).
        try rig.write(to: alphaHome + "/.config/handoff/handoffd.toml", "[clipboard]\nlifetime = 3\n")
        let pid = try await rig.ctlJSON("alpha", DaemonStatus.self, ["status"]).pid
        #expect(try await rig.run("alpha", ["kill", "-HUP", "\(pid)"]).status == 0)
        try await Rig.waitFor("alpha's reload") { rig.daemon("alpha")?.stderr.contains("configuration reloaded") == true }
        try await Self.copy(rig, "alpha", alpha, "short-lived")
        try await Rig.waitFor("bravo to hear of the short-lived copy") { heard().count >= 7 }
        try await Rig.waitFor("the copy to run out on bravo", seconds: 60) {
            guard try await rig.ctl("bravo", ["clipboard"]).stdout.hasPrefix("nothing copied") else { return false }
            return try await Self.paste(rig, "bravo", bravo).status != 0
        }
        #expect(try await rig.ctl("alpha", ["clipboard"]).stdout.hasPrefix("nothing copied"))

        _ = try await capture.stop()
        let wire = FileManager.default.contents(atPath: pcap) ?? Data()
        #expect(capture.stderr.contains("\n0 packets dropped by kernel"), "the capture is whole: \(capture.stderr)")
        #expect(wire.count > 5 << 20, "the picture crossed the bridge (encrypted): \(wire.count) bytes; \(capture.stderr)")
        for clear in ["hunter2", "Hello from alpha", "after the secret", "while off"] {
            #expect(wire.range(of: Data(clear.utf8)) == nil, "\(clear) crossed the bridge in clear")
        }
        _ = try? await watch.stop()
        #expect(try await alphaAgent.stop() == 0, "\(alphaAgent.stderr)")
        #expect(try await bravoAgent.stop() == 0, "\(bravoAgent.stderr)")
        await alpha.stop()
        await bravo.stop()
    }
}
