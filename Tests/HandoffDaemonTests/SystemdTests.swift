import Foundation
import HandoffAPI
import HandoffDaemon
import HandoffDiscovery
import HandoffModel
import HandoffTestSupport
import Testing

/// handoffd as a systemd service: the notification protocol against a fake notify socket, and the
/// shipped unit files checked by systemd's own tools.
@Suite(.timeLimit(.minutes(2))) struct SystemdTests {
    /// A datagram socket standing in for systemd's `$NOTIFY_SOCKET`.
    final class FakeNotifySocket: @unchecked Sendable {
        let path: String
        private let fd: Int32
        /// Where a path socket lives (none for an abstract one).
        private let directory: String?

        init(abstract: Bool = false) throws {
            directory = abstract ? nil : try TempDirectory.make()
            path = directory.map { $0 + "/notify" } ?? "@handoff-test-notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            var bytes = Array(path.utf8)
            if abstract { bytes[0] = 0 }
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
            let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstract ? 0 : 1))
            let rc = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
            guard rc == 0 else { throw TestFailure("cannot bind \(path): \(errno)") }
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }

        deinit {
            close(fd)
            if let directory { TempDirectory.remove(directory) }
        }

        /// The next datagram (blocking, at most 10 s), on a dispatch queue.
        func next() async throws -> String {
            let fd = self.fd
            return try await withCheckedThrowingContinuation { c in
                DispatchQueue(label: "fake-notify").async {
                    var buffer = [UInt8](repeating: 0, count: 4096)
                    let n = recv(fd, &buffer, buffer.count, 0)
                    if n < 0 { c.resume(throwing: TestFailure("no notification within 10 s")) } else { c.resume(returning: String(decoding: buffer[0..<n], as: UTF8.self)) }
                }
            }
        }

        /// Datagrams until one contains `field`.
        func waitFor(_ field: String) async throws -> String {
            while true {
                let message = try await next()
                if message.split(separator: "\n").contains(where: { $0.hasPrefix(field) }) { return message }
            }
        }
    }

    @Test(arguments: [false, true])
    func readyWatchdogStatusAndStopping(abstract: Bool) async throws {
        let socket = try FakeNotifySocket(abstract: abstract)
        let daemon = try await TestDaemon.start { $0.notifier = SystemdNotifier(socketPath: socket.path, watchdogInterval: .milliseconds(400)) }
        let ready = try await socket.waitFor("READY=1")
        #expect(ready.contains("STATUS=port \(daemon.daemon.peerPort); "), "\(ready)")
        _ = try await socket.waitFor("WATCHDOG=1")
        _ = try await socket.waitFor("WATCHDOG=1")
        _ = try await daemon.client.send(.becomeCurrent(.init(content: .init(type: "com.example.systemd", title: "status"))))
        let status = try await socket.waitFor("STATUS=")
        #expect(status.contains("an activity is current"), "\(status)")
        try await daemon.stop()
        _ = try await socket.waitFor("STOPPING=1")
        TempDirectory.remove(daemon.directory)
    }

    /// A discovery backend whose state the test sets: avahi-daemon going away and coming back.
    final class SwitchedDiscovery: DiscoveryBackend {
        let events: AsyncStream<DiscoveryEvent>
        let continuation: AsyncStream<DiscoveryEvent>.Continuation
        init() { (events, continuation) = AsyncStream.makeStream() }
        func start(browseDomains: [String]) async -> AsyncStream<DiscoveryEvent> {
            continuation.yield(.state(.running))
            return events
        }
        func setInterest(_ interest: @escaping @Sendable (ServiceInstance, TXTRecord) -> Bool) async {}
        func publish(instanceName: String, port: Int, txt: TXTRecord) async {}
        func withdraw() async {}
        func stop() async { continuation.finish() }
        func lookFor(instanceName: String) async {}
    }

    /// STATUS follows what no local event reports (avahi-daemon lost and found again) without
    /// waiting for a watchdog ping: this daemon has no watchdog at all.
    @Test func statusFollowsDiscoveryWithoutAWatchdog() async throws {
        let socket = try FakeNotifySocket()
        let discovery = SwitchedDiscovery()
        let daemon = try await TestDaemon.start {
            $0.notifier = SystemdNotifier(socketPath: socket.path, watchdogInterval: nil)
            $0.discovery = discovery
        }
        let ready = try await socket.waitFor("READY=1")
        #expect(ready.contains("discovery running"), "\(ready)")
        discovery.continuation.yield(.state(.unavailable(reason: "avahi-daemon is not running", retryAt: .now())))
        #expect(try await socket.waitFor("STATUS=").contains("avahi-daemon unreachable (retrying)"))
        discovery.continuation.yield(.state(.running))
        #expect(try await socket.waitFor("STATUS=").contains("discovery running"))
        try await daemon.finish()
    }

    @Test func theEnvironmentNamesTheSocketAndTheWatchdogForThisProcessOnly() {
        let mine = SystemdNotifier(environment: ["NOTIFY_SOCKET": "/run/systemd/notify", "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "42"], pid: 42)
        #expect(mine.socketPath == "/run/systemd/notify" && mine.watchdogInterval == .seconds(30))
        let another = SystemdNotifier(environment: ["NOTIFY_SOCKET": "/run/systemd/notify", "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "43"], pid: 42)
        #expect(another.watchdogInterval == nil)
        #expect(!SystemdNotifier(environment: [:]).isActive)
        #expect(!SystemdNotifier(socketPath: nil).notify([("READY", "1")]))
    }

    // MARK: Unit files

    static let unitDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../systemd").standardizedFileURL.path

    /// The shipped unit with the installed paths filled in, as `make install` writes it.
    static func installedUnit(_ name: String, as installed: String, in dir: String) throws -> String {
        let text = try String(contentsOfFile: unitDirectory + "/" + name, encoding: .utf8)
        let path = dir + "/" + installed
        let binaries = (Subprocess.product("handoffd") as NSString).deletingLastPathComponent
        try text.replacing("@BINDIR@", with: binaries).write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func unitFilesAreWellFormedAndSayWhatTheIssueAsks() throws {
        for name in ["handoffd.service", "handoffd@.service"] {
            let text = try String(contentsOfFile: Self.unitDirectory + "/" + name, encoding: .utf8)
            var section = ""
            var keys: [String: [String]] = [:]
            for raw in text.split(separator: "\n") {
                let line = raw.trimmingCharacters(in: .whitespaces)
                if line.isEmpty || line.hasPrefix("#") { continue }
                if line.hasPrefix("[") {
                    section = line
                    #expect(["[Unit]", "[Service]", "[Install]"].contains(line), "\(name): section \(line)")
                    continue
                }
                let parts = line.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                #expect(parts.count == 2 && !section.isEmpty, "\(name): \(line)")
                keys[section + parts[0], default: []].append(String(parts.dropFirst().first ?? ""))
            }
            #expect(keys["[Service]Type"] == ["notify"], "\(name)")
            #expect(keys["[Service]Restart"] == ["on-failure"], "\(name)")
            #expect(keys["[Service]WatchdogSec"] != nil, "\(name)")
            #expect(keys["[Service]ExecStart"]?.first?.hasPrefix("@BINDIR@/handoffd") == true, "\(name)")
            #expect(keys["[Install]WantedBy"] != nil, "\(name)")
        }
    }

    /// The desktop agent's user unit starts and stops with the graphical session and is ready
    /// once its bus name is taken (`DesktopAgent.run`); systemd accepts it.
    @Test func theDesktopAgentsUnitFollowsTheGraphicalSession() async throws {
        let text = try String(contentsOfFile: Self.unitDirectory + "/handoff-desktop.service", encoding: .utf8)
        for line in [
            "PartOf=graphical-session.target", "After=graphical-session.target handoffd.service", "Type=dbus", "BusName=org.handoff.Desktop",
            "ExecStart=@BINDIR@/handoff-desktop", "WantedBy=graphical-session.target",
        ] {
            #expect(text.split(separator: "\n").contains { $0 == line }, "handoff-desktop.service lacks \(line)")
        }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") else {
            Issue.record("systemd-analyze is missing (apt-get install systemd): the unit cannot be verified")
            return
        }
        let dir = try TempDirectory.make()
        defer { TempDirectory.remove(dir) }
        let unit = try Self.installedUnit("handoff-desktop.service", as: "handoff-desktop.service", in: dir)
        let verify = try await Subprocess.run("/usr/bin/systemd-analyze", ["verify", "--man=no", unit])
        #expect(verify.status == 0 && verify.stderr.isEmpty, "\(verify)")
    }

    @Test func systemdAcceptsTheUnitsAndRatesTheTemplateExposureAtMost2() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") else {
            Issue.record("systemd-analyze is missing (apt-get install systemd): the unit files cannot be verified")
            return
        }
        let dir = try TempDirectory.make()
        defer { TempDirectory.remove(dir) }
        let user = try Self.installedUnit("handoffd.service", as: "handoffd.service", in: dir)
        let template = try Self.installedUnit("handoffd@.service", as: "handoffd@root.service", in: dir)
        for unit in [user, template] {
            let verify = try await Subprocess.run("/usr/bin/systemd-analyze", ["verify", "--man=no", unit])
            #expect(verify.status == 0 && verify.stderr.isEmpty, "\(unit): \(verify)")
        }
        let security = try await Subprocess.run("/usr/bin/systemd-analyze", ["security", "--offline=yes", "--no-pager", template])
        let line = try #require(security.stdout.split(separator: "\n").first { $0.contains("Overall exposure level") }, "\(security)")
        let score = try #require(Double(line.split(separator: ":").last?.split(separator: " ").first ?? ""), "\(line)")
        #expect(score <= 2.0, "\(line)")
    }
}

/// What the template unit's sandbox forbids, checked against what handoffd really does: its
/// system calls (SystemCallFilter), the socket families it opens (RestrictAddressFamilies) and
/// its memory mappings (MemoryDenyWriteExecute), traced with strace through account creation, a
/// join, an activity, a 4 MiB continuation stream, a reload and a shutdown. (This machine has no
/// systemd to run the unit itself.)
@Suite(.timeLimit(.minutes(3))) struct SandboxTests {
    @Test func handoffdStaysInsideTheTemplateUnitsSandbox() async throws {
        for tool in ["/usr/bin/strace", "/usr/bin/systemd-analyze"] where !FileManager.default.isExecutableFile(atPath: tool) {
            Issue.record("\(tool) is missing (scripts/install-deps.sh test installs it): the sandbox cannot be checked")
            return
        }
        let a = try DaemonHome()
        let b = try DaemonHome()
        defer { a.remove(); b.remove() }
        let trace = a.directory + "/trace"
        // strace runs as the test user too: the daemon is traced as it is deployed, unprivileged.
        let traced = try await a.start(wrapper: ["/usr/bin/strace", "-f", "-qq", "-o", trace])
        let daemonB = try await b.start()
        func ctl(_ home: DaemonHome, _ arguments: [String]) async throws -> ProcessResult {
            let r = try await home.ctl(arguments)
            if r.status != 0 { throw TestFailure("handoffctl \(arguments): \(r)") }
            return r
        }
        _ = try await ctl(a, ["account", "create", "--device-name", "desk"])
        let statusA = try LocalAPIJSON.decoder().decode(DaemonStatus.self, from: Data(try await ctl(a, ["status", "--json"]).stdout.utf8))
        let (port, daemonPID) = (statusA.peerPort, statusA.pid)
        let invite = try a.ctlProcess(["account", "invite"])
        try await invite.wait(for: "the code") { !$0.stdout.isEmpty }
        let code = String(invite.stdout.split(separator: "\n").first ?? "")
        _ = try await ctl(b, ["account", "join", code, "--peer", "127.0.0.1:\(port)", "--device-name", "laptop"])
        let file = try a.write(Data((0..<(4 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) }), to: "payload")
        let server = try a.ctlProcess(["become-current", "--type", "org.example.sandbox", "--title", "s", "--stream-file", file])
        try await server.wait(for: "the server to attach") { $0.stderr.contains("attached") }
        _ = try await ctl(b, ["continue", "127.0.0.1:\(port)", "--stream-to", b.directory + "/copy"])
        #expect(FileManager.default.contents(atPath: b.directory + "/copy") == FileManager.default.contents(atPath: file))
        _ = try await server.stop()
        // Signals go to handoffd itself (strace would detach on SIGTERM); strace ends with it.
        kill(daemonPID, SIGHUP)
        try await traced.wait(for: "the reload") { $0.stderr.contains("configuration reloaded") }
        _ = try await ctl(a, ["status"])
        kill(daemonPID, SIGTERM)
        #expect(await traced.exitStatus() == 0, "\(traced.stderr)")
        _ = try await daemonB.stop()

        let lines = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n")
        var used: Set<String> = []
        var families: Set<String> = []
        var writableExecutable: [String] = []
        for line in lines {
            // "PID  name(arguments) = result": strace pads the pid with spaces.
            let call = line.drop { $0.isNumber }.drop { $0 == " " }
            guard call.count < line.count, let open = call.firstIndex(of: "(") else { continue }
            let name = String(call[..<open])
            guard name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }), !name.isEmpty else { continue }
            used.insert(name)
            if name == "socket", let family = call.dropFirst(name.count + 1).split(separator: ",").first { families.insert(String(family)) }
            if name == "mmap" || name == "mprotect", call.contains("PROT_WRITE"), call.contains("PROT_EXEC") { writableExecutable.append(String(line)) }
        }
        #expect(used.count > 30 && (used.contains("sendmsg") || used.contains("sendto")), "the trace holds the daemon's work: \(used.sorted())")
        let allowed = try await Self.allowedSystemCalls(unit: SystemdTests.unitDirectory + "/handoffd@.service")
        let forbidden = used.subtracting(allowed)
        #expect(forbidden.isEmpty, "SystemCallFilter would refuse \(forbidden.sorted())")
        #expect(families.isSubset(of: ["AF_UNIX", "AF_INET", "AF_INET6", "AF_NETLINK"]), "RestrictAddressFamilies would refuse \(families.sorted())")
        #expect(writableExecutable.isEmpty, "MemoryDenyWriteExecute would refuse \(writableExecutable)")
    }

    /// What the unit's `SystemCallFilter=` lines allow: the first is the allow list, `~` lines
    /// take away, later plain lines add (systemd.exec(5)).
    static func allowedSystemCalls(unit: String) async throws -> Set<String> {
        var allowed: Set<String> = []
        let filters = try String(contentsOfFile: unit, encoding: .utf8).split(separator: "\n").filter { $0.hasPrefix("SystemCallFilter=") }
        for line in filters {
            var value = String(line.dropFirst("SystemCallFilter=".count))
            let removing = value.hasPrefix("~")
            if removing { value.removeFirst() }
            var names: Set<String> = []
            for item in value.split(separator: " ") {
                if item.hasPrefix("@") { names.formUnion(try await expand(String(item))) } else { names.insert(String(item)) }
            }
            if removing { allowed.subtract(names) } else { allowed.formUnion(names) }
        }
        #expect(!filters.isEmpty, "the template has a SystemCallFilter")
        return allowed
    }

    /// The system calls of a systemd syscall set, nested sets included.
    static func expand(_ set: String) async throws -> Set<String> {
        let r = try await Subprocess.run("/usr/bin/systemd-analyze", ["syscall-filter", "--no-pager", set])
        var out: Set<String> = []
        for raw in r.stdout.split(separator: "\n").dropFirst() {
            let item = raw.trimmingCharacters(in: .whitespaces)
            if item.isEmpty || item.hasPrefix("#") { continue }
            if item.hasPrefix("@") { out.formUnion(try await expand(item)) } else { out.insert(item) }
        }
        return out
    }
}
