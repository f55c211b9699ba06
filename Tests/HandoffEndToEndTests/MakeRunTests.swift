import Foundation
import HandoffAPI
import HandoffModel
import HandoffTestSupport
import Testing

/// `make run` as a normal user on a simulated host: the Makefile's own recipe (its build and
/// package steps are left out with `make -o`, as they are for a user whose checkout is built),
/// Avahi found in /usr/sbin and a hint that fits the machine when it is not running, ARGS passed
/// on, and a JOIN code that does not work stopping it with the fix.
@Suite(.heavy, .timeLimit(.minutes(5))) struct MakeRunTests {
    static let checkout = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardizedFileURL.path

    /// `make run VARIABLES…` inside `host` as the test user, with handoffd and handoffctl where
    /// that user can run them.
    func makeRun(_ rig: Rig, _ host: String, _ variables: [String]) throws -> RunningProcess {
        let binaries = (try rig.user.product("handoffd") as NSString).deletingLastPathComponent
        _ = try rig.user.product("handoffctl")
        return try RunningProcess(
            Rig.script,
            ["exec", rig.name, host]
                + rig.user.command(
                    ["/usr/bin/make", "--no-print-directory", "-C", Self.checkout, "-o", "build", "-o", "deps-run", "run", "BIN_DEBUG=\(binaries)"] + variables,
                    environment: rig.environment(host)
                )
        )
    }

    @Test func makeRunWorksForANormalUser() async throws {
        await Rig.withHosts(["alpha", "bravo"]) { rig in
            // Avahi not running: make run stops before handoffd, with the command for this machine.
            try await rig.avahi("alpha", "stop")
            let stopped = try makeRun(rig, "alpha", [])
            #expect(await stopped.exitStatus() != 0)
            #expect(stopped.stderr.contains("avahi-daemon is not running"), "\(stopped.stderr)")
            let hint = FileManager.default.fileExists(atPath: "/run/systemd/system")
                ? "sudo systemctl enable --now avahi-daemon" : "sudo \(Self.checkout)/scripts/ensure-avahi.sh"
            #expect(stopped.stderr.contains(hint), "\(stopped.stderr)")
            try await rig.avahi("alpha", "start")

            // Running: ARGS reach handoffd, the first use creates an account, and it says where handoffctl is.
            let alpha = try makeRun(rig, "alpha", ["ARGS=--port 47811 --log-level info"])
            try await alpha.wait(seconds: 60, for: "the account") { $0.stderr.contains("created an account on first use") }
            #expect(alpha.stdout.contains("handoffctl is ") && alpha.stdout.contains("export PATH="), "\(alpha.stdout)")
            let status = try await rig.ctlJSON("alpha", DaemonStatus.self, ["status"])
            #expect(status.peerPort == 47811 && status.account != nil && status.uid == rig.user.uid, "\(status)")

            // A mistyped JOIN code stops make run at once, saying what is wrong and where codes come from.
            let typo = try makeRun(rig, "bravo", ["JOIN=K7Q2-M9XT-4HVN"])
            #expect(await typo.exitStatus() != 0)
            #expect(typo.stderr.contains("an invite code has 28 letters") && typo.stderr.contains("handoffctl account invite"), "\(typo.stderr)")
            // A well-formed code nobody issued: handoffd stops with the fix instead of running with no account.
            let unissued = InviteCode(secret: (0..<16).map { _ in UInt8.random(in: 0...255) }).text
            let wrong = try makeRun(rig, "bravo", ["JOIN=\(unissued)", "ARGS=--join-peer \(try await rig.address("alpha")):47811"])
            #expect(await wrong.exitStatus() != 0)
            #expect(wrong.stderr.contains("cannot join the account") && wrong.stderr.contains("make run JOIN=CODE"), "\(wrong.stderr)")
            #expect(try await rig.ctl("bravo", ["status"]).status == 3, "no daemon left running without an account")

            // The right code joins.
            let invite = try rig.ctlProcess("alpha", ["account", "invite"])
            try await invite.wait(for: "the code") { !$0.stdout.isEmpty }
            let code = String(invite.stdout.split(separator: "\n").first ?? "")
            let bravo = try makeRun(rig, "bravo", ["JOIN=\(code)", "ARGS=--log-level debug"])
            try await bravo.wait(seconds: 40, for: "the join") { $0.stderr.contains("joined an account") }
            #expect(await invite.exitStatus() == 0)
            // Ctrl-C's job, done to handoffd itself (make is its parent): make ends with it.
            for (host, make) in [("bravo", bravo), ("alpha", alpha)] {
                kill(try await rig.ctlJSON(host, DaemonStatus.self, ["status"]).pid, SIGTERM)
                _ = await make.exitStatus()
            }
        }
    }
}

/// README.md's tour, every command as written there, as a normal user on two simulated hosts
/// (scripts/tour.sh; it says which command failed, and how).
@Suite(.heavy, .timeLimit(.minutes(5))) struct ReadmeTourTests {
    @Test func theReadmeTourRunsAsWritten() async throws {
        if let reason = Rig.unavailableReason {
            Issue.record(Comment(rawValue: reason))
            return
        }
        let tour = try await Subprocess.run(MakeRunTests.checkout + "/scripts/tour.sh", [])
        #expect(tour.status == 0, "\(tour.stderr.suffix(6000))")
        #expect(tour.stderr.contains("the README's tour passed"), "\(tour.stderr.suffix(2000))")
    }
}
