import Foundation
import Testing

/// A real graphical session without a screen, for tests of the desktop agent: an X server
/// (`Xvfb`), a session bus (`SessionBus`) and Debian's `dunst` as the notification server — all
/// run through `wrap` (as the test user, in a simulated host), none of them mocked. `dunstctl`
/// asks dunst what it displays and clicks notifications; `screenshot` saves the screen as PNG.
public final class DesktopSession: @unchecked Sendable {
    public let directory: String
    public let display: String
    public let bus: SessionBus
    let xvfb: RunningProcess
    let dunst: RunningProcess
    let wrap: ([String]) throws -> [String]

    /// The variables a program of this session runs with (merged over `base`).
    public func environment(_ base: [String: String] = [:]) -> [String: String] {
        base.merging(["DISPLAY": display, "DBUS_SESSION_BUS_ADDRESS": bus.address]) { _, new in new }
    }

    /// `base`: the environment every program of the session gets (HOME, XDG_RUNTIME_DIR…).
    public init(directory: String, base: [String: String] = ProcessInfo.processInfo.environment, wrap: @escaping ([String]) throws -> [String] = { $0 }) async throws {
        HeavyTrait.mustHoldASlot("an X server and a notification server")
        self.directory = directory
        self.wrap = wrap
        // Xvfb picks a free display itself and says which on stdout (-displayfd 1) once it serves.
        let x = try wrap(["/usr/bin/Xvfb", "-displayfd", "1", "-screen", "0", "1024x768x24", "-nolisten", "tcp"])
        xvfb = try RunningProcess(x[0], Array(x.dropFirst()))
        try await xvfb.wait(seconds: 60, for: "Xvfb to name its display") { $0.stdout.hasSuffix("\n") }
        display = ":" + xvfb.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        bus = try await SessionBus(directory: directory, wrap: wrap)
        let env = base.merging(["DISPLAY": display, "DBUS_SESSION_BUS_ADDRESS": bus.address]) { _, new in new }
        let d = try wrap(["/usr/bin/env", "-i"] + env.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" } + ["/usr/bin/dunst"])
        dunst = try RunningProcess(d[0], Array(d.dropFirst()))
        let deadline = ContinuousClock.now + .seconds(60)
        while try await dunstctl(["count", "displayed"]).status != 0 {
            guard ContinuousClock.now < deadline else { throw TestFailure("dunst did not come up: \(dunst.stderr)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// `dunstctl ARGS` in this session.
    public func dunstctl(_ arguments: [String]) async throws -> ProcessResult {
        let command = try wrap(["/usr/bin/env", "-i", "DBUS_SESSION_BUS_ADDRESS=" + bus.address, "/usr/bin/dunstctl"] + arguments)
        return try await Subprocess.run(command[0], Array(command.dropFirst()))
    }

    /// Every `Notify` call the notification server gets from now on, as `dbus-monitor` prints it
    /// (`text` of the returned process): what the server was asked to show, word for word.
    public func monitorNotifications() async throws -> RunningProcess {
        let command = try wrap([
            "/usr/bin/dbus-monitor", "--address", bus.address, "--monitor", "type='method_call',interface='org.freedesktop.Notifications',member='Notify'",
        ])
        let monitor = try RunningProcess(command[0], Array(command.dropFirst()))
        // dbus-monitor names itself on the bus once it monitors.
        try await monitor.wait(for: "dbus-monitor to start") { $0.stdout.contains("NameAcquired") || $0.stdout.contains("NameLost") }
        return monitor
    }

    /// How many notifications dunst shows now.
    public func displayed() async throws -> Int {
        let result = try await dunstctl(["count", "displayed"])
        guard result.status == 0, let n = Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw TestFailure("dunstctl count displayed: \(result)")
        }
        return n
    }

    /// Waits until dunst shows `count` notifications.
    public func waitUntilDisplayed(_ count: Int, seconds: Double = 15) async throws {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while try await displayed() != count {
            guard ContinuousClock.now < deadline else { throw TestFailure("dunst never showed \(count) notification(s) (it shows \(try await displayed()))") }
            try await Task.sleep(for: .milliseconds(25))
        }
    }

    /// The X screen as a PNG at `path` (ImageMagick's `import`).
    public func screenshot(to path: String) async throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let shot = directory + "/screen.png"
        let command = try wrap(["/usr/bin/import", "-display", display, "-window", "root", shot])
        let result = try await Subprocess.run(command[0], Array(command.dropFirst()))
        guard result.status == 0 else { throw TestFailure("import -window root: \(result)") }
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.copyItem(atPath: shot, toPath: path)
    }

    public func stop() async {
        _ = try? await dunst.stop()
        await bus.stop()
        _ = try? await xvfb.stop()
    }

    /// Where tests keep what a person looks at afterwards (screenshots): `.build/test-output/`.
    public static func outputPath(_ name: String) -> String {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path + "/.build/test-output/" + name
    }
}

extension Rig {
    /// A graphical session of the test user on `host` (`DesktopSession`: Xvfb, a session bus and
    /// dunst, as that user in the host's namespace) and the real `handoff-desktop` in it with the
    /// session's variables, as the user unit gives them, once it is ready. No panel shows status
    /// icons here: the agent's one notice about it is put off past the test.
    public func desktopAgent(on host: String, arguments: [String] = []) async throws -> (DesktopSession, RunningProcess) {
        let directory = home(host) + "/session"
        try user.makeDirectory(directory)
        let inHost: ([String]) throws -> [String] = { [self] command in
            [Rig.script, "exec", name, host] + user.command(command, environment: environment(host))
        }
        let session = try await DesktopSession(directory: directory, base: environment(host), wrap: inHost)
        let agent = try RunningProcess(
            Rig.script,
            ["exec", name, host]
                + user.command([try user.product("handoff-desktop"), "--status-icon-grace", "3600"] + arguments, environment: session.environment(environment(host)))
        )
        try await agent.wait(for: "handoff-desktop to be ready") { $0.stderr.contains("] ready") }
        return (session, agent)
    }
}

