import Foundation
import HandoffAPI
import HandoffModel
import HandoffTestSupport
import Testing

/// No failure while setting up, reading or closing one connection ends handoffd or disturbs
/// another: real daemons on loopback, as the test user, with system calls made to fail on
/// purpose (FaultInjection) and descriptors really running out.
@Suite(.timeLimit(.minutes(3))) struct FaultIsolationTests {
    /// Two devices of one account; `a` under `faults` (not armed yet).
    struct Pair {
        let a: DaemonHome
        let b: DaemonHome
        let daemonA: RunningProcess
        let daemonB: RunningProcess
        let portA: Int

        func remove() {
            a.remove()
            b.remove()
        }
    }

    func pair(aEnvironment: [String: String] = [:], a: DaemonHome, b: DaemonHome) async throws -> Pair {
        let daemonA = try await a.start(extraEnvironment: aEnvironment)
        let daemonB = try await b.start()
        #expect(try await a.ctl(["account", "create", "--device-name", "desk"]).status == 0)
        let status = try LocalAPIJSON.decoder().decode(DaemonStatus.self, from: Data(try await a.ctl(["status", "--json"]).stdout.utf8))
        let invite = try a.ctlProcess(["account", "invite"])
        try await invite.wait(for: "the code") { !$0.stdout.isEmpty }
        let code = String(invite.stdout.split(separator: "\n").first ?? "")
        let join = try await b.ctl(["account", "join", code, "--peer", "127.0.0.1:\(status.peerPort)", "--device-name", "laptop"])
        guard join.status == 0 else { throw TestFailure("join: \(join)") }
        return Pair(a: a, b: b, daemonA: daemonA, daemonB: daemonB, portA: status.peerPort)
    }

    @Test func injectedSetsockoptAndAcceptFailuresStayWithTheirConnection() async throws {
        let a = try DaemonHome()
        let b = try DaemonHome()
        defer { a.remove(); b.remove() }
        let faults = try await FaultInjection.build(in: a.directory + "/faults", logDirectory: a.directory)
        // Every 11th setsockopt on a TCP connection fails (EACCES: what SO_DEBUG got a normal
        // user; a connection makes five, so about half fail to set up); every 4th accept fails,
        // in turn with EMFILE, ECONNABORTED, EPROTO, EPERM, ENFILE, ENOBUFS — EPROTO and EPERM
        // make NIO close the listening socket, the others make it wait a second.
        let p = try await pair(aEnvironment: faults.environment(setsockopt: "11:13", accept: "4:24,103,71,1,23,105"), a: a, b: b)
        let peer = "127.0.0.1:\(p.portA)"

        // A stream that is already flowing when the faults start: it must finish intact.
        let trickle = try a.ctlProcess([
            "become-current", "--type", "org.example.Trickle", "--title", "Trickle",
            "--stream-exec", "i=0; while [ $i -lt 60 ]; do echo line $i; i=$((i+1)); sleep 0.05; done",
        ])
        try await trickle.wait(for: "the stream server to attach") { $0.stderr.contains("attached") }
        let received = b.directory + "/trickle.txt"
        let receiver = try b.ctlProcess(["continue", peer, "--stream-to", received])
        try await receiver.wait(for: "the stream to start") { _ in
            temporaryFiles(b.directory, "trickle.txt").contains { ((try? FileManager.default.attributesOfItem(atPath: $0)[.size]) as? Int ?? 0) > 0 }
        }

        faults.arm()
        // Some stranger traffic beside (from another address: the per-address handshake budget
        // is not what this test is about; the flood is the end-to-end suite's).
        let flood = try StrangerFlood(source: "127.0.0.2", host: "127.0.0.1", port: p.portA, connections: 5, churn: .milliseconds(500))
        defer { flood.stop() }
        var (synced, tried) = (0, 0)
        // Four seconds of syncs, and on until one got through (a loaded machine may need longer;
        // the claim is that some do, not how fast).
        let until = ContinuousClock.now + .seconds(4)
        let giveUp = ContinuousClock.now + .seconds(40)
        while ContinuousClock.now < until || (synced == 0 && ContinuousClock.now < giveUp) {
            // Each sync is a new member connection to the faulty daemon: some are victims.
            tried += 1
            if try await b.ctl(["account", "sync", peer]).status == 0 { synced += 1 }
            try await Task.sleep(for: .milliseconds(50))
        }
        let counts = flood.stop()
        #expect(await receiver.exitStatus() == 0, "the stream that was flowing: \(receiver.stderr)")
        #expect(!receiver.stderr.contains("\r"), "no progress line when stderr is not a terminal")
        let lines = (try? String(contentsOfFile: received, encoding: .utf8))?.split(separator: "\n") ?? []
        #expect(lines.count == 60 && lines.last == "line 59", "the stream arrived whole: \(lines.count) lines")
        faults.disarm()

        #expect(p.daemonA.isRunning, "handoffd under faults exited: \(p.daemonA.stderr.suffix(2000))")
        let injected = faults.injected
        let setsockopts = injected.filter { $0.call == "setsockopt" }.count
        let accepts = Set(injected.filter { $0.call == "accept" }.map(\.errno))
        #expect(setsockopts > 0 && accepts.count >= 4, "faults injected: \(setsockopts) setsockopt, accept errnos \(accepts.sorted()); flood \(counts)")
        #expect(synced > 0, "some member connections got through during the faults: \(synced) of \(tried)")
        let log = p.daemonA.stderr
        let dropped = log.components(separatedBy: "dropped a connection that could not be set up").count - 1
        #expect(dropped > 0 && dropped <= setsockopts, "each connection whose setup failed logged once: \(dropped) of \(setsockopts) injected")
        #expect(log.contains("remote=127.0.0.1"), "the peer is named in the log")
        if accepts.contains(71) || accepts.contains(1) {
            #expect(log.contains("stopped accepting connections") && log.contains("listening again"), "a listening socket that stopped was bound again")
        }

        // Faults gone: everything works as before, first time.
        try await Rig.waitFor("the listening socket to be back", seconds: 40) { try await b.ctl(["account", "sync", peer]).status == 0 }
        for _ in 0..<5 { #expect(try await b.ctl(["account", "sync", peer]).status == 0) }
        _ = try await trickle.stop()
        #expect(try await a.ctl(["become-current", "--type", "org.example.After", "--title", "After"]).status == 0)
        let after = try await b.ctl(["continue", "desk", "--json"])
        #expect(after.status == 0 && after.stdout.contains("org.example.After"), "\(after)")
        #expect(try await a.ctl(["status"]).status == 0)
        #expect(try await p.daemonA.stop() == 0, "a clean exit after it all")
        _ = try await p.daemonB.stop()
    }

    /// The kernel's own EMFILE: the daemon starts with a low descriptor limit (64, lowered by
    /// `prlimit` in front of it, as a unit's LimitNOFILE would), then strangers hold more
    /// connections than fit. It keeps running, and serves again once the descriptors are back.
    @Test func runningOutOfDescriptorsStopsNothing() async throws {
        let a = try DaemonHome()
        let b = try DaemonHome()
        defer { a.remove(); b.remove() }
        let limit = 64
        let daemonA = try await a.start(wrapper: ["/usr/bin/prlimit", "--nofile=\(limit):\(limit)", "--"])
        let daemonB = try await b.start()
        #expect(try await a.ctl(["account", "create", "--device-name", "desk"]).status == 0)
        let status = try LocalAPIJSON.decoder().decode(DaemonStatus.self, from: Data(try await a.ctl(["status", "--json"]).stdout.utf8))
        let peer = "127.0.0.1:\(status.peerPort)"
        let invite = try a.ctlProcess(["account", "invite"])
        try await invite.wait(for: "the code") { !$0.stdout.isEmpty }
        let join = try await b.ctl(["account", "join", String(invite.stdout.split(separator: "\n").first ?? ""), "--peer", peer])
        #expect(join.status == 0, "\(join)")
        #expect(try await a.ctl(["become-current", "--type", "org.example.Before", "--title", "Before"]).status == 0)

        // Silent connections from 30 addresses (an address may have only a few handshakes under
        // way): each admitted one holds a descriptor until the handshake times out — together
        // more than the limit leaves.
        let floods = try (2...31).map {
            try StrangerFlood(source: "127.0.0.\($0)", host: "127.0.0.1", port: status.peerPort, connections: 4, silent: true, churn: .seconds(60))
        }
        defer { floods.forEach { $0.stop() } }
        let pid = daemonA.pid
        try await Rig.waitFor("the daemon to run out of descriptors") {
            ProcessUsage.descriptors(pid) >= limit - 1
        }
        try await Task.sleep(for: .seconds(2))
        // Meanwhile, asking costs nothing: the request waits or fails, the daemon does not.
        _ = try await b.ctl(["account", "sync", peer])
        let counts = floods.map { $0.stop() }
        #expect(daemonA.isRunning, "handoffd out of descriptors exited: \(daemonA.stderr.suffix(2000)); floods \(counts)")

        try await Rig.waitFor("the daemon to serve again", seconds: 60) { try await a.ctl(["status"]).status == 0 }
        try await Rig.waitFor("member connections again", seconds: 60) { try await b.ctl(["account", "sync", peer]).status == 0 }
        #expect(try await a.ctl(["become-current", "--type", "org.example.After", "--title", "After"]).status == 0)
        let after = try await b.ctl(["continue", peer, "--json"])
        #expect(after.status == 0 && after.stdout.contains("org.example.After"), "\(after)")
        #expect(try await daemonA.stop() == 0)
        _ = try await daemonB.stop()
    }

    /// `--stream-to`'s temporary files for `name` in `directory`.
    func temporaryFiles(_ directory: String, _ name: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasPrefix("." + name + ".handoff-") }.map { directory + "/" + $0 }
    }
}
