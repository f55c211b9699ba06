import Foundation
import HandoffAPI
import Testing

/// Simulated hosts (scripts/rig.sh): each a network namespace on a private bridge with its own
/// D-Bus and avahi-daemon. Tests run real handoffd and handoffctl binaries inside them — as the
/// test user (`TestUser`), each host with its own home, `$XDG_RUNTIME_DIR` (0700) and the
/// environment the user unit gives: root only builds the namespaces (and, where a test says so,
/// changes a host's network or captures its traffic).
public final class Rig: @unchecked Sendable {
    public static let script = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().appendingPathComponent("../../scripts/rig.sh").standardizedFileURL.path

    public let name: String
    public let hosts: [String]
    public let family: Family
    /// The rig's files; the test user's. Each host's home is `directory/HOST`.
    public let directory: String
    public let user: TestUser
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

    /// What the link carries (rig.sh's RIG_IP).
    public enum Family: String, Sendable {
        /// IPv4 link-local addresses, and no IPv6 on the link; Avahi on IPv4.
        case ipv4 = "4"
        /// IPv6 alone, link-local addresses only.
        case ipv6 = "6"
        /// Both, and Avahi answers on both.
        case dual = "46"
    }

    /// `secondSubnet`: hosts on a second link, routed to the first (rig.sh's `HOST@2`): then every
    /// host has a 10.77.N.x address, and no multicast crosses between the links.
    public static func up(_ hosts: [String], family: Family = .ipv4, secondSubnet: Set<String> = []) async throws -> Rig {
        HeavyTrait.mustHoldASlot("simulated hosts")
        // Rigs of earlier runs that crashed (their test process is gone) are taken down first.
        _ = try? await Subprocess.run(script, ["sweep", "-"])
        let name = "e" + String((0..<7).map { _ in "abcdefghijklmnopqrstuvwxyz0123456789".randomElement()! })
        let user = try TestUser.current
        let directory = try TempDirectory.make(prefix: "handoff-e2e")
        try user.makeDirectory(directory, mode: 0o755)
        for host in hosts {
            try user.makeDirectory(directory + "/" + host)
            try user.makeDirectory(directory + "/" + host + "/run")
        }
        let rig = Rig(name: name, hosts: hosts, family: family, directory: directory, user: user)
        var env = ProcessInfo.processInfo.environment
        env["HANDOFF_RIG_OWNER"] = String(getpid())
        env["RIG_IP"] = family.rawValue
        let result = try await Subprocess.run(script, ["up", name] + hosts.map { secondSubnet.contains($0) ? $0 + "@2" : $0 }, environment: env)
        guard result.status == 0 else {
            _ = try? await Subprocess.run(script, ["down", name])
            throw TestFailure("rig up failed: \(result)")
        }
        return rig
    }

    private init(name: String, hosts: [String], family: Family, directory: String, user: TestUser) {
        self.name = name
        self.hosts = hosts
        self.family = family
        self.directory = directory
        self.user = user
    }

    /// `host`'s home (the test user's).
    public func home(_ host: String) -> String { directory + "/" + host }

    /// `host`'s IPv6 link-local address with its interface (`fe80::…%eth0`).
    public func linkLocal(_ host: String) async throws -> String {
        try await Subprocess.run(Rig.script, ["addr6", name, host]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    public func address(_ host: String) async throws -> String {
        try await Subprocess.run(Rig.script, ["addr", name, host]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The environment of the user on `host`: what the user unit gives handoffd, and a login
    /// shell handoffctl (`TestUser.environment`).
    public func environment(_ host: String) -> [String: String] {
        user.environment(home: home(host), runtimeDirectory: home(host) + "/run")
    }

    /// Runs a command inside `host` as the test user.
    public func run(_ host: String, _ command: [String]) async throws -> ProcessResult {
        try await Subprocess.run(Rig.script, ["exec", name, host] + user.command(command, environment: environment(host)))
    }

    /// `command` as a command line that runs inside `host` as the test user (for a program the
    /// test starts itself, e.g. `ZoneServer`'s).
    public func asUser(_ host: String, _ command: [String]) -> [String] {
        [Rig.script, "exec", name, host] + user.command(command, environment: environment(host))
    }

    /// Runs a command inside `host` as root: only for what a user cannot do on their own
    /// computer either (changing its addresses, its firewall).
    public func root(_ host: String, _ command: [String]) async throws -> ProcessResult {
        try await Subprocess.run(Rig.script, ["exec", name, host] + command)
    }

    /// rig.sh's arguments to run `handoffctl ARGUMENTS` inside `host` as the test user (for a
    /// `RunningProcess`).
    public func execArguments(_ host: String, _ arguments: [String]) throws -> [String] {
        ["exec", name, host] + user.command([try user.product("handoffctl")] + arguments, environment: environment(host))
    }

    public func ctl(_ host: String, _ arguments: [String]) async throws -> ProcessResult {
        try await run(host, [try user.product("handoffctl")] + arguments)
    }

    /// Starts `handoffctl ARGUMENTS` inside `host` and leaves it running.
    public func ctlProcess(_ host: String, _ arguments: [String]) throws -> RunningProcess {
        try RunningProcess(Rig.script, try execArguments(host, arguments))
    }

    /// Writes a file of the test user at `path` (under `directory`), making missing directories
    /// theirs too.
    public func write(to path: String, _ text: String, executable: Bool = false) throws {
        var missing: [String] = []
        var parent = (path as NSString).deletingLastPathComponent
        while !FileManager.default.fileExists(atPath: parent), parent.hasPrefix(directory) {
            missing.insert(parent, at: 0)
            parent = (parent as NSString).deletingLastPathComponent
        }
        for dir in missing { try user.makeDirectory(dir, mode: 0o755) }
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        try user.own(path)
        chmod(path, executable ? 0o755 : 0o644)
    }

    /// `handoffctl … --json` decoded.
    public func ctlJSON<T: Decodable>(_ host: String, _ type: T.Type, _ arguments: [String]) async throws -> T {
        let r = try await ctl(host, arguments + ["--json"])
        guard r.status == 0 else { throw TestFailure("handoffctl \(arguments) on \(host): \(r)") }
        do {
            return try LocalAPIJSON.decoder().decode(T.self, from: Data(r.stdout.utf8))
        } catch {
            throw TestFailure("handoffctl \(arguments) on \(host) printed what is not a \(T.self): \(error)\n\(r.stdout.prefix(2000))")
        }
    }

    /// Starts handoffd on `host` and waits until it answers.
    @discardableResult
    public func startDaemon(_ host: String, arguments: [String] = [], extraEnvironment: [String: String] = [:]) async throws -> RunningProcess {
        let process = try RunningProcess(
            Rig.script,
            ["exec", name, host]
                + user.command(
                    [try user.product("handoffd"), "--log-level", "debug"] + arguments, environment: environment(host).merging(extraEnvironment) { $1 }
                )
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

    /// Waits until `host` sees an advert carrying an invite's join tag (as avahi-browse shows it):
    /// under a loaded test machine the inviter's TXT update can take longer than the 3 s `account
    /// join` looks — never longer than a person takes to type the code.
    public func waitForInviteAdvert(seenFrom host: String, seconds: Double = 20) async throws {
        try await Rig.waitFor("an invite advertised, seen from \(host)", seconds: seconds) {
            try await self.run(host, ["avahi-browse", "-rpt", "_handoff._tcp"]).stdout.contains("\"j=")
        }
    }

    public func daemon(_ host: String) -> RunningProcess? {
        lock.withLock { daemons[host] }
    }

    public func avahi(_ host: String, _ action: String) async throws {
        let r = try await Subprocess.run(Rig.script, ["avahi", name, host, action])
        guard r.status == 0 else { throw TestFailure("avahi \(action) on \(host): \(r)") }
    }

    /// Captures everything on the bridge into `path` until `stop` is called on the returned
    /// process, and returns once tcpdump listens — so
    /// nothing sent after this returns is missed. The 64 MiB buffer keeps a loaded machine from
    /// dropping packets of a burst (a dropped packet would make a test count fewer bytes than
    /// crossed); a test that counts bytes checks tcpdump's closing "0 packets dropped" too.
    public func captureBridge(to path: String) async throws -> RunningProcess {
        let capture = try RunningProcess(
            "/usr/bin/nsenter", ["--net=/run/netns/\(name)-br", "/usr/bin/tcpdump", "-i", "br0", "-U", "-B", "65536", "-s", "0", "-w", path])
        try await capture.wait(for: "tcpdump to listen on the bridge") { $0.stderr.contains("listening on") || !$0.isRunning }
        guard capture.isRunning else { throw TestFailure("tcpdump did not start: \(capture.stderr)") }
        return capture
    }

    /// Stops every daemon and removes the hosts.
    public func down() async {
        let all = lock.withLock { Array(daemons.values) }
        for d in all { _ = try? await d.stop() }
        _ = try? await Subprocess.run(Rig.script, ["down", name])
        TempDirectory.remove(directory)
    }

    /// Polls `condition` every 50 ms until it holds, for up to `seconds` — a guard that says what
    /// hung, generous for a loaded machine, never a measure — and returns how long it took (for
    /// a log line; how fast things are is bench/'s business).
    @discardableResult
    public static func waitFor(
        _ what: String, seconds: Double = 30, _ condition: () async throws -> Bool
    ) async throws -> Duration {
        let start = ContinuousClock.now
        let deadline = start + .milliseconds(Int(seconds * 1000))
        while !(try await condition()) {
            guard ContinuousClock.now < deadline else { throw TestFailure("timed out after \(seconds) s waiting for \(what)") }
            try await Task.sleep(for: .milliseconds(50))
        }
        return ContinuousClock.now - start
    }
}

extension Rig {
    /// Runs `body` on fresh simulated hosts and takes them down afterwards, whatever happened.
    /// A failure is recorded as the test's; a machine that cannot build hosts fails the test,
    /// loudly, rather than skipping it.
    public static func withHosts(
        _ hosts: [String], family: Family = .ipv4, secondSubnet: Set<String> = [], sourceLocation: SourceLocation = #_sourceLocation,
        _ body: (Rig) async throws -> Void
    ) async {
        if let reason = unavailableReason {
            Issue.record(Comment(rawValue: reason), sourceLocation: sourceLocation)
            return
        }
        let rig: Rig
        do {
            rig = try await up(hosts, family: family, secondSubnet: secondSubnet)
        } catch {
            Issue.record(error, sourceLocation: sourceLocation)
            return
        }
        do {
            try await body(rig)
        } catch {
            Issue.record(error, sourceLocation: sourceLocation)
        }
        await rig.down()
    }
}
