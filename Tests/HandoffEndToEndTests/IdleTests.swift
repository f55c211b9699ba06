import Foundation
import HandoffAPI
import HandoffTestSupport
import Testing

extension EndToEndTests {
    /// Quiet when idle (docs/benchmarks.md, "Idle"): two paired daemons, one with a current
    /// activity, running as the test user, wake at most 6 times a minute each — all threads,
    /// counted by the kernel — over half a minute in which nothing happens. A periodic timer in
    /// userland (a poll, a ticker, a `Task.sleep` pending: libdispatch then wakes every second)
    /// fails it, and so does a task that runs on Swift's default executor rather than the
    /// daemon's loop (its first one starts libdispatch's pool monitor); `bench/idle` measures
    /// the real figure over two minutes (target: 1 a minute).
    @Test func pairedDaemonsSleepWhileNothingHappens() async throws {
        await Rig.withHosts(["alpha", "bravo"]) { rig in
            for host in rig.hosts { try await rig.startDaemon(host) }
            let (alphaID, bravoID) = try await pair(rig)
            _ = try await rig.ctl("alpha", ["become-current", "--type", "org.example.idle", "--title", "Quiet"])
            try await Rig.waitFor("bravo to see the activity") {
                try await peers(rig, "bravo").peers.first { $0.id == alphaID }?.activity != nil
            }
            // Continued once, so that what the idle window sees also follows a session's
            // request and a local API round trip on each side.
            let continued = try await rig.ctl("bravo", ["continue", "desk", "--json"])
            #expect(continued.status == 0, "\(continued)")
            // What the pairing and the change set going settles: address queries end 10 s after a
            // sighting (DiscoveryBudget), a lookup of a missing name gives up after 5 s.
            try await Task.sleep(for: .seconds(25))
            let window = 30.0
            let pids = try rig.hosts.map { host in
                guard let pid = rig.daemon(host)?.pid else { throw TestFailure("no daemon on \(host)") }
                return (host, pid)
            }
            let woke = try await withThrowingTaskGroup(of: (String, Int).self) { group in
                for (host, pid) in pids { group.addTask { (host, try await ProcessUsage.wakeups(pid, during: window)) } }
                return try await group.reduce(into: [String: Int]()) { $0[$1.0] = $1.1 }
            }
            for (host, count) in woke.sorted(by: { $0.key < $1.key }) {
                let perMinute = Double(count) * 60 / window
                print("idle: handoffd on \(host) woke \(count) times in \(Int(window)) s (\(perMinute) a minute)")
                #expect(perMinute <= 6, "handoffd on \(host) woke \(count) times in \(Int(window)) s")
            }
            // Still paired: the quiet was not that of a lost session.
            #expect(try await peers(rig, "alpha").peers.contains { $0.id == bravoID && $0.reachable })
            #expect(try await peers(rig, "bravo").peers.contains { $0.id == alphaID && $0.reachable })
        }
    }
}
