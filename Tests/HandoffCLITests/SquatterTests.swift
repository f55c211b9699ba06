import Foundation
import HandoffTestSupport
import Testing

/// Without a runtime directory (cron, `sudo -i`), handoffctl finds handoffd in `/tmp/handoff-UID`
/// — where any local user can get first. Another user (root here: the test needs a second user,
/// and root is one) squats that directory with a listening socket: handoffctl sends it nothing,
/// and says why. Needs root, to be that other user.
@Suite(.serialized) struct SquatterTests {
    static let server = """
        import os, socket, sys
        path, log = sys.argv[1], sys.argv[2]
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path); os.chmod(path, 0o777); s.listen(8)
        print("listening", flush=True)
        while True:
            c, _ = s.accept()
            c.settimeout(2)
            got = b""
            try:
                while chunk := c.recv(65536): got += chunk
            except OSError: pass
            with open(log, "a") as f: f.write(f"{len(got)}\\n")
            c.close()
        """

    @Test func aSquattedRuntimeDirectoryGetsNothing() async throws {
        guard geteuid() == 0 else {
            Issue.record("needs root: the squatter is another user (run `make test` as root)")
            return
        }
        let home = try DaemonHome()
        let user = home.user
        guard !FileManager.default.fileExists(atPath: "/run/user/\(user.uid)") else {
            Issue.record("/run/user/\(user.uid) exists: handoffctl would not use /tmp/handoff-\(user.uid)")
            return
        }
        let squatted = "/tmp/handoff-\(user.uid)"
        let log = try TempDirectory.make() + "/received"
        var environment = home.environment
        environment["XDG_RUNTIME_DIR"] = nil
        let ctl = try user.product("handoffctl")

        // 1. The directory is someone else's (0755, root's): refused before connecting.
        try? FileManager.default.removeItem(atPath: squatted)
        try FileManager.default.createDirectory(atPath: squatted, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
        defer { try? FileManager.default.removeItem(atPath: squatted) }
        var listener = try RunningProcess("/usr/bin/python3", ["-c", Self.server, squatted + "/handoffd.sock", log])
        try await listener.wait(for: "the squatter to listen") { $0.stdout.contains("listening") }
        let argv = user.command([ctl, "become-current", "--type", "com.example.secret", "--title", "Payroll"], environment: environment)
        let theirs = try await Subprocess.run(argv[0], Array(argv.dropFirst()))
        #expect(theirs.status == 4, "\(theirs)")
        #expect(theirs.stderr.contains("/tmp/handoff-\(user.uid) is not your private directory") && theirs.stderr.contains("nothing was sent"), "\(theirs.stderr)")
        // The same directory spelt with a doubled slash is the same directory (the quick path's too).
        for command in [["status"], ["continue", "desk", "--json"]] {
            let doubled = user.command([ctl, "--socket", squatted + "//handoffd.sock"] + command, environment: environment)
            let viaDoubled = try await Subprocess.run(doubled[0], Array(doubled.dropFirst()))
            #expect(viaDoubled.status == 4 && viaDoubled.stderr.contains("is not your private directory"), "\(command): \(viaDoubled)")
        }
        _ = try await listener.stop(signal: SIGKILL)

        // …and handoffd, started the same way, refuses it before it opens anything: it never
        //    listened for devices (before, its TCP port was up first).
        let daemonArgv = user.command([try user.product("handoffd"), "--port", "0", "--listen", "127.0.0.1", "--log-level", "debug"], environment: environment)
        let daemon = try await Subprocess.run(daemonArgv[0], Array(daemonArgv.dropFirst()))
        #expect(daemon.status != 0 && daemon.stderr.contains("/tmp/handoff-\(user.uid) belongs to uid 0"), "\(daemon)")
        #expect(!daemon.stderr.contains("listening for devices"), "handoffd listened before it refused: \(daemon.stderr)")

        // 2. The directory is the user's and private, but the socket in it is served by another
        //    user: refused after connecting, before a byte is sent.
        try FileManager.default.removeItem(atPath: squatted)
        try user.makeDirectory(squatted)
        listener = try RunningProcess("/usr/bin/python3", ["-c", Self.server, squatted + "/handoffd.sock", log])
        try await listener.wait(for: "the squatter to listen") { $0.stdout.contains("listening") }
        let served = try await Subprocess.run(argv[0], Array(argv.dropFirst()))
        #expect(served.status == 4, "\(served)")
        #expect(served.stderr.contains("is served by another user (uid 0)") && served.stderr.contains("nothing was sent"), "\(served.stderr)")
        try await Task.sleep(for: .seconds(3))  // the squatter's read times out and logs what it got
        _ = try await listener.stop(signal: SIGKILL)
        let received = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(received.split(separator: "\n") == ["0"], "the squatter received nothing: \(received)")
    }
}
