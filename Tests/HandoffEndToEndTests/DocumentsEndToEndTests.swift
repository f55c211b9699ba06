import Foundation
import HandoffAPI
import HandoffModel
import HandoffTestSupport
import Testing

/// Documents from any app (docs/apps.md, "Documents from any app"), on two simulated hosts as the
/// test user: on alpha the real `handoff-desktop` follows the recently-used list, which GTK writes
/// (`RecentlyUsedWriter`: Gtk.RecentManager, as any GTK app records a document); bravo continues
/// with `handoffctl continue`, and the document opens with bravo's app for its MIME type — the
/// same document where bravo has it, else a copy that came over a stream. Root only builds the
/// hosts.
@Suite(.heavy, .timeLimit(.minutes(5))) struct DocumentsEndToEndTests {
    @Test func aDocumentOpenedOnOneHostOpensOnTheOther() async throws {
        await Rig.withHosts(["alpha", "bravo"]) { rig in
            try await run(rig)
        }
    }

    func run(_ rig: Rig) async throws {
        let (alpha, bravo) = (rig.home("alpha"), rig.home("bravo"))
        // `Sync` is one folder on both (as Syncthing keeps one), in different places.
        let alphaConfig = alpha + "/.config/handoff/handoffd.toml"
        try rig.write(to: alphaConfig, "[documents]\nfollow = true\nfolders = [\"~/Sync\"]\n")
        try rig.write(to: bravo + "/.config/handoff/handoffd.toml", "[documents]\nfolders = [\"~/Elsewhere/Sync\"]\n")
        // Bravo's app for text files, its default: it records the file it was started with.
        try rig.write(to: bravo + "/.local/share/applications/org.example.Pad.desktop", """
            [Desktop Entry]
            Type=Application
            Name=Example Pad
            Exec=\(bravo)/pad.sh %f
            MimeType=text/plain;
            """)
        try rig.write(to: bravo + "/.config/mimeapps.list", "[Default Applications]\ntext/plain=org.example.Pad.desktop;\n")
        try rig.write(to: bravo + "/pad.sh", "#!/bin/sh\nprintf '%s' \"$1\" > \(bravo)/pad.tmp && mv \(bravo)/pad.tmp \(bravo)/pad-opened\n", executable: true)
        let report = String(repeating: "Quarterly figures, line by line.\n", count: 40_000)
        try rig.write(to: alpha + "/Documents/report.txt", report)
        try rig.write(to: alpha + "/Sync/plan.txt", "the plan\n")
        try rig.write(to: bravo + "/Elsewhere/Sync/plan.txt", "the plan\n")
        try await EndToEndTests().startPaired(rig)

        // The agent on alpha, in a graphical session of the user's.
        let (session, agent) = try await rig.desktopAgent(on: "alpha", arguments: ["--log-level", "debug"])

        /// GTK records `path` as opened on alpha; waits until bravo sees it as alpha's activity.
        func open(_ path: String) async throws {
            try await record(path)
            let name = String(path.split(separator: "/").last!)
            try await Rig.waitFor("bravo to see \(name)") {
                try await rig.ctlJSON("bravo", PeersResponse.self, ["peers"]).peers.first { $0.reachable }?.activity?.title == name
            }
        }
        func record(_ path: String) async throws {
            let result = try await rig.run("alpha", ["/usr/bin/python3", "-c", RecentlyUsedWriter.script, path, "text/plain", "org.gnome.gedit"])
            guard result.status == 0 else { throw TestFailure("GTK did not record \(path): \(result)") }
        }
        /// Continues on bravo; the file bravo's app was started with.
        func continueOnBravo() async throws -> String {
            try? FileManager.default.removeItem(atPath: bravo + "/pad-opened")
            let continued = try await rig.ctl("bravo", ["continue", "desk"])
            guard continued.status == 0 else { throw TestFailure("continue: \(continued)") }
            var opened = ""
            try await Rig.waitFor("Example Pad to open the document") {
                opened = (try? String(contentsOfFile: bravo + "/pad-opened", encoding: .utf8)) ?? ""
                return !opened.isEmpty
            }
            return opened
        }

        // 1. Not on bravo: it comes over a stream into Downloads/Handoff, whole, and opens there.
        try await open(alpha + "/Documents/report.txt")
        #expect(try await continueOnBravo() == bravo + "/Downloads/Handoff/report.txt")
        #expect(try String(contentsOfFile: bravo + "/Downloads/Handoff/report.txt", encoding: .utf8) == report)

        // 2. In the folder both have, the same: bravo's own copy opens, nothing is fetched.
        try await open(alpha + "/Sync/plan.txt")
        #expect(try await continueOnBravo() == bravo + "/Elsewhere/Sync/plan.txt")
        #expect(!FileManager.default.fileExists(atPath: bravo + "/Downloads/Handoff/plan.txt"))

        // 3. Changed on alpha after it was offered: bravo says so and opens nothing.
        let made = try await rig.ctl("alpha", ["become-current", "--document", alpha + "/Documents/notes.txt"])
        #expect(made.status == 44 && made.stderr.contains("does not exist"), "\(made)")
        try rig.write(to: alpha + "/Documents/notes.txt", "first draft\n")
        #expect(try await rig.ctl("alpha", ["become-current", "--document", alpha + "/Documents/notes.txt"]).status == 0)
        try await Rig.waitFor("bravo to see notes.txt") {
            try await rig.ctlJSON("bravo", PeersResponse.self, ["peers"]).peers.first { $0.reachable }?.activity?.title == "notes.txt"
        }
        #expect(try await rig.run("alpha", ["sh", "-c", "echo second draft > \(alpha)/Documents/notes.txt && touch -d '+1 minute' \(alpha)/Documents/notes.txt"]).status == 0)
        let changed = try await rig.ctl("bravo", ["continue", "desk"])
        #expect(changed.status == 17 && changed.stderr.contains("notes.txt changed since it was offered"), "\(changed)")
        #expect(!FileManager.default.fileExists(atPath: bravo + "/Downloads/Handoff/notes.txt"))

        // 4. The switch off (a reload): what GTK records is not offered.
        try rig.write(to: alphaConfig, "[documents]\nfollow = false\nfolders = [\"~/Sync\"]\n")
        let pid = try await rig.ctlJSON("alpha", DaemonStatus.self, ["status"]).pid
        #expect(try await rig.run("alpha", ["kill", "-HUP", "\(pid)"]).status == 0)
        try await Rig.waitFor("the reload") { try await rig.ctlJSON("alpha", DaemonStatus.self, ["status"]).followsDocuments == false }
        try rig.write(to: alpha + "/Documents/unoffered.txt", "not for now\n")
        try await record(alpha + "/Documents/unoffered.txt")
        try await agent.wait(for: "the agent to see the change") { $0.stderr.contains("documents are not followed") }
        #expect(try await rig.ctlJSON("alpha", Activity.self, ["current"]).title == "notes.txt")

        #expect(try await agent.stop() == 0, "handoff-desktop on SIGTERM: \(agent.stderr)")
        await session.stop()
    }
}
