import Foundation
import HandoffAPI
import HandoffTestSupport
import Testing

/// Handshake admission that a flood from many addresses cannot turn against the members
/// (docs/security.md, "Members first"): real daemons on loopback, as the test user.
@Suite(.timeLimit(.minutes(3))) struct MembersFirstTests {
    /// 100 stranger addresses (127.0.1.1–100) each hold 4 silent connections to alpha's port —
    /// every one a handshake slot until the handshake times out — and churn them, while bravo,
    /// a member, reconnects (`account sync HOST:PORT`: a new TLS connection each time) and opens
    /// streams. At least 99 % of bravo's attempts succeed. (With the slots shared by everyone,
    /// most failed, and the member was told of a per-address limit.)
    @Test func aMemberGetsThroughAHundredStrangers() async throws {
        let a = try DaemonHome()
        let b = try DaemonHome()
        defer { a.remove(); b.remove() }
        let p = try await FaultIsolationTests().pair(a: a, b: b)
        let peer = "127.0.0.1:\(p.portA)"
        #expect(try await b.ctl(["account", "sync", peer]).status == 0, "bravo's address is a member's from here on")
        let server = try a.ctlProcess(["become-current", "--type", "org.example.Bulk", "--title", "Bulk", "--stream-exec", "echo payload"])
        try await server.wait(for: "the stream server to attach") { $0.stderr.contains("attached") }

        let floods = try (1...100).map {
            try StrangerFlood(source: "127.0.1.\($0)", host: "127.0.0.1", port: p.portA, connections: 4, silent: true, churn: .seconds(2))
        }
        defer { floods.forEach { $0.stop() } }
        try await Rig.waitFor("the strangers to hold their connections", seconds: 30) {
            floods.map(\.current.connected).reduce(0, +) >= 300
        }

        var (succeeded, tried) = (0, 0)
        var took: [Duration] = []
        var failures: [String] = []
        for attempt in 0..<100 {
            let started = ContinuousClock.now
            let result: ProcessResult
            if attempt % 10 == 0 {
                let file = b.directory + "/stream-\(attempt)"
                result = try await b.ctl(["continue", peer, "--stream-to", file])
                if result.status == 0, (try? String(contentsOfFile: file, encoding: .utf8)) != "payload\n" {
                    failures.append("stream \(attempt): wrong content")
                    tried += 1
                    continue
                }
            } else {
                result = try await b.ctl(["account", "sync", peer])
            }
            tried += 1
            if result.status == 0 {
                succeeded += 1
                took.append(ContinuousClock.now - started)
            } else {
                failures.append("\(attempt): exit \(result.status) \(result.stderr)")
            }
        }
        let counts = floods.map { $0.stop() }
        let held = counts.map(\.peakOpen).reduce(0, +)
        took.sort()
        let p50 = took.isEmpty ? .zero : took[took.count / 2]
        print("members first: \(succeeded) of \(tried) member connections succeeded under 100 stranger addresses holding \(held) connections at most; p50 \(p50), max \(took.last ?? .zero) (each a handoffctl run)")
        #expect(succeeded * 100 >= tried * 99, "\(succeeded) of \(tried): \(failures.prefix(5))")
        #expect(p.daemonA.isRunning)
        _ = try await server.stop()
        _ = try await p.daemonA.stop()
        _ = try await p.daemonB.stop()
    }
}
