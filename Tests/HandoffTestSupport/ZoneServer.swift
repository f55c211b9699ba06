import Foundation

/// A real DNS server — BIND 9's `named` or Knot's `knotd`, from Debian — serving one zone that
/// one TSIG key may update as docs/discovery.md sets it up, run as the test user (it needs no privilege: a port above 1024, a
/// directory of its own). `wrap` turns a command into one that runs where the server should (the
/// test user's `setpriv` line here, or that inside a rig's host).
public final class ZoneServer: @unchecked Sendable {
    public enum Kind: String, Sendable {
        case bind
        case knot
    }

    public let kind: Kind
    /// The zone, fully qualified (`handoff.test.`).
    public let zone: String
    public let address: String
    public private(set) var port: Int
    public let keyName: String
    /// The key as `tsig-keygen` writes it, 0600 and the test user's.
    public let keyFile: String
    public let secret: String
    public let directory: String
    private let wrap: @Sendable ([String]) -> [String]
    /// More lines of the zone file (relative names).
    private let extra: String
    private var process: RunningProcess?

    public static var unavailableReason: String? {
        for program in ["/usr/sbin/named", "/usr/sbin/knotd", "/usr/sbin/tsig-keygen", "/usr/bin/dig"] where !FileManager.default.isExecutableFile(atPath: program) {
            return "\(program) is missing: run scripts/install-deps.sh test (bind9, bind9-utils, bind9-dnsutils, knot)"
        }
        return nil
    }

    /// Writes the configuration and the zone into a directory of the test user's (removed with
    /// this) and starts the server on a free port of `address`.
    public init(
        _ kind: Kind, zone: String = "handoff.test.", address: String = "127.0.0.1", port: Int? = nil, keyName: String = "handoff-test", extra: String = "",
        wrap: (@Sendable ([String]) -> [String])? = nil
    ) async throws {
        if let reason = Self.unavailableReason { throw TestFailure(reason) }
        let user = try TestUser.current
        let directory = try TempDirectory.make(prefix: "handoff-zone")
        self.kind = kind
        self.zone = zone
        self.address = address
        self.directory = directory
        self.keyName = keyName
        self.keyFile = directory + "/\(keyName).key"
        self.port = port ?? 0
        self.extra = extra
        self.wrap = wrap ?? { user.command($0, environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"]) }
        do {
            try user.makeDirectory(directory)
        } catch {
            TempDirectory.remove(directory)
            throw error
        }
        let key = try await Subprocess.run("/usr/sbin/tsig-keygen", ["-a", "hmac-sha256", keyName])
        guard key.status == 0, let secret = key.stdout.split(separator: "\"").dropFirst(3).first else { throw TestFailure("tsig-keygen: \(key)") }
        self.secret = String(secret)
        try write(keyFile, key.stdout, mode: 0o600)
        try await start()
    }

    /// Starts the server (again, after `stop`) on the port it had, or a free one the first time.
    /// `forgetting`: the zone starts from its file, without what updates added (a server whose
    /// journal was lost).
    public func start(forgetting: Bool = false) async throws {
        if forgetting {
            for file in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] where file.hasSuffix(".jnl") || file == "journal" || file == "timers" {
                try? FileManager.default.removeItem(atPath: directory + "/" + file)
            }
        }
        let bare = String(zone.dropLast())
        try write(directory + "/zone", """
            $TTL 60
            @ SOA ns.\(zone) hostmaster.\(zone) 1 60 60 600 60
            @ NS ns.\(zone)
            ns A \(address)
            \(extra)

            """, mode: 0o644)
        for attempt in 0..<20 {
            let port = self.port != 0 ? self.port : Int.random(in: 20000..<60000)
            let command: [String]
            switch kind {
            case .bind:
                try write(directory + "/named.conf", """
                    options {
                        directory "\(directory)"; pid-file "\(directory)/named.pid";
                        listen-on port \(port) { \(address); }; listen-on-v6 { none; };
                        recursion no; dnssec-validation no; allow-query { any; }; notify no;
                        max-records-per-type 0;
                    };
                    include "\(keyFile)";
                    zone "\(bare)" { type primary; file "\(directory)/zone"; update-policy { grant \(keyName) subdomain \(zone) PTR SRV TXT A AAAA; }; allow-transfer { key \(keyName); }; };

                    """, mode: 0o644)
                command = ["/usr/sbin/named", "-g", "-c", directory + "/named.conf"]
            case .knot:
                try write(directory + "/knot.conf", """
                    server:
                        rundir: "\(directory)"
                        listen: \(address)@\(port)
                    database:
                        storage: "\(directory)"
                    key:
                      - id: \(keyName)
                        algorithm: hmac-sha256
                        secret: \(secret)
                    acl:
                      - id: updates
                        key: \(keyName)
                        action: [update, transfer]
                        update-type: [PTR, SRV, TXT, A, AAAA]
                    zone:
                      - domain: \(bare)
                        storage: "\(directory)"
                        file: "zone"
                        zonefile-sync: -1
                        acl: updates

                    """, mode: 0o644)
                command = ["/usr/sbin/knotd", "-c", directory + "/knot.conf"]
            }
            let line = wrap(command)
            let process = try RunningProcess(line[0], Array(line.dropFirst()))
            for _ in 0..<100 where process.isRunning && !(process.stdout + process.stderr).contains("in use") {
                if let soa = try? await run(["/usr/bin/dig", "@\(address)", "-p", "\(port)", "+short", "+time=1", "+tries=1", zone, "SOA"]),
                    soa.stdout.contains("hostmaster")
                {
                    self.port = port
                    self.process = process
                    return
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            _ = try? await process.stop()
            let output = process.stdout + process.stderr
            // Another port helps only when this one was taken; anything else is said at once.
            guard output.contains("in use") else { throw TestFailure("\(kind.rawValue) did not start: \(output.suffix(3000))") }
            if self.port != 0, attempt > 3 { break }  // its port stays taken: no use
        }
        throw TestFailure("\(kind.rawValue) did not start serving \(zone) on \(address)")
    }

    /// What the server logged since it (last) started.
    public var log: String { (process?.stdout ?? "") + (process?.stderr ?? "") }

    /// Freezes the server (SIGSTOP): connections still open (the kernel completes them), but
    /// nothing is answered — a server that went silent — until `resume`.
    public func pause() {
        if let process { kill(process.pid, SIGSTOP) }
    }

    public func resume() {
        if let process { kill(process.pid, SIGCONT) }
    }

    /// Stops the server (SIGTERM; what it holds stays in its journal).
    public func stop() async throws {
        try await process?.stop()
        process = nil
    }

    /// The zone's records now (a transfer signed with the key), one presentation line each.
    public func records() async throws -> [String] {
        let result = try await run(["/usr/bin/dig", "@\(address)", "-p", "\(port)", "-y", "hmac-sha256:\(keyName):\(secret)", "+noall", "+answer", zone, "AXFR"])
        guard result.status == 0 else { throw TestFailure("dig AXFR: \(result)") }
        return result.stdout.split(separator: "\n").map(String.init).filter { !$0.hasPrefix(";") && !$0.isEmpty }
    }

    /// The zone's records of `type` (`PTR`), whole lines as dig prints them.
    public func records(_ type: String) async throws -> [String] {
        try await records().filter { line in
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            return fields.count > 3 && fields[3] == type
        }
    }

    /// `[wide_area]` for a device of this zone, browsing every `browseInterval` seconds; without
    /// `server` when `namingTheServer` is false (the device finds it from the zone).
    public func configuration(browseInterval: Int = 60, ttl: Int = 120, namingTheServer: Bool = true) -> String {
        let server = namingTheServer ? "server = \"\(address):\(port)\"\n" : ""
        return "[wide_area]\ndomain = \"\(zone)\"\n\(server)key_file = \"\(keyFile)\"\nbrowse_interval = \(browseInterval)\nttl = \(ttl)\n"
    }

    /// Runs `command` where the server runs (`wrap`).
    private func run(_ command: [String]) async throws -> ProcessResult {
        let line = wrap(command)
        return try await Subprocess.run(line[0], Array(line.dropFirst()))
    }

    private func write(_ path: String, _ text: String, mode: mode_t) throws {
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, mode)
        try TestUser.current.own(path)
    }

    deinit {
        if let process, process.isRunning { kill(process.pid, SIGKILL) }  // also a paused one
        TempDirectory.remove(directory)
    }
}
