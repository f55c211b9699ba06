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
}
