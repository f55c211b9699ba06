import Foundation
import HandoffAPI
import HandoffModel
import HandoffTestSupport
import Testing

/// The built executables as a user meets them.
@Suite(.timeLimit(.minutes(3))) struct BinaryTests {
    /// The CLI must start fast and must not pull in the daemon's C libraries.
    @Test func handoffctlLinksNeitherOpenSSLNorDNSSD() async throws {
        let ldd = try await Subprocess.run("/usr/bin/ldd", [CLI.handoffctl])
        #expect(ldd.status == 0, "\(ldd)")
        for library in ["libssl", "libcrypto", "libdns_sd", "libavahi", "libFoundation.so", "NIO"] {
            #expect(!ldd.stdout.contains(library), "handoffctl links \(library):\n\(ldd.stdout)")
        }
    }

    @Test(arguments: [SIGTERM, SIGINT])
    func handoffdStopsGracefullyAndKeepsTheActivity(signal: Int32) async throws {
        let home = try DaemonHome()
        defer { home.remove() }
        let env = home.environment
        let socket = home.socketPath
        let first = try await home.start()
        let become = try await Subprocess.run(
            CLI.handoffctl, ["become-current", "--type", "com.example.editor.edit", "--title", "Survivor"], environment: env
        )
        #expect(become.status == 0, "\(become)")
        #expect(try await first.stop(signal: signal) == 0, "graceful exit status: \(first.stderr)")
        #expect(!FileManager.default.fileExists(atPath: socket), "the socket is removed")
        #expect(first.stderr.contains("handoffd stopped"))

        let second = try await home.start()
        let current = try await Subprocess.run(CLI.handoffctl, ["current", "--json"], environment: env)
        let activity = try LocalAPIJSON.decoder().decode(Activity.self, from: Data(current.stdout.utf8))
        #expect(activity.id.lowercasedString == become.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(activity.title == "Survivor")
        #expect(try await second.stop() == 0)
    }

    /// `make run`: the first start creates an account, later ones keep it; or it joins with a code.
    @Test func firstUseCreatesOrJoinsAnAccountOnce() async throws {
        let first = try DaemonHome()
        defer { first.remove() }
        let a = try await first.start(["--create-account"])
        let ctl = { (home: DaemonHome, args: [String]) in try await Subprocess.run(CLI.handoffctl, args, environment: home.environment) }
        try await a.wait(for: "the account") { _ in FileManager.default.fileExists(atPath: first.stateDirectory + "/account") }
        let created = try LocalAPIJSON.decoder().decode(AccountInfo.self, from: Data(try await ctl(first, ["account", "show", "--json"]).stdout.utf8))
        #expect(try await a.stop() == 0)
        let again = try await first.start(["--create-account"])
        let kept = try LocalAPIJSON.decoder().decode(AccountInfo.self, from: Data(try await ctl(first, ["account", "show", "--json"]).stdout.utf8))
        #expect(kept.accountID == created.accountID, "not created twice")

        let status = try LocalAPIJSON.decoder().decode(DaemonStatus.self, from: Data(try await ctl(first, ["status", "--json"]).stdout.utf8))
        let invite = try RunningProcess(CLI.handoffctl, ["account", "invite"], environment: first.environment)
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
