import Foundation
import HandoffAPI
import HandoffModel
import HandoffTestSupport
import Testing

/// A device's wall clock jumps — an NTP step, a suspended laptop's RTC, a user fixing the time —
/// while monotonic time runs on. libfaketime moves each daemon's wall clock by what its file says
/// (re-read at every call), as the test user; nothing else on the machine is touched.
@Suite(.timeLimit(.minutes(5))) struct ClockJumpTests {
    static let faketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"

    /// Alpha's clock goes back an hour, then a day, then forward an hour: new connections both
    /// ways still pass certificate checks and changes still travel. Then forward past its
    /// activity's expiry: the activity is withdrawn within seconds, not when the monotonic
    /// timer set at the start (90 minutes) would have fired.
    @Test func wallClockJumpsBreakNeitherCertificatesNorExpiry() async throws {
        guard FileManager.default.fileExists(atPath: Self.faketime) else {
            Issue.record("libfaketime is missing: run scripts/install-deps.sh test")
            return
        }
        await Rig.withHosts(["alpha", "bravo"]) { rig in
            var offsets: [String: String] = [:]
            for host in ["alpha", "bravo"] {
                let file = rig.directory + "/\(host)-clock"
                try rig.write(to: file, "+0")
                offsets[host] = file
                try await rig.startDaemon(
                    host,
                    extraEnvironment: [
                        "LD_PRELOAD": Self.faketime, "FAKETIME_TIMESTAMP_FILE": file, "FAKETIME_NO_CACHE": "1",
                        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
                    ]
                )
            }
            let (alphaID, bravoID) = try await EndToEndTests().pair(rig)
            let peers = { (host: String) in try await rig.ctlJSON(host, PeersResponse.self, ["peers"]).peers }
            try await Rig.waitFor("alpha to reach bravo") { try await peers("alpha").contains { $0.id == bravoID && $0.reachable } }
            #expect(try await rig.ctl("alpha", ["become-current", "--type", "com.example.clock", "--title", "Expiring", "--expires-in", "90m"]).status == 0)
            let alphaAt = try await rig.address("alpha") + ":47810"
            let bravoAt = try await rig.address("bravo") + ":47810"

            for (step, offset) in ["-1h", "-1d", "+1h"].enumerated() {
                try rig.write(to: offsets["alpha"]!, offset)
                // Fresh connections, so that certificates are checked under the new clock.
                let toAlpha = try await rig.ctl("bravo", ["account", "sync", alphaAt])
                #expect(toAlpha.status == 0, "bravo → alpha with alpha's clock \(offset): \(toAlpha)")
                let toBravo = try await rig.ctl("alpha", ["account", "sync", bravoAt])
                #expect(toBravo.status == 0, "alpha → bravo with alpha's clock \(offset): \(toBravo)")
                #expect(try await rig.ctl("alpha", ["current"]).stdout.contains("Expiring"), "not expired at \(offset)")
                let title = "change \(step) at \(offset)"
                #expect(try await rig.ctl("bravo", ["become-current", "--type", "com.example.clock", "--title", title]).status == 0)
                try await Rig.waitFor("\(title) on alpha") { try await peers("alpha").first { $0.id == bravoID }?.activity?.title == title }
            }

            // Forward past the expiry (90 minutes after it was made): withdrawn within
            // ActivityRegistry.expiryCheckSeconds (15 s), and bravo hears of it.
            try rig.write(to: offsets["alpha"]!, "+2h")
            let jumped = ContinuousClock.now
            try await Rig.waitFor("the expired activity withdrawn on alpha", seconds: 25) {
                !(try await rig.ctl("alpha", ["current"]).stdout.contains("Expiring"))
            }
            try await Rig.waitFor("bravo to hear of it", seconds: 10) {
                try await peers("bravo").first { $0.id == alphaID }?.activity?.title != "Expiring"
            }
            print("clock jumps: -1h, -1d, +1h kept every connection; +2h withdrew the expired activity in \(ContinuousClock.now - jumped)")
            #expect(rig.daemon("alpha")?.isRunning == true && rig.daemon("bravo")?.isRunning == true)
        }
    }
}
