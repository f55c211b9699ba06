import Foundation
import HandoffAPI

/// Simulated hosts (scripts/rig.sh): each a network namespace on a private bridge with its own
/// D-Bus and avahi-daemon. Tests run real handoffd and handoffctl binaries inside them.
public final class Rig: @unchecked Sendable {
    public static let script = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().appendingPathComponent("../../scripts/rig.sh").standardizedFileURL.path

    public let name: String
    public let hosts: [String]
    public let directory: String
    private var daemons: [String: RunningProcess] = [:]
    private let lock = NSLock()

    /// Why end-to-end tests cannot run here, or nil when they can.
    public static var unavailableReason: String? {
        if geteuid() != 0 { return "end-to-end tests need root (network namespaces); run `make test` as root" }
        for tool in ["/usr/sbin/avahi-daemon", "/usr/bin/dbus-daemon", "/usr/bin/nsenter", "/usr/bin/unshare"] where !FileManager.default.fileExists(atPath: tool) {
            return "\(tool) is missing; run scripts/install-deps.sh test"
        }
        return nil
    }

    public static func up(_ hosts: [String]) async throws -> Rig {
        // Rigs of earlier runs that crashed (their test process is gone) are taken down first.
        _ = try? await Subprocess.run(script, ["sweep", "-"])
        let name = "e" + String((0..<7).map { _ in "abcdefghijklmnopqrstuvwxyz0123456789".randomElement()! })
        let rig = Rig(name: name, hosts: hosts, directory: try TempDirectory.make(prefix: "handoff-e2e"))
        var env = ProcessInfo.processInfo.environment
        env["HANDOFF_RIG_OWNER"] = String(getpid())
        let result = try await Subprocess.run(script, ["up", name] + hosts, environment: env)
        guard result.status == 0 else {
            _ = try? await Subprocess.run(script, ["down", name])
            throw TestFailure("rig up failed: \(result)")
        }
        return rig
    }

    private init(name: String, hosts: [String], directory: String) {
        self.name = name
        self.hosts = hosts
        self.directory = directory
    }

    public func address(_ host: String) async throws -> String {
        try await Subprocess.run(Rig.script, ["addr", name, host]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The environment of `host`'s user: its own home, runtime and state directories.
    public func environment(_ host: String) -> [String: String] {
        let home = directory + "/" + host
        return [
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": home, "XDG_RUNTIME_DIR": home + "/run", "XDG_STATE_HOME": home + "/state", "XDG_CONFIG_HOME": home + "/config",
        ]
    }

    /// Runs a command inside `host`.
    public func run(_ host: String, _ command: [String]) async throws -> ProcessResult {
        try await Subprocess.run(Rig.script, ["exec", name, host, "/usr/bin/env"] + environment(host).map { "\($0)=\($1)" } + command)
    }

    /// rig.sh's arguments to run `handoffctl ARGUMENTS` inside `host` (for a `RunningProcess`).
    public func execArguments(_ host: String, _ arguments: [String]) -> [String] {
        ["exec", name, host, "/usr/bin/env"] + environment(host).map { "\($0)=\($1)" } + [Subprocess.product("handoffctl")] + arguments
    }

    public func ctl(_ host: String, _ arguments: [String]) async throws -> ProcessResult {
        try await run(host, [Subprocess.product("handoffctl")] + arguments)
    }

    /// `handoffctl … --json` decoded.
    public func ctlJSON<T: Decodable>(_ host: String, _ type: T.Type, _ arguments: [String]) async throws -> T {
        let r = try await ctl(host, arguments + ["--json"])
        guard r.status == 0 else { throw TestFailure("handoffctl \(arguments) on \(host): \(r)") }
        return try LocalAPIJSON.decoder().decode(T.self, from: Data(r.stdout.utf8))
    }

    /// Starts handoffd on `host` and waits until it answers.
    @discardableResult
    public func startDaemon(_ host: String, arguments: [String] = []) async throws -> RunningProcess {
        try FileManager.default.createDirectory(atPath: directory + "/" + host, withIntermediateDirectories: true)
        let env = environment(host)
        let process = try RunningProcess(
            Rig.script,
            ["exec", name, host, "/usr/bin/env"] + env.map { "\($0)=\($1)" } + [Subprocess.product("handoffd"), "--log-level", "debug"] + arguments
        )
        lock.withLock { daemons[host] = process }
        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline {
            if try await ctl(host, ["status"]).status == 0 { return process }
            guard process.isRunning else { throw TestFailure("handoffd on \(host) exited: \(process.stderr)") }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestFailure("handoffd on \(host) did not start: \(process.stderr)")
    }

    public func daemon(_ host: String) -> RunningProcess? {
        lock.withLock { daemons[host] }
    }

    public func avahi(_ host: String, _ action: String) async throws {
        let r = try await Subprocess.run(Rig.script, ["avahi", name, host, action])
        guard r.status == 0 else { throw TestFailure("avahi \(action) on \(host): \(r)") }
    }

    /// Captures everything on the bridge until `stop` is called on the returned process.
    public func captureBridge(to path: String) throws -> RunningProcess {
        try RunningProcess("/usr/bin/nsenter", ["--net=/run/netns/\(name)-br", "/usr/bin/tcpdump", "-i", "br0", "-U", "-s", "0", "-w", path])
    }

    /// Stops every daemon and removes the hosts.
    public func down() async {
        let all = lock.withLock { Array(daemons.values) }
        for d in all { _ = try? await d.stop() }
        _ = try? await Subprocess.run(Rig.script, ["down", name])
        TempDirectory.remove(directory)
    }

    /// Polls `condition` every 50 ms for up to `seconds`; returns how long it took.
    @discardableResult
    public static func waitFor(
        _ what: String, seconds: Double = 10, _ condition: () async throws -> Bool
    ) async throws -> Duration {
        let start = ContinuousClock.now
        while !(try await condition()) {
            guard ContinuousClock.now - start < .milliseconds(Int(seconds * 1000)) else { throw TestFailure("timed out after \(seconds) s waiting for \(what)") }
            try await Task.sleep(for: .milliseconds(50))
        }
        return ContinuousClock.now - start
    }
}
