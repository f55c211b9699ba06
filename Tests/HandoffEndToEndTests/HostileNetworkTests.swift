import Foundation
import HandoffAPI
import HandoffModel
import HandoffTestSupport
import Testing

/// A stranger on the same network: its connections cost the members nothing they notice.
@Suite(.timeLimit(.minutes(5))) struct HostileNetworkTests {
    /// Charlie, a stranger host, keeps 500 connections open to alpha's port and churns them,
    /// each sending garbage (some of it TLS-looking, some ended with a reset), while bravo keeps
    /// continuing alpha's activity: alpha stays up, and bravo's `continue` takes about as long as
    /// before (median within 2×).
    @Test func aStrangersFloodStopsNoMember() async throws {
        await Rig.withHosts(["alpha", "bravo", "charlie"]) { rig in
            try await rig.startDaemon("alpha")
            try await rig.startDaemon("bravo")
            let (alphaID, _) = try await EndToEndTests().pair(rig)
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
            let underFire = try await continueTimes(rig, count: 15)
            let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(alphaPID)/fd").count) ?? -1
            let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(alphaPID)/task").count) ?? -1
            let counts = flood.stop()

            #expect(rig.daemon("alpha")?.isRunning == true, "alpha survived: \(rig.daemon("alpha")?.stderr.suffix(2000) ?? "")")
            let (before, during) = (median(quiet), median(underFire))
            print("continue p50 quiet \(before) µs, under a stranger's flood \(during) µs; flood: \(counts); alpha: \(fds) fds, \(threads) threads")
            #expect(during <= 2 * before, "continue p50 \(before) µs → \(during) µs under the flood (\(counts))")
            #expect(fds < 200, "alpha's descriptors stay bounded under the flood: \(fds)")
            // And afterwards, as before.
            let after = try await rig.ctl("bravo", ["continue", "desk", "--json"])
            #expect(after.status == 0 && after.stdout.contains("Under fire"), "\(after)")
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
