import Foundation
import HandoffAPI
import HandoffModel
import HandoffTestSupport
import Testing

/// Apps built on HandoffKit (the examples) on two simulated hosts, everything as the test user:
/// alpha ("desk") originates, bravo ("laptop") continues into its running apps — and a running
/// app that hangs or crashes mid-continuation fails that continuation cleanly, the next one
/// taking the launch path, handoffd unharmed.
@Suite(.heavy, .timeLimit(.minutes(5))) struct AppsEndToEndTests {
    @Test func handoffKitAppsAcrossHosts() async throws {
        await Rig.withHosts(["alpha", "bravo"]) { rig in
            try await run(rig)
        }
    }

    /// An example app on `host`, as the test user, driven through its stdin.
    func app(_ rig: Rig, _ host: String, _ product: String, _ arguments: [String] = []) throws -> ScriptedApp {
        let fifo = rig.home(host) + "/\(product).\(UUID().uuidString.prefix(8)).in"
        return try ScriptedApp(fifo: fifo, owner: rig.user, [try rig.user.product(product)] + arguments) { command in
            (Rig.script, ["exec", rig.name, host] + rig.user.command(command, environment: rig.environment(host)))
        }
    }

    func bravoSees(_ rig: Rig, _ title: String) async throws {
        _ = try await Rig.waitFor("bravo to see \(title)") {
            try await rig.ctlJSON("bravo", PeersResponse.self, ["peers"]).peers.first { $0.name == "desk" && $0.reachable }?.activity?.title == title
        }
    }

    func run(_ rig: Rig) async throws {
        try await EndToEndTests().startPaired(rig)

        // 1. The notes editor: typed text saved at willSave, the attachment over a stream.
        let attachment = rig.home("alpha") + "/photo.bin"
        #expect(try await rig.run("alpha", ["/bin/sh", "-c", "head -c 2000000 /dev/urandom > \(attachment)"]).status == 0)
        let deskNotes = try app(rig, "alpha", "handoff-example-notes", ["--dir", rig.home("alpha")])
        let laptopNotes = try app(rig, "bravo", "handoff-example-notes", ["--dir", rig.home("bravo")])
        try await deskNotes.expect("ready")
        try await laptopNotes.expect("ready")
        deskNotes.send("new Report")
        deskNotes.send("attach \(attachment)")
        deskNotes.send("type the second draft")
        try await deskNotes.expect("typed 16 characters")
        // The app hands over needsSave as it comes, not before printing: wait for handoffd to have it.
        _ = try await Rig.waitFor("alpha's handoffd to have needsSave") {
            try await rig.ctlJSON("alpha", Activity.self, ["current"]).content.needsSave
        }
        try await bravoSees(rig, "Report")
        let continued = try await rig.ctl("bravo", ["continue", "desk"])
        #expect(continued.status == 0 && continued.stderr.contains("org.handoff.example.Notes"), "\(continued)")
        try await laptopNotes.expect("continued Report from desk: the second draft")
        try await laptopNotes.expect("received attachment 2000000 bytes")
        let sums = try await rig.run("alpha", ["/usr/bin/sha256sum", attachment, rig.home("bravo") + "/attachment"]).stdout.split(separator: "\n").map { $0.prefix(64) }
        #expect(sums.count == 2 && sums[0] == sums[1], "checksums: \(sums)")
        try await deskNotes.expect("wasContinued")
        #expect(deskNotes.output.contains("willSave") && deskNotes.output.contains("sent attachment 2000000 bytes"))

        // 2. The viewer: the window showing item 7 takes it; item 9 opens a new window.
        let deskViewer = try app(rig, "alpha", "handoff-example-viewer")
        let laptopViewer = try app(rig, "bravo", "handoff-example-viewer")
        try await deskViewer.expect("ready")
        try await laptopViewer.expect("ready")
        laptopViewer.send("open 7")
        laptopViewer.send("open 8")
        try await laptopViewer.expect("window w:8 shows item 8")
        deskViewer.send("open 7")
        try await bravoSees(rig, "Item 7")
        #expect(try await rig.ctl("bravo", ["continue", "desk"]).status == 0)
        try await laptopViewer.expect("item 7 continued in open window w:7")
        deskViewer.send("open 9")
        try await bravoSees(rig, "Item 9")
        #expect(try await rig.ctl("bravo", ["continue", "desk"]).status == 0)
        try await laptopViewer.expect("item 9 continued in new window w:9")
        #expect(try await laptopViewer.quit() == 0)

        // 3. A receiver that hangs (stopped): the continuation fails at the 5 s answer deadline
        //    (timeout, exit 5, saying so); the app no longer receives, so the next one takes the
        //    launch path (no app is installed for notes on bravo: exit 36).
        deskNotes.send("new Hung")
        try await bravoSees(rig, "Hung")
        kill(laptopNotes.process.pid, SIGSTOP)
        let hung = try await rig.ctl("bravo", ["continue", "desk"])
        #expect(hung.status == 5 && hung.stderr.contains("did not take the activity within 5 s"), "timeout: \(hung)")
        let next = try await rig.ctl("bravo", ["continue", "desk"])
        #expect(next.status == 36 && next.stderr.contains("no application handles org.handoff.example.note"), "\(next)")
        kill(laptopNotes.process.pid, SIGKILL)

        // 4. A receiver that crashes mid-continuation: the continuation fails at once with
        //    handler_failed (exit 37) — the deadline would have said timeout (exit 5).
        let crashing = try app(rig, "bravo", "handoff-example-notes", ["--dir", rig.home("bravo")])
        try await crashing.expect("ready")
        kill(crashing.process.pid, SIGSTOP)
        let pending = try rig.ctlProcess("bravo", ["continue", "desk"])
        // Handed to the stopped app within milliseconds (the activity is one round trip away);
        // a second is a wide margin, and the app's answer is due only after five.
        try await Task.sleep(for: .seconds(1))
        #expect(pending.isRunning, "the continuation waits for the stopped app")
        kill(crashing.process.pid, SIGKILL)
        let crashStatus = await pending.exitStatus()
        #expect(crashStatus == 37, "\(pending.stdout) \(pending.stderr)")

        // handoffd on bravo is unharmed: it answers, and a new instance receives again.
        #expect(try await rig.ctl("bravo", ["status"]).status == 0)
        let again = try app(rig, "bravo", "handoff-example-notes", ["--dir", rig.home("bravo")])
        try await again.expect("ready")
        #expect(try await rig.ctl("bravo", ["continue", "desk"]).status == 0)
        try await again.expect("continued Hung from desk")
        #expect(try await again.quit() == 0)
        #expect(try await deskNotes.quit() == 0)
        #expect(try await deskViewer.quit() == 0)
    }
}
