import Foundation
import HandoffTestSupport
import Testing

/// The Python example (Examples/Python/handoff-notes.py, python3-dbus) on two simulated hosts,
/// using nothing but the D-Bus interface (docs/dbus.md): on each host a session bus, the real
/// `handoff-desktop` and the example run as the test user. A note written on alpha ("desk") is
/// continued on bravo by `handoffctl continue desk`: alpha's app saves it when asked (needsSave),
/// bravo's running app receives it through its org.handoff.Receiver1 object and fetches the
/// attachment over a continuation stream handed over as a file descriptor, on both sides. Root
/// only builds the hosts. Then a GApplication with one action and no handoff library
/// (Examples/Python/handoff-gio-reader.py, DBusActivatable) receives a continuation in its
/// running instance.
@Suite(.heavy, .timeLimit(.minutes(5))) struct DBusExampleEndToEndTests {
    static let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Examples/Python/handoff-notes.py").path
    static let reader = (example as NSString).deletingLastPathComponent + "/handoff-gio-reader.py"

    /// A session bus and the agent on `host`, as the test user.
    struct Session {
        let bus: SessionBus
        let agent: RunningProcess
        let environment: [String: String]

        init(_ rig: Rig, _ host: String) async throws {
            let directory = rig.home(host) + "/session"
            try rig.user.makeDirectory(directory)
            bus = try await SessionBus(directory: directory) { command in
                [Rig.script, "exec", rig.name, host] + rig.user.command(command, environment: rig.environment(host))
            }
            environment = rig.environment(host).merging(["DBUS_SESSION_BUS_ADDRESS": bus.address]) { $1 }
            agent = try RunningProcess(Rig.script, ["exec", rig.name, host] + rig.user.command([try rig.user.product("handoff-desktop")], environment: environment))
            try await agent.wait(for: "handoff-desktop on \(host) to be ready") { $0.stderr.contains("] ready") }
        }

        func app(_ rig: Rig, _ host: String, _ script: String) throws -> ScriptedApp {
            try ScriptedApp(fifo: rig.home(host) + "/notes.\(UUID().uuidString.prefix(8)).in", owner: rig.user, ["/usr/bin/python3", script]) { command in
                (Rig.script, ["exec", rig.name, host] + rig.user.command(command, environment: environment))
            }
        }

        func stop() async throws -> Int32 {
            let status = try await agent.stop()
            await bus.stop()
            return status
        }
    }

    @Test func pythonAppsOverDBusAndAGApplicationWithoutHandoffCode() async throws {
        await Rig.withHosts(["alpha", "bravo"]) { rig in
            try await run(rig)
        }
    }

    func run(_ rig: Rig) async throws {
        try await EndToEndTests().startPaired(rig)
        let desk = try await Session(rig, "alpha")
        let laptop = try await Session(rig, "bravo")
        let source = try String(contentsOfFile: Self.example, encoding: .utf8)
        for host in ["alpha", "bravo"] { try rig.write(to: rig.home(host) + "/handoff-notes.py", source, executable: true) }

        let attachment = rig.home("alpha") + "/photo.bin"
        #expect(try await rig.run("alpha", ["/bin/sh", "-c", "head -c 2000000 /dev/urandom > \(attachment)"]).status == 0)
        let deskNotes = try desk.app(rig, "alpha", rig.home("alpha") + "/handoff-notes.py")
        let laptopNotes = try laptop.app(rig, "bravo", rig.home("bravo") + "/handoff-notes.py")
        try await deskNotes.expect("ready")
        try await laptopNotes.expect("ready")
        deskNotes.send("attach \(attachment)")
        deskNotes.send("write Groceries: milk, eggs")
        try await deskNotes.expect("note is current as")
        laptopNotes.send("save-to \(rig.home("bravo"))/received.bin")
        try await laptopNotes.expect("attachments go to")
        try await AppsEndToEndTests().bravoSees(rig, "Groceries: milk, eggs")

        let continued = try await rig.ctl("bravo", ["continue", "desk"])
        #expect(continued.status == 0 && continued.stderr.contains("org.handoff.example.PyNotes"), "\(continued)")
        try await laptopNotes.expect("continued “Groceries: milk, eggs” from desk: Groceries: milk, eggs")
        do {
            try await laptopNotes.expect("received 2000000 bytes sha256 ", seconds: 60)
        } catch {
            throw TestFailure("\(error); on alpha: \(deskNotes.output) \(deskNotes.process.stderr); agent: \(desk.agent.stderr.suffix(3000))")
        }
        let sum = try await rig.run("alpha", ["/usr/bin/sha256sum", attachment]).stdout.prefix(64)
        #expect(laptopNotes.output.contains("received 2000000 bytes sha256 \(sum)"), "\(laptopNotes.output)")
        try await deskNotes.expect("sent 2000000 bytes")
        try await deskNotes.expect("continued on laptop")
        #expect(deskNotes.output.contains("saved for laptop"), "\(deskNotes.output)")

        #expect(try await laptopNotes.quit() == 0)
        #expect(try await deskNotes.quit() == 0)

        // A GApplication with one action and no handoff library (DBusActivatable): its running instance gets the
        // continuation through org.freedesktop.Application; its Exec line, which would fail, is
        // not run.
        let reader = try String(contentsOfFile: Self.reader, encoding: .utf8)
        try rig.write(to: rig.home("bravo") + "/handoff-gio-reader.py", reader, executable: true)
        try rig.write(
            to: rig.home("bravo") + "/.local/share/applications/org.handoff.example.Reader.desktop",
            "[Desktop Entry]\nType=Application\nName=Example Reader\nDBusActivatable=true\nX-Handoff-ContinueAction=true\n"
                + "Exec=/usr/bin/touch \(rig.home("bravo"))/exec-ran\nX-Handoff-ActivityTypes=org.handoff.example.article;\n"
        )
        let running = try RunningProcess(
            Rig.script, ["exec", rig.name, "bravo"] + rig.user.command(["/usr/bin/python3", rig.home("bravo") + "/handoff-gio-reader.py"], environment: laptop.environment)
        )
        try await running.wait(for: "the reader to run") { $0.stdout.contains("ready as org.handoff.example.Reader") }
        #expect(try await rig.ctl("alpha", ["become-current", "--type", "org.handoff.example.article", "--title", "An article"]).status == 0)
        try await AppsEndToEndTests().bravoSees(rig, "An article")
        // handoffctl as in the user's session: with its session bus.
        let handed = try await Subprocess.run(
            Rig.script, ["exec", rig.name, "bravo"] + rig.user.command([try rig.user.product("handoffctl"), "continue", "desk"], environment: laptop.environment)
        )
        #expect(handed.status == 0 && handed.stderr.contains("org.handoff.example.Reader.desktop"), "\(handed)")
        try await running.wait(for: "the reader to take the article") { $0.stdout.contains("continued “An article” in the running instance") }
        #expect(!FileManager.default.fileExists(atPath: rig.home("bravo") + "/exec-ran"), "the Exec line ran as well")
        #expect(try await running.stop() == 0 || !running.isRunning, "\(running.stderr)")
        #expect(try await desk.stop() == 0, "handoff-desktop on alpha on SIGTERM: \(desk.agent.stderr)")
        #expect(try await laptop.stop() == 0, "handoff-desktop on bravo on SIGTERM: \(laptop.agent.stderr)")
    }
}
