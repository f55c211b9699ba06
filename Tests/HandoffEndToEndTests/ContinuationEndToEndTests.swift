import Foundation
import HandoffAPI
import HandoffModel
import HandoffTestSupport
import Testing

/// Continuations reaching apps and continuation streams, with the real binaries on two simulated
/// hosts: alpha originates, bravo resumes.
@Suite(.heaviest, .timeLimit(.minutes(5))) struct ContinuationEndToEndTests {
    @Test func appsStreamsAndFaultsAcrossHosts() async throws {
        await Rig.withHosts(["alpha", "bravo"]) { rig in
            try await run(rig)
        }
    }

    func run(_ rig: Rig) async throws {
        let bravoHome = rig.home("bravo")
        // Bravo's apps: an editor installed the XDG way, and a browser command in the config.
        try rig.write(to: bravoHome + "/.local/share/applications/org.example.Editor.desktop", """
            [Desktop Entry]
            Type=Application
            Name=Example Editor
            Exec=\(bravoHome)/editor.sh %f
            X-Handoff-ActivityTypes=org.example.Editor.edit;
            """)
        try rig.write(to: bravoHome + "/editor.sh", """
            #!/bin/sh
            cp "$1" \(bravoHome)/received.tmp && echo "$HANDOFF_CONTINUATION_ID" > \(bravoHome)/continuation-id && mv \(bravoHome)/received.tmp \(bravoHome)/received.json
            """, executable: true)
        try rig.write(to: bravoHome + "/browser.sh", "#!/bin/sh\nprintf '%s\\n' \"$@\" > \(bravoHome)/browser.tmp && mv \(bravoHome)/browser.tmp \(bravoHome)/browser-args\n", executable: true)
        try rig.write(to: bravoHome + "/.config/handoff/handoffd.toml", "browser = \"\(bravoHome)/browser.sh --new-window\"\n")

        let (alphaID, _) = try await EndToEndTests().startPaired(rig)
        try await Rig.waitFor("bravo to see alpha") { try await peers(rig).contains { $0.id == alphaID && $0.reachable } }
        let watch = try rig.ctlProcess("bravo", ["watch", "--json"])

        // 1. An installed app receives the activity, with the continuation id.
        let editing = try await becomeCurrent(rig, ["--type", "org.example.Editor.edit", "--title", "Report", "--info", "page:int=3"])
        let original = try await rig.ctl("alpha", ["current", "--json"]).stdout
        let continued = try await rig.ctl("bravo", ["continue", "desk"])
        #expect(continued.status == 0, "\(continued)")
        #expect(continued.stderr.contains("opened with org.example.Editor.desktop"), "\(continued.stderr)")
        try await Rig.waitFor("the editor to get the activity") { FileManager.default.fileExists(atPath: bravoHome + "/received.json") }
        let received = try LocalAPIJSON.decoder().decode(Activity.self, from: Data(contentsOf: URL(fileURLWithPath: bravoHome + "/received.json")))
        #expect(received == (try LocalAPIJSON.decoder().decode(Activity.self, from: Data(original.utf8))))
        #expect(received.id.lowercasedString == editing)

        // 2. No app for the type: the web page goes to the configured browser.
        _ = try await becomeCurrent(rig, ["--type", "org.example.Reader.read", "--title", "Page", "--webpage-url", "https://example.com/a?b=c"])
        #expect(try await rig.ctl("bravo", ["continue", "desk"]).status == 0)
        try await Rig.waitFor("the browser command") { FileManager.default.fileExists(atPath: bravoHome + "/browser-args") }
        #expect(try String(contentsOfFile: bravoHome + "/browser-args", encoding: .utf8) == "--new-window\nhttps://example.com/a?b=c\n")

        // 3. Neither: a clear failure with its own status.
        _ = try await becomeCurrent(rig, ["--type", "org.example.Nobody.edit", "--title", "Orphan"])
        let orphan = try await rig.ctl("bravo", ["continue", "desk"])
        #expect(orphan.status == 36 && orphan.stderr.contains("no application handles org.example.Nobody.edit"), "\(orphan)")

        // Exactly one lifecycle event after willContinue, per continuation.
        try await Rig.waitFor("three continuations on the event stream") { lifecycle(watch.stdout).count == 6 }
        let events = lifecycle(watch.stdout)
        #expect(events.map(\.0) == ["willContinue", "continued", "willContinue", "continued", "willContinue", "continueFailed"], "\(events)")
        #expect(Set(events.map(\.1)).count == 3, "one continuation id per continuation")
        _ = try await watch.stop()

        // 4. needsSave: the state the app gives at willSave is what bravo receives; wasContinued reaches it.
        let saver = try rig.ctlProcess(
            "alpha", [
                "become-current", "--type", "org.example.Editor.edit", "--title", "Draft", "--info", "text=old",
                "--save-exec", #"printf '{"text": {"string": "saved at willSave"}}'"#,
            ]
        )
        try await saver.wait(for: "become-current --save-exec to attach") { $0.stderr.contains("attached") }
        try await waitUntilBravoSees(rig, title: "Draft")
        let saved = try await rig.ctlJSON("bravo", Activity.self, ["continue", "desk"])
        #expect(saved.content.userInfo["text"] == .string("saved at willSave"))
        try await saver.wait(for: "wasContinued on alpha") { $0.stdout.contains("wasContinued") && $0.stdout.contains("laptop") }
        #expect(saver.stdout.contains("willSave"))
        _ = try await saver.stop()

        // 5. A 1 GiB stream arrives byte-identical, the daemons' memory flat; on a terminal (a
        //    pty from `script`, which copies what it shows to stdout) the receiver shows how far
        //    it is: bytes of the total, the rate, the time left.
        let big = rig.directory + "/big.bin"
        #expect(try await rig.run("alpha", ["/bin/sh", "-c", "head -c 1073741824 /dev/urandom > \(big)"]).status == 0)
        let server = try rig.ctlProcess(
            "alpha", ["become-current", "--type", "org.example.Big", "--title", "Big", "--stream-file", big]
        )
        try await server.wait(for: "the stream server to attach") { $0.stderr.contains("attached") }
        try await waitUntilBravoSees(rig, title: "Big")
        let daemons = [try await daemonPID(rig, "alpha"), try await daemonPID(rig, "bravo")]
        let before = daemons.map(ProcessUsage.anonymousKiB)
        let residentBefore = daemons.map(ProcessUsage.residentKiB)
        let sampler = RSSSampler(daemons, ProcessUsage.anonymousKiB)
        let residentSampler = RSSSampler(daemons, ProcessUsage.residentKiB)
        let copy = rig.directory + "/copy.bin"
        let ctl = try rig.user.product("handoffctl")
        let receiving = try await rig.run("bravo", ["/usr/bin/script", "-qfec", "\(ctl) continue desk --stream-to \(copy)", "/dev/null"])
        let peak = sampler.stop()
        let residentPeak = residentSampler.stop()
        #expect(receiving.status == 0, "\(receiving)")
        #expect(receiving.stdout.contains(" of 1.07 GB, ") && receiving.stdout.contains("/s, ") && receiving.stdout.contains(" left"), "\(receiving.stdout)")
        let sums = try await rig.run("alpha", ["/usr/bin/sha256sum", big, copy]).stdout.split(separator: "\n").map { $0.prefix(64) }
        #expect(sums.count == 2 && sums[0] == sums[1], "checksums: \(sums)")
        // The daemons' own memory (anonymous: heaps and buffers), with VmRSS beside it, which also
        // counts code paged back in after this VM reclaimed it. Flat: what the stream holds at
        // once (a few chunks and queues of 128–512 KiB), and what the allocator keeps of what was
        // freed before it trims (8 MB, `LinuxCalls.keepBulkBuffers`) — usually 1–5 MB, once 17
        // on a loaded machine; growing with the bytes, it would be hundreds.
        for (index, host) in ["alpha", "bravo"].enumerated() {
            let growth = (peak[index] - before[index]) / 1024
            let residentGrowth = (residentPeak[index] - residentBefore[index]) / 1024
            print("1 GiB stream: handoffd on \(host) grew by \(growth) MB anonymous, \(residentGrowth) MB resident")
            #expect(before[index] > 0 && growth <= 24, "handoffd on \(host) grew by \(growth) MB of its own memory during 1 GiB (\(residentGrowth) MB resident)")
        }
        try await server.wait(for: "the server to report the stream") { $0.stderr.contains("done: sent 1073741824 bytes") }
        _ = try await server.stop()
        try? FileManager.default.removeItem(atPath: copy)

        // 5b. Not files: handoffd cannot wait on a pipe for ever, so handoffctl carries the bytes
        // itself — from a FIFO on alpha, into a pipe (the captured stdout) on bravo.
        let fifo = rig.directory + "/fifo"
        #expect(try await rig.run("alpha", ["mkfifo", "-m", "0600", fifo]).status == 0)
        #expect(try await rig.run("alpha", ["/bin/sh", "-c", "(printf 'from a pipe' > \(fifo)) >/dev/null 2>&1 &"]).status == 0)
        let piped = try rig.ctlProcess(
            "alpha", ["become-current", "--type", "org.example.Pipe", "--title", "Pipe", "--stream-file", fifo]
        )
        try await piped.wait(for: "the pipe server to attach") { $0.stderr.contains("attached") }
        try await waitUntilBravoSees(rig, title: "Pipe")
        let fromPipe = try await rig.ctl("bravo", ["continue", "desk", "--stream-to", "-"])
        #expect(fromPipe.status == 0 && fromPipe.stdout == "from a pipe", "\(fromPipe)")
        _ = try await piped.stop()

        // 6. --stream-exec on both ends: an echo round trip.
        let echo = try rig.ctlProcess(
            "alpha", ["become-current", "--type", "org.example.Echo", "--title", "Echo", "--stream-exec", "cat"]
        )
        try await echo.wait(for: "the echo server to attach") { $0.stderr.contains("attached") }
        try await waitUntilBravoSees(rig, title: "Echo")
        let echoed = rig.directory + "/echoed.txt"
        let client = try await rig.ctl("bravo", ["continue", "desk", "--stream-exec", "printf 'ping across hosts'; exec >&-; cat > \(echoed)"])
        #expect(client.status == 0, "\(client)")
        #expect((try? String(contentsOfFile: echoed, encoding: .utf8)) == "ping across hosts")
        _ = try await echo.stop()

        // 7. The originating app killed mid-stream, then its handoffd: each time both ends fail
        //    (at once: the connections are reset, or closed by the killed process's kernel), and
        //    nothing looks complete.
        for (round, victim) in ["the app", "handoffd"].enumerated() {
            let title = "Big \(round)"
            let server = try rig.ctlProcess(
                "alpha", ["become-current", "--type", "org.example.Big", "--title", title, "--stream-file", big]
            )
            try await server.wait(for: "the stream server to attach") { $0.stderr.contains("attached") }
            try await waitUntilBravoSees(rig, title: title)
            let partial = rig.directory + "/partial.bin"
            let receiver = try rig.ctlProcess("bravo", ["continue", "desk", "--stream-to", partial])
            try await receiver.wait(seconds: 30, for: "bytes to flow") { _ in
                temporaryFiles(rig.directory, "partial.bin").contains { (try? FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int) ?? 0 > 32 << 20 }
            }
            if victim == "the app" {
                _ = try await server.stop(signal: SIGKILL)
            } else {
                _ = try await rig.daemon("alpha")?.stop(signal: SIGKILL)
                #expect(await server.exitStatus() != 0, "\(server.stderr)")
            }
            #expect(await receiver.exitStatus() == 40, "\(victim) killed: \(receiver.stderr)")
            #expect(!FileManager.default.fileExists(atPath: partial), "\(victim) killed")
            #expect(temporaryFiles(rig.directory, "partial.bin").isEmpty, "\(victim) killed")
            let streams = try await rig.ctlJSON("bravo", StreamsResponse.self, ["streams"]).streams
            #expect(streams.last?.state == .failed, "\(victim) killed: \(String(describing: streams.last))")
        }
    }

    // MARK: Helpers

    func peers(_ rig: Rig) async throws -> [PeerInfo] {
        try await rig.ctlJSON("bravo", PeersResponse.self, ["peers"]).peers
    }

    /// Makes an activity current on alpha; returns its id once bravo sees it.
    func becomeCurrent(_ rig: Rig, _ arguments: [String]) async throws -> String {
        let r = try await rig.ctl("alpha", ["become-current"] + arguments)
        guard r.status == 0 else { throw TestFailure("become-current: \(r)") }
        let id = r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        try await Rig.waitFor("bravo to see \(id)") { try await peers(rig).first?.activity?.id.lowercasedString == id }
        return id
    }

    func waitUntilBravoSees(_ rig: Rig, title: String) async throws {
        try await Rig.waitFor("bravo to see \(title)") { try await peers(rig).first?.activity?.title == title }
    }

    /// (event name, continuation id) of each lifecycle event in `handoffctl watch --json` output.
    func lifecycle(_ output: String) -> [(String, String)] {
        output.split(separator: "\n").compactMap { line in
            guard let event = try? LocalAPIJSON.decoder().decode(LocalEvent.self, from: Data(line.utf8)) else { return nil }
            switch event.body {
            case .willContinue(let id, _, _): return ("willContinue", id.lowercasedString)
            case .continued(let id, _, _, _): return ("continued", id.lowercasedString)
            case .continueFailed(let id, _, _, _, _): return ("continueFailed", id.lowercasedString)
            default: return nil
            }
        }
    }

    func daemonPID(_ rig: Rig, _ host: String) async throws -> pid_t {
        try await rig.ctlJSON(host, DaemonStatus.self, ["status"]).pid
    }

    /// `--stream-to`'s temporary files for `name` in `directory`.
    func temporaryFiles(_ directory: String, _ name: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasPrefix("." + name + ".handoff-") }.map { directory + "/" + $0 }
    }
}

/// The peak memory of some processes (`measure`, in KiB), sampled every 50 ms until stopped.
final class RSSSampler: @unchecked Sendable {
    private let lock = NSLock()
    private var peaks: [Int]
    private var running = true
    private let done = DispatchSemaphore(value: 0)

    init(_ pids: [pid_t], _ measure: @escaping @Sendable (pid_t) -> Int) {
        peaks = pids.map(measure)
        Thread.detachNewThread { [self] in
            while lock.withLock({ running }) {
                let now = pids.map(measure)
                lock.withLock { peaks = zip(peaks, now).map { max($0, $1) } }
                usleep(50_000)
            }
            done.signal()
        }
    }

    func stop() -> [Int] {
        lock.withLock { running = false }
        done.wait()
        return lock.withLock { peaks }
    }
}
