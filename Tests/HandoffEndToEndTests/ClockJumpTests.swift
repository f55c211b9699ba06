import Foundation
import HandoffAPI
import HandoffModel
import HandoffTestSupport
import Testing

/// A device's wall clock jumps — an NTP step, a suspended laptop's RTC, a user fixing the time —
/// while monotonic time runs on. `WallClock` (a preloaded shim) moves each daemon's wall clock by
/// the seconds its file says, as the test user; timers, sleeps and the rest of the machine are
/// untouched.
@Suite(.heavy, .timeLimit(.minutes(5))) struct ClockJumpTests {
    /// Alpha's clock goes back an hour, then a day, then forward an hour: new connections both
    /// ways still pass certificate checks and changes still travel. Then forward past its
    /// activity's expiry: the activity is withdrawn within seconds, not when the monotonic
    /// timer set at the start (90 minutes) would have fired.
    @Test func wallClockJumpsBreakNeitherCertificatesNorExpiry() async throws {
        await Rig.withHosts(["alpha", "bravo"]) { rig in
            let clock = try await WallClock.build(in: rig.directory + "/clock")
            var offsets: [String: String] = [:]
            for host in ["alpha", "bravo"] {
                let file = rig.directory + "/\(host)-clock"
                try rig.write(to: file, "0")
                offsets[host] = file
                try await rig.startDaemon(host, extraEnvironment: clock.environment(offsetFile: file))
            }
            let (alphaID, bravoID) = try await EndToEndTests().pair(rig)
            let peers = { (host: String) in try await rig.ctlJSON(host, PeersResponse.self, ["peers"]).peers }
            try await Rig.waitFor("alpha to reach bravo") { try await peers("alpha").contains { $0.id == bravoID && $0.reachable } }
            #expect(try await rig.ctl("alpha", ["become-current", "--type", "com.example.clock", "--title", "Expiring", "--expires-in", "90m"]).status == 0)
            let alphaAt = try await rig.address("alpha") + ":47810"
            let bravoAt = try await rig.address("bravo") + ":47810"

            for (step, (offset, seconds)) in [("-1h", -3600), ("-1d", -86_400), ("+1h", 3600)].enumerated() {
                try rig.write(to: offsets["alpha"]!, "\(seconds)")
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

            // Forward past the expiry (90 minutes after it was made): the shim moves no kernel
            // timer, so the activity is withdrawn as soon as anyone asks for it (the next
            // `current` below; a real clock step ends the registry's wall-clock wait itself), and
            // bravo hears of it.
            try rig.write(to: offsets["alpha"]!, "7200")
            let jumped = ContinuousClock.now
            try await Rig.waitFor("the expired activity withdrawn on alpha", seconds: 75) {
                !(try await rig.ctl("alpha", ["current"]).stdout.contains("Expiring"))
            }
            try await Rig.waitFor("bravo to hear of it", seconds: 10) {
                guard let alpha = try await peers("bravo").first(where: { $0.id == alphaID }) else { return false }
                return alpha.activity == nil
            }
            print("clock jumps: -1h, -1d, +1h kept every connection; +2h withdrew the expired activity in \(ContinuousClock.now - jumped)")
            #expect(rig.daemon("alpha")?.isRunning == true && rig.daemon("bravo")?.isRunning == true)
        }
    }
}
