import Foundation
import HandoffAPI
import HandoffModel
import HandoffTestSupport
import Testing

/// Links to activities (docs/apps.md, "Links"), on two simulated hosts as the test user: an
/// activity current on alpha is linked on bravo; the link, opened the way a clicked link is (GIO
/// finds the `x-scheme-handler/handoff` handler, handoffctl open), reopens it from alpha with a
/// fresh willSave; with alpha's handoffd stopped, from bravo's history; with alpha back and the
/// same note current there again, from alpha. Deleted on alpha while bravo is away, it leaves
/// bravo's history when bravo is back. Root only builds the hosts.
@Suite(.heavy, .timeLimit(.minutes(5))) struct LinksEndToEndTests {
    @Test func aLinkReopensFromTheDeviceOrFromHistory() async throws {
        await Rig.withHosts(["alpha", "bravo"]) { rig in
            try await run(rig)
        }
    }

    func run(_ rig: Rig) async throws {
        let (alpha, bravo) = (rig.home("alpha"), rig.home("bravo"))
        // Bravo's editor records each activity it is started with.
        try rig.write(to: bravo + "/.local/share/applications/org.example.Editor.desktop", """
            [Desktop Entry]
            Type=Application
            Name=Example Editor
            Exec=\(bravo)/editor.sh %f
            X-Handoff-ActivityTypes=org.example.Editor.edit;
            """)
        try rig.write(to: bravo + "/editor.sh", "#!/bin/sh\ncp \"$1\" \(bravo)/received.tmp && mv \(bravo)/received.tmp \(bravo)/received.json\n", executable: true)
        // The link handler as the package installs it, pointing at the binaries under test.
        let handler = try String(contentsOfFile: Self.source + "/packaging/links/org.handoff.open-link.desktop", encoding: .utf8)
        let binaries = String(try rig.user.product("handoffctl").dropLast("/handoffctl".count))
        try rig.write(to: bravo + "/.local/share/applications/org.handoff.open-link.desktop", handler.replacingOccurrences(of: "@BINDIR@", with: binaries))
        // As desktop-file-utils' trigger does for the package's folder (mimeinfo.cache, which
        // GIO and xdg-open read).
        let cached = try await rig.run("bravo", ["/usr/bin/update-desktop-database", bravo + "/.local/share/applications"])
        #expect(cached.status == 0, "\(cached)")
        let found = try await rig.run("bravo", ["/usr/bin/gio", "mime", "x-scheme-handler/handoff"])
        #expect(found.stdout.contains("org.handoff.open-link.desktop"), "\(found)")

        try await EndToEndTests().startPaired(rig)
        // Alpha's note: each willSave gives the next save's text (save 1, save 2…).
        let counter = alpha + "/saves"
        let saveScript = alpha + "/save.sh"
        try rig.write(to: saveScript, """
            #!/bin/sh
            n=$(( $(cat \(counter) 2>/dev/null || echo 0) + 1 )); echo $n > \(counter)
            printf '{"text": {"string": "save %s"}}' $n
            """, executable: true)
        func showNote() async throws -> RunningProcess {
            let saver = try rig.ctlProcess(
                "alpha", [
                    "become-current", "--type", "org.example.Editor.edit", "--title", "Groceries", "--persistent-id", "notes/groceries",
                    "--save-exec", saveScript,
                ]
            )
            try await saver.wait(for: "become-current --save-exec to attach") { $0.stderr.contains("attached") }
            // This one, not the one alpha's handoffd kept from before it stopped.
            let id = try await rig.ctlJSON("alpha", Activity.self, ["current", "--json"]).id
            try await Rig.waitFor("bravo to see the note") {
                try await rig.ctlJSON("bravo", PeersResponse.self, ["peers"]).peers.first { $0.reachable }?.activity?.id == id
            }
            return saver
        }
        /// Opens `link` as a clicked link is opened; the text of the activity the editor got.
        func click(_ link: String) async throws -> (text: String, output: ProcessResult) {
            try? FileManager.default.removeItem(atPath: bravo + "/received.json")
            let opened = try await rig.run("bravo", ["/usr/bin/gio", "open", link])
            guard opened.status == 0 else { throw TestFailure("gio open: \(opened)") }
            var text = ""
            try await Rig.waitFor("the editor to get the linked note") {
                guard let data = FileManager.default.contents(atPath: bravo + "/received.json"),
                    let activity = try? LocalAPIJSON.decoder().decode(Activity.self, from: data)
                else { return false }
                if case .string(let saved) = activity.content.userInfo["text"] { text = saved }
                return true
            }
            return (text, opened)
        }

        // 1. Linked on bravo: fetched (save 1) and kept in bravo's history.
        var saver = try await showNote()
        let made = try await rig.ctl("bravo", ["link", "desk"])
        #expect(made.status == 0 && made.stderr.contains("a link to \"Groceries\""), "\(made)")
        let link = made.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(link.hasPrefix("handoff:v1.") && !link.contains("groceries"), "\(link)")
        let history = try await rig.ctlJSON("bravo", HistoryResponse.self, ["history", "--json"])
        #expect(history.entries.first?.activity.content.userInfo["text"] == .string("save 1"), "\(history)")

        // 2. Clicked while alpha has it current: from alpha, saved afresh (save 2).
        #expect(try await click(link).text == "save 2")
        try await saver.wait(for: "wasContinued on alpha") { $0.stdout.contains("wasContinued") }

        // 3. Alpha's handoffd stopped: from bravo's history, the newest it kept (save 2).
        _ = try await saver.stop()
        _ = try await rig.daemon("alpha")?.stop()
        let fromHistory = try await rig.ctlJSON("bravo", OpenLinkResponse.self, ["open", link, "--json"])
        #expect(fromHistory.source == .history && fromHistory.continued.activity.content.userInfo["text"] == .string("save 2"), "\(fromHistory)")
        #expect(try await click(link).text == "save 2")

        // 4. Alpha back, the same note current again (a new activity of the same
        //    persistentIdentifier): from alpha, saved afresh (save 3).
        try await rig.startDaemon("alpha")
        saver = try await showNote()
        let fresh = try await rig.ctl("bravo", ["open", link])
        #expect(fresh.status == 0 && !fresh.stderr.contains("history") && fresh.stderr.contains("opened with org.example.Editor.desktop"), "\(fresh)")
        try await Rig.waitFor("the editor to get save 3") {
            (try? String(contentsOfFile: bravo + "/received.json", encoding: .utf8))?.contains("save 3") == true
        }
        _ = try await saver.stop()

        // 5. Deleted on alpha while bravo's handoffd is stopped: bravo, back, hears it and drops
        //    the note from its history; the link then has nothing left to open.
        _ = try await rig.daemon("bravo")?.stop()
        let deleted = try await rig.ctl("alpha", ["history", "delete", "--persistent-id", "notes/groceries"])
        #expect(deleted.status == 0 && deleted.stdout.contains("told 0 devices now"), "\(deleted)")
        #expect(try await rig.ctlJSON("alpha", HistoryResponse.self, ["history", "--json"]).entries.allSatisfy { $0.activity.content.persistentIdentifier != "notes/groceries" })
        try await rig.startDaemon("bravo")
        try await Rig.waitFor("bravo, back, to hear the deletion") {
            try await rig.ctlJSON("bravo", HistoryResponse.self, ["history", "--json"]).entries.allSatisfy { $0.activity.content.persistentIdentifier != "notes/groceries" }
        }
        let gone = try await rig.ctl("bravo", ["open", link])
        #expect(gone.status == 47, "\(gone)")

        // A link of another account (or a typo) is refused with its own status.
        let foreign = try await rig.ctl("bravo", ["open", "handoff:v1.bm90IGEgbGluaw"])
        #expect(foreign.status == 46 && foreign.stderr.contains("not a link of this account"), "\(foreign)")
    }

    /// The repository.
    static let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
}
