import Foundation
import HandoffAPI
import HandoffDaemon
import HandoffModel
import HandoffTestSupport
import Testing

/// The built executables as a user meets them.
@Suite(.timeLimit(.minutes(3))) struct BinaryTests {
    /// The CLI must start fast and must not pull in the daemon's C libraries.
    @Test func handoffctlLinksNeitherOpenSSLNorDNSSD() async throws {
        let ldd = try await Subprocess.run("/usr/bin/ldd", [CLI.handoffctl])
        #expect(ldd.status == 0, "\(ldd)")
        for library in ["libssl", "libcrypto", "libdns_sd", "libavahi", "libldns", "libFoundation.so", "NIO"] {
            #expect(!ldd.stdout.contains(library), "handoffctl links \(library):\n\(ldd.stdout)")
        }
    }

    /// handoffd uses FoundationEssentials only: full Foundation would bring its
    /// internationalisation and ICU's tables into every daemon's memory (docs/benchmarks.md,
    /// "Idle"). The tests' debug builds link Foundation dynamically, so ldd names what is there.
    @Test func handoffdLinksNoFullFoundation() async throws {
        let ldd = try await Subprocess.run("/usr/bin/ldd", [Subprocess.product("handoffd")])
        #expect(ldd.status == 0 && ldd.stdout.contains("libFoundationEssentials"), "\(ldd)")
        for library in ["libFoundation.so", "libFoundationInternationalization", "lib_FoundationICU"] {
            #expect(!ldd.stdout.contains(library), "handoffd links \(library):\n\(ldd.stdout)")
        }
    }

    /// An app built on HandoffKit (the examples) carries none of the daemon's machinery: no
    /// OpenSSL or dns_sd library, and no NIO code linked in (NIO links statically, so its
    /// symbols are what would show).
    @Test(arguments: ["handoff-example-notes", "handoff-example-viewer"])
    func appsOnHandoffKitLinkNeitherOpenSSLNorDNSSDNorNIO(example: String) async throws {
        let binary = Subprocess.product(example)
        let ldd = try await Subprocess.run("/usr/bin/ldd", [binary])
        #expect(ldd.status == 0, "\(ldd)")
        for library in ["libssl", "libcrypto", "libdns_sd", "libavahi", "libldns"] {
            #expect(!ldd.stdout.contains(library), "\(example) links \(library):\n\(ldd.stdout)")
        }
        let symbols = try await Subprocess.run("/usr/bin/nm", [binary])
        #expect(symbols.status == 0 && symbols.stdout.contains("HandoffKit"), "\(symbols.stderr)")
        #expect(!symbols.stdout.contains("NIOCore"), "\(example) has NIO linked in")
    }

    /// handoffd's reads, SwiftNIO's among them, go through the read guard (docs/platform.md, "A
    /// path that goes dark"). The guard calls `__real_read`, which only a link with `--wrap=read`
    /// resolves — and that link sends every other reference to read(2) to the guard. Nothing else
    /// is linked that way.
    @Test func handoffdReadsThroughTheReadGuardAndNothingElseDoes() async throws {
        let symbols = try await Subprocess.run("/usr/bin/nm", [Subprocess.product("handoffd")])
        #expect(symbols.status == 0, "\(symbols.stderr)")
        let lines = symbols.stdout.split(separator: "\n")
        #expect(lines.contains { $0.hasSuffix(" T __wrap_read") }, "no read guard in handoffd")
        #expect(!lines.contains { $0.hasSuffix("__real_read") }, "handoffd was linked without --wrap=read")
        for other in ["handoffctl", "handoff-desktop", "handoff-example-notes"] {
            let symbols = try await Subprocess.run("/usr/bin/nm", [Subprocess.product(other)])
            #expect(symbols.status == 0 && !symbols.stdout.contains("__wrap_read"), "\(other) has the read guard")
        }
    }

    @Test(arguments: [SIGTERM, SIGINT])
    func handoffdStopsGracefullyAndKeepsTheActivity(signal: Int32) async throws {
        let home = try DaemonHome()
        defer { home.remove() }
        let socket = home.socketPath
        let first = try await home.start()
        let become = try await home.ctl(["become-current", "--type", "com.example.editor.edit", "--title", "Survivor"])
        #expect(become.status == 0, "\(become)")
        #expect(try await first.stop(signal: signal) == 0, "graceful exit status: \(first.stderr)")
        #expect(!FileManager.default.fileExists(atPath: socket), "the socket is removed")
        #expect(first.stderr.contains("handoffd stopped"))

        let second = try await home.start()
        let current = try await home.ctl(["current", "--json"])
        let activity = try LocalAPIJSON.decoder().decode(Activity.self, from: Data(current.stdout.utf8))
        #expect(activity.id.lowercasedString == become.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(activity.title == "Survivor")
        let status = try LocalAPIJSON.decoder().decode(DaemonStatus.self, from: Data(try await home.ctl(["status", "--json"]).stdout.utf8))
        #expect(status.uid == home.user.uid && (status.uid != 0 || geteuid() != 0), "handoffd runs as the test user, not root: uid \(status.uid)")
        #expect(try await second.stop() == 0)
    }

    /// What stops handoffd is said in words, with the fix: never NIO's text or an errno.
    @Test func startupFailuresSayWhatToDo() async throws {
        let first = try DaemonHome()
        let second = try DaemonHome()
        defer { first.remove(); second.remove() }
        let running = try await first.start()
        let port = try LocalAPIJSON.decoder().decode(DaemonStatus.self, from: Data(try await first.ctl(["status", "--json"]).stdout.utf8)).peerPort
        let taken = try await second.runDaemon(["--port", "\(port)", "--listen", "127.0.0.1"])
        #expect(taken.status == 1, "\(taken)")
        let config = second.directory + "/.config/handoff/handoffd.toml"
        #expect(
            taken.stderr.contains("handoffd: error: port \(port) is already in use by another program (or another handoffd); choose another with --port, or `port =` in \(config)"),
            "\(taken.stderr)"
        )
        let again = try await second.runDaemon(["--socket", first.socketPath, "--port", "0"])
        #expect(again.status == 3 && again.stderr.contains("another handoffd is already running on \(first.socketPath)"), "\(again)")
        let long = try await second.runDaemon(["--socket", second.directory + "/" + String(repeating: "x", count: 120) + "/h.sock", "--port", "0"])
        #expect(long.status == 1 && long.stderr.contains("is too long for a Unix socket; give a shorter --socket"), "\(long)")
        let nowhere = try await second.runDaemon(["--port", "0", "--listen", "192.0.2.77"])
        #expect(nowhere.status == 1 && nowhere.stderr.contains("192.0.2.77 is not an address of this computer"), "\(nowhere)")
        // Given no flags, as systemd starts it (`DaemonOptions`, without ArgumentParser): the same
        // words and status, from its configuration file.
        try second.user.makeDirectory(second.directory + "/.config")
        try second.user.makeDirectory(second.directory + "/.config/handoff")
        try second.write(Data("port = \(port)\nlisten = [\"127.0.0.1\"]\n".utf8), to: ".config/handoff/handoffd.toml")
        let bare = try await second.runDaemon([])
        #expect(bare.status == 1 && bare.stderr.contains("handoffd: error: port \(port) is already in use"), "\(bare)")
        for r in [taken, again, long, nowhere, bare] {
            // (Its log lines before may carry the full text; the last word is for people.)
            let last = r.stderr.split(separator: "\n").filter { $0.hasPrefix("handoffd: error:") }
            #expect(last.count == 1 && !last[0].contains("errno") && !last[0].contains("descriptor:") && !last[0].contains("Error("), "\(r.stderr)")
        }
        #expect(try await running.stop() == 0)
    }

    /// handoffd's sockets share one NIO event loop (`HandoffDaemon.tuneProcessForStreams`), so a
    /// stream splice never crosses threads. The setting is silently ignored if anything touches
    /// NIO's singleton group first: count the loop threads the running daemon really has. (Threads
    /// started from the loop — Avahi's client library makes its own — inherit its name, so it is
    /// the distinct names that count.)
    @Test func handoffdRunsOneEventLoop() async throws {
        let home = try DaemonHome()
        defer { home.remove() }
        let daemon = try await home.start()
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.pid)/task")
        let names = tasks.compactMap { try? String(contentsOfFile: "/proc/\(daemon.pid)/task/\($0)/comm", encoding: .utf8) }
        let loops = names.filter { $0.hasPrefix("NIO-SGLTN-") }
        #expect(Set(loops).count == 1, "event-loop threads: \(loops) of \(names)")
        // Saves (fsync) block a thread of their own, not the loop (DiskThread).
        #expect(names.contains { $0.hasPrefix("handoff-disk") }, "\(names)")
        #expect(try await daemon.stop() == 0)
    }

    /// `make run`: the first start creates an account, later ones keep it; or it joins with a code.
    @Test func firstUseCreatesOrJoinsAnAccountOnce() async throws {
        let first = try DaemonHome()
        defer { first.remove() }
        let a = try await first.start(["--create-account"])
        let ctl = { (home: DaemonHome, args: [String]) in try await home.ctl(args) }
        try await a.wait(for: "the account") { _ in FileManager.default.fileExists(atPath: first.stateDirectory + "/account") }
        let created = try LocalAPIJSON.decoder().decode(AccountInfo.self, from: Data(try await ctl(first, ["account", "show", "--json"]).stdout.utf8))
        #expect(try await a.stop() == 0)
        let again = try await first.start(["--create-account"])
        let kept = try LocalAPIJSON.decoder().decode(AccountInfo.self, from: Data(try await ctl(first, ["account", "show", "--json"]).stdout.utf8))
        #expect(kept.accountID == created.accountID, "not created twice")

        let status = try LocalAPIJSON.decoder().decode(DaemonStatus.self, from: Data(try await ctl(first, ["status", "--json"]).stdout.utf8))
        let invite = try first.ctlProcess(["account", "invite"])
        try await invite.wait(for: "the code") { !$0.stdout.isEmpty }
        let code = String(invite.stdout.split(separator: "\n").first ?? "")
        let second = try DaemonHome()
        defer { second.remove() }
        let b = try await second.start(["--join", code, "--join-peer", "127.0.0.1:\(status.peerPort)"])
        try await b.wait(for: "the join") { _ in FileManager.default.fileExists(atPath: second.stateDirectory + "/account") }
        let joined = try LocalAPIJSON.decoder().decode(AccountInfo.self, from: Data(try await ctl(second, ["account", "show", "--json"]).stdout.utf8))
        #expect(joined.accountID == created.accountID)
        #expect(await invite.exitStatus() == 0)
        _ = try await b.stop()
        _ = try await again.stop()
    }
}

/// SIGHUP reloads handoffd.toml: what can change does, the rest is named; a bad file changes nothing.
@Suite(.timeLimit(.minutes(2))) struct ReloadTests {
    @Test func sighupReloadsWhatItCanAndNamesWhatNeedsARestart() async throws {
        let home = try DaemonHome()
        defer { home.remove() }
        let config = try home.write(Data("browser = \"/bin/true\"\n".utf8), to: "handoffd.toml")
        let daemon = try await home.start(["--config", config])

        try "browser = \"/bin/echo\"\nmax_activity_bytes = 4096\nlog_level = \"debug\"\n".write(toFile: config, atomically: true, encoding: .utf8)
        kill(daemon.pid, SIGHUP)
        try await daemon.wait(for: "the reload") { $0.stderr.contains("configuration reloaded") }
        try await daemon.wait(for: "the restart notice") { $0.stderr.contains("take effect only after a restart") }
        #expect(daemon.stderr.contains("settings=max_activity_bytes"), "\(daemon.stderr)")

        try "browser = \"/bin/echo\nport = 1\n".write(toFile: config, atomically: true, encoding: .utf8)
        kill(daemon.pid, SIGHUP)
        try await daemon.wait(for: "the refusal") { $0.stderr.contains("configuration not reloaded") }
        #expect(daemon.stderr.contains("handoffd.toml:1"), "the file and line: \(daemon.stderr)")
        #expect(try await home.ctl(["status"]).status == 0, "still serving")
        #expect(try await daemon.stop() == 0)
    }

    @Test func underSystemdLinesCarryTheirSyslogPriority() {
        let line = DaemonLogHandler.line(format: .journal, level: .warning, label: "handoffd", message: "something", metadata: ["b": "2", "a": "1"])
        #expect(line == "<4>something a=1 b=2")
        let plain = DaemonLogHandler.line(format: .plain, level: .info, label: "handoffd", message: "hi", metadata: [:], now: Timestamp(microsecondsSinceEpoch: 0))
        #expect(plain == "1970-01-01T00:00:00Z info handoffd: hi")
        var st = stat()
        fstat(2, &st)
        #expect(DaemonLogHandler.detectFormat(journalStream: "\(st.st_dev):\(st.st_ino)") == .journal)
        #expect(DaemonLogHandler.detectFormat(journalStream: "1:2") == .plain)
        #expect(DaemonLogHandler.detectFormat(journalStream: nil) == .plain)
    }
}
