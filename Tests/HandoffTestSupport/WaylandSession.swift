import Foundation
import Testing

/// A real Wayland session without a screen, for the clipboard's tests: Debian's sway with
/// `WLR_BACKENDS=headless` (a wlroots compositor with the data-control protocol) and a session bus
/// (`SessionBus`), run through `wrap` (as the test user, in a simulated host); none mocked. sway
/// refuses to run as root, as a user's session never does.
public final class WaylandSession: @unchecked Sendable {
    public let display: String
    public let bus: SessionBus
    let sway: RunningProcess

    /// The variables a program of this session runs with (merged over `base`).
    public func environment(_ base: [String: String] = [:]) -> [String: String] {
        base.merging(["WAYLAND_DISPLAY": display, "DBUS_SESSION_BUS_ADDRESS": bus.address]) { _, new in new }
    }

    /// `base`: the environment of the session's programs (HOME, XDG_RUNTIME_DIR — where sway puts
    /// its socket — …); `directory`: where the bus's files go.
    public init(directory: String, base: [String: String], wrap: @escaping ([String]) throws -> [String]) async throws {
        HeavyTrait.mustHoldASlot("a Wayland compositor")
        guard let runtime = base["XDG_RUNTIME_DIR"] else { throw TestFailure("a Wayland session needs XDG_RUNTIME_DIR") }
        let before = Set((try? FileManager.default.contentsOfDirectory(atPath: runtime)) ?? [])
        let env = base.merging(["WLR_BACKENDS": "headless", "WLR_LIBINPUT_NO_DEVICES": "1", "WLR_RENDERER": "pixman"]) { _, new in new }
        let command = try wrap(["/usr/bin/env", "-i"] + env.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" } + ["/usr/bin/sway", "-c", "/dev/null"])
        sway = try RunningProcess(command[0], Array(command.dropFirst()))
        // Its socket, once it is there (sway names it: wayland-0, -1…).
        var found: String?
        let deadline = ContinuousClock.now + .seconds(60)
        while found == nil {
            let now = Set((try? FileManager.default.contentsOfDirectory(atPath: runtime)) ?? [])
            found = now.subtracting(before).first { $0.hasPrefix("wayland-") && !$0.hasSuffix(".lock") }
            guard sway.isRunning else { throw TestFailure("sway stopped: \(sway.stderr)") }
            guard ContinuousClock.now < deadline else { throw TestFailure("sway made no socket in \(runtime): \(sway.stderr)") }
            if found == nil { try await Task.sleep(for: .milliseconds(20)) }
        }
        display = found!
        bus = try await SessionBus(directory: directory, wrap: wrap)
    }

    public func stop() async {
        await bus.stop()
        _ = try? await sway.stop()
    }
}

extension Rig {
    /// A Wayland session of the test user on `host` (`WaylandSession`) and the real
    /// `handoff-desktop` in it, once it is ready.
    public func waylandAgent(on host: String) async throws -> (WaylandSession, RunningProcess) {
        let directory = home(host) + "/session"
        try user.makeDirectory(directory)
        let inHost: ([String]) throws -> [String] = { [self] command in
            [Rig.script, "exec", name, host] + user.command(command, environment: environment(host))
        }
        let session = try await WaylandSession(directory: directory, base: environment(host), wrap: inHost)
        return (session, try await waylandAgent(on: host, in: session))
    }

    /// The real `handoff-desktop` in `session` (another one, or the same agent started anew),
    /// once it is ready.
    public func waylandAgent(on host: String, in session: WaylandSession) async throws -> RunningProcess {
        let agent = try RunningProcess(
            Rig.script,
            ["exec", name, host]
                + user.command([try user.product("handoff-desktop"), "--status-icon-grace", "3600"], environment: session.environment(environment(host)))
        )
        try await agent.wait(for: "handoff-desktop to be ready") { $0.stderr.contains("] ready") }
        return agent
    }
}
