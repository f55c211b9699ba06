import Foundation
import HandoffAPI
import HandoffModel
import HandoffTestSupport
import Testing

/// A stranger on the same network: its connections cost the members nothing they notice.
/// The floods keep both cores busy (`.heaviest`); a flapping link mostly waits (`.heavy`).
@Suite(.timeLimit(.minutes(5))) struct HostileNetworkTests {
    /// Charlie, a stranger host, keeps 500 connections open to alpha's port and churns them,
    /// each sending garbage (some of it TLS-looking, some ended with a reset), while bravo keeps
    /// continuing alpha's activity: alpha stays up and answers every `continue` (how long they
    /// take, quiet and under the flood, is printed; bench/ measures it).
    @Test(.heaviest) func aStrangersFloodStopsNoMember() async throws {
        await Rig.withHosts(["alpha", "bravo", "charlie"]) { rig in
            let (alphaID, _) = try await EndToEndTests().startPaired(rig)
            try await Rig.waitFor("bravo to reach alpha") {
                try await rig.ctlJSON("bravo", PeersResponse.self, ["peers"]).peers.contains { $0.id == alphaID && $0.reachable }
            }
            #expect(try await rig.ctl("alpha", ["become-current", "--type", "com.example.flood", "--title", "Under fire"]).status == 0)
            try await Rig.waitFor("the activity on bravo") {
                try await rig.ctlJSON("bravo", PeersResponse.self, ["peers"]).peers.first { $0.id == alphaID }?.activity?.title == "Under fire"
            }
            let quiet = try await continueTimes(rig, count: 15)

            let alpha = try await rig.address("alpha")
            let alphaPID = try await rig.ctlJSON("alpha", DaemonStatus.self, ["status"]).pid
            let flood = try StrangerFlood(netns: "/run/netns/\(rig.name)-charlie", host: alpha, port: 47810, connections: 500)
            defer { flood.stop() }
            try await Rig.waitFor("500 stranger connections", seconds: 30) { flood.current.peakOpen >= 500 }
            // The suites run side by side, so the machine's load moves under any one window: the
            // flood's median is compared with the quiet ones on both sides of it, and measured once
            // more if a busy moment may have caught it.
            var during = median(try await continueTimes(rig, count: 15))
            let (fds, threads) = (ProcessUsage.descriptors(alphaPID), ProcessUsage.threads(alphaPID))
            if during > 2 * median(quiet) { during = min(during, median(try await continueTimes(rig, count: 15))) }
            let counts = flood.stop()
            // Alpha has let the strangers' connections go before the quiet after is measured.
            try await Rig.waitFor("alpha to close the strangers' connections", seconds: 30) {
                ProcessUsage.descriptors(alphaPID) < 60
            }
            let quietAfter = try await continueTimes(rig, count: 15)

            #expect(rig.daemon("alpha")?.isRunning == true, "alpha survived: \(rig.daemon("alpha")?.stderr.suffix(2000) ?? "")")
            print("continue p50 quiet \(median(quiet)) / \(median(quietAfter)) µs, under a stranger's flood \(during) µs; flood: \(counts); alpha: \(fds) fds, \(threads) threads")
            // How much slower the flood makes a continue is bench/'s to say (docs/testing.md): here,
            // every one of them was answered (`continueTimes`).
            #expect(fds < 200, "alpha's descriptors stay bounded under the flood: \(fds)")
            // And afterwards, as before.
            let after = try await rig.ctl("bravo", ["continue", "desk", "--json"])
            #expect(after.status == 0 && after.stdout.contains("Under fire"), "\(after)")
        }
    }

    static let forger = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().appendingPathComponent("../../scripts/forge-adverts.py").standardizedFileURL.path

    /// Charlie, a stranger host with no privilege, forges 1000 `_handoff._tcp` adverts — random
    /// ones, 50 byte-for-byte copies of bravo's TXT under random names, and one under bravo's own
    /// instance name — and avahi-daemon on alpha is restarted 10 times meanwhile (5 of them by
    /// SIGKILL). Alpha's
    /// descriptors and threads stay bounded (each avahi ref is a thread, descriptors and a system
    /// bus connection: docs/platform.md), alpha never crashes, its discovery is back after every restart,
    /// and bravo's changes reach alpha as before. (On the code before DiscoveryBudget: hundreds of
    /// threads and a crash on the first restarts.)
    @Test(.heaviest) func forgedAdvertsCostLittleAndAvahiRestartsStopNothing() async throws {
        await Rig.withHosts(["alpha", "bravo", "charlie"]) { rig in
            let (_, bravoID) = try await EndToEndTests().startPaired(rig)
            try await Rig.waitFor("alpha to reach bravo") {
                try await rig.ctlJSON("alpha", PeersResponse.self, ["peers"]).peers.contains { $0.id == bravoID && $0.reachable }
            }
            let alphaPID = try await rig.ctlJSON("alpha", DaemonStatus.self, ["status"]).pid
            // Descriptors, threads, resident memory (kB), and connections to alpha's system bus
            // (each avahi ref is one: dbus-daemon allows a user 256).
            let usage = { () async -> (fds: Int, threads: Int, rssKB: Int, bus: Int) in
                // dbus-daemon's own answers (busctl cannot tell the process without systemd).
                let ask = "dbus-send --system --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus"
                let count = """
                    \(ask).ListNames | grep -o '":1\\.[0-9]*"' | tr -d '"' | while read n; do
                      \(ask).GetConnectionUnixProcessID string:$n 2>/dev/null | grep -q "uint32 \(alphaPID)$" && echo x
                    done | wc -l
                    """
                let bus = Int(((try? await rig.run("alpha", ["/bin/sh", "-c", count]))?.stdout ?? "").trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
                return (ProcessUsage.descriptors(alphaPID), ProcessUsage.threads(alphaPID), ProcessUsage.residentKiB(alphaPID), bus)
            }
            let quiet = await usage()

            // Bravo's advert, as any host on the link reads it.
            var copy: (name: String, txt: [String])?
            try await Rig.waitFor("bravo's advert seen from charlie", seconds: 60) {
                let browse = try await rig.run("charlie", ["avahi-browse", "-rpt", "_handoff._tcp"])
                for line in browse.stdout.split(separator: "\n") where line.hasPrefix("=;") && line.contains(";bravo.local;") {
                    let fields = line.split(separator: ";", omittingEmptySubsequences: false)
                    guard fields.count >= 10 else { continue }
                    let txt = fields[9...].joined(separator: ";").split(separator: "\" \"").map {
                        $0.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                    }
                    copy = (String(fields[3]), txt)
                }
                return copy != nil
            }
            let charlie = try await rig.address("charlie")
            // The forger answers for itself on port 5353 (RFC 6762 ignores responses from other
            // ports): charlie's own avahi-daemon steps aside — the attacker owns that machine.
            try await rig.avahi("charlie", "stop")
            let forger = try RunningProcess(
                Rig.script,
                ["exec", rig.name, "charlie"]
                    + rig.user.command(
                        ["/usr/bin/python3", Self.forger, "--address", charlie, "--count", "1000", "--copy-name", copy!.name, "--copy-txt"] + copy!.txt,
                        environment: rig.environment("charlie")
                    )
            )
            defer { kill(forger.pid, SIGKILL) }
            var peak = quiet
            func sample() async {
                let now = await usage()
                peak = (max(peak.fds, now.fds), max(peak.threads, now.threads), max(peak.rssKB, now.rssKB), max(peak.bus, now.bus))
            }
            try await Rig.waitFor("alpha to count the forged adverts", seconds: 60) {
                await sample()
                guard forger.isRunning else { throw TestFailure("the forger stopped: \(forger.stdout) \(forger.stderr)") }
                return try await rig.ctlJSON("alpha", PeersResponse.self, ["peers"]).strangers >= 500
            }
            for _ in 0..<20 {
                await sample()
                try await Task.sleep(for: .milliseconds(250))
            }

            // A change on bravo reaches alpha as usual.
            func changeReachesAlpha(_ title: String) async throws -> Duration {
                let started = ContinuousClock.now
                #expect(try await rig.ctl("bravo", ["become-current", "--type", "com.example.forged", "--title", title]).status == 0)
                try await Rig.waitFor("\(title) on alpha", seconds: 60) {
                    try await rig.ctlJSON("alpha", PeersResponse.self, ["peers"]).peers.first { $0.id == bravoID }?.activity?.title == title
                }
                return ContinuousClock.now - started
            }
            let during = try await changeReachesAlpha("During the forgery")

            // avahi-daemon restarted 10 times under the forged adverts, every other time killed
            // with SIGKILL (no goodbye to its clients): no crash, discovery back each time.
            for round in 1...10 {
                try await rig.avahi("alpha", round % 2 == 0 ? "crash" : "restart")
                try await Rig.waitFor("alpha's discovery back after restart \(round)", seconds: 30) {
                    await sample()
                    guard rig.daemon("alpha")?.isRunning == true else {
                        throw TestFailure("handoffd on alpha ended at avahi restart \(round): \(rig.daemon("alpha")?.stderr.suffix(3000) ?? "")")
                    }
                    return try await rig.ctlJSON("alpha", DaemonStatus.self, ["status"]).discovery.state == .running
                }
            }
            try await Rig.waitFor("alpha to count the forged adverts again", seconds: 60) {
                await sample()
                return try await rig.ctlJSON("alpha", PeersResponse.self, ["peers"]).strangers >= 500
            }
            let after = try await changeReachesAlpha("After ten restarts")
            let strangers = try await rig.ctlJSON("alpha", PeersResponse.self, ["peers"]).strangers
            print("forged adverts: alpha quiet \(quiet.fds) fds / \(quiet.threads) threads / \(quiet.rssKB) kB / \(quiet.bus) bus connections, at most \(peak.fds) / \(peak.threads) / \(peak.rssKB) kB / \(peak.bus) under 1051 forged adverts and 10 avahi restarts; \(strangers) strangers counted; a change on bravo reached alpha in \(during) during, \(after) after")
            #expect(peak.fds < 200, "alpha's descriptors stay bounded: \(peak.fds) (quiet \(quiet.fds))")
            #expect(peak.threads < 60, "alpha's threads stay bounded: \(peak.threads) (quiet \(quiet.threads))")
            #expect(peak.bus >= 1 && peak.bus < 40, "alpha's system-bus connections stay bounded: \(peak.bus) (quiet \(quiet.bus))")
            #expect(peak.rssKB < quiet.rssKB + 32 * 1024, "alpha's memory stays bounded: \(peak.rssKB) kB (quiet \(quiet.rssKB) kB)")
            #expect(rig.daemon("alpha")?.isRunning == true)
        }
    }

    /// `continue desk --json` on bravo, `count` times in a row, timed inside bravo (µs each).
    func continueTimes(_ rig: Rig, count: Int) async throws -> [Int] {
        let ctl = try rig.user.product("handoffctl")
        let script = """
            i=0; while [ $i -lt \(count) ]; do
              s=$(date +%s%N); "\(ctl)" continue desk --json >/dev/null || echo failed; e=$(date +%s%N)
              echo $(( (e - s) / 1000 )); i=$((i+1))
            done
            """
        let r = try await rig.run("bravo", ["/bin/sh", "-c", script])
        let times = r.stdout.split(separator: "\n").compactMap { Int($0) }
        #expect(!r.stdout.contains("failed") && times.count == count, "every continue succeeds: \(r)")
        return times
    }

    func median(_ values: [Int]) -> Int {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }
}

extension HostileNetworkTests {
    /// Bravo's link flaps five times — down for 1 to 9 s (shorter and longer than the sessions'
    /// keepalive allows), then up — as a bad Wi-Fi does. Each time it is back, the session comes
    /// back and a change on either side reaches the other; neither daemon ends.
    @Test(.heavy) func aFlappingLinkComesBackEveryTime() async throws {
        await Rig.withHosts(["alpha", "bravo"]) { rig in
            let (alphaID, bravoID) = try await EndToEndTests().startPaired(rig)
            let peers = { (host: String) in try await rig.ctlJSON(host, PeersResponse.self, ["peers"]).peers }
            try await Rig.waitFor("alpha to reach bravo") { try await peers("alpha").contains { $0.id == bravoID && $0.reachable } }
            var recovered: [Duration] = []
            for (round, down) in [1, 6, 2, 9, 3].enumerated() {
                // (As root: a link going down is the network's doing, not the user's.)
                #expect(try await rig.root("bravo", ["ip", "link", "set", "eth0", "down"]).status == 0)
                try await Task.sleep(for: .seconds(down))
                #expect(try await rig.root("bravo", ["ip", "link", "set", "eth0", "up"]).status == 0)
                let up = ContinuousClock.now
                let title = "after flap \(round + 1)"
                #expect(try await rig.ctl("bravo", ["become-current", "--type", "com.example.flap", "--title", title]).status == 0)
                try await Rig.waitFor("\(title) on alpha", seconds: 60) {
                    try await peers("alpha").first { $0.id == bravoID && $0.reachable }?.activity?.title == title
                }
                #expect(try await rig.ctl("alpha", ["become-current", "--type", "com.example.flap", "--title", "alpha " + title]).status == 0)
                try await Rig.waitFor("alpha's \(title) on bravo", seconds: 60) {
                    try await peers("bravo").first { $0.id == alphaID }?.activity?.title == "alpha " + title
                }
                recovered.append(ContinuousClock.now - up)
            }
            #expect(rig.daemon("alpha")?.isRunning == true && rig.daemon("bravo")?.isRunning == true)
            print("link flaps (down 1, 6, 2, 9, 3 s): changes across again \(recovered.map { "\($0)" }.joined(separator: ", ")) after the link was up")
        }
    }
}
