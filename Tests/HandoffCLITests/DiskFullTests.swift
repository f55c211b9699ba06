import Foundation
import HandoffAPI
import HandoffTestSupport
import Testing

/// A full disk under the state directory: every write that cannot be made says so clearly, and
/// what was saved before stays — in the daemon and on disk, across a restart. The state
/// directory is a small tmpfs (mounting it needs root; the daemon and handoffctl run as the
/// test user).
@Suite(.timeLimit(.minutes(2))) struct DiskFullTests {
    @Test func aFullDiskLosesNothingAndSaysWhy() async throws {
        guard geteuid() == 0 else {
            Issue.record("needs root: it mounts a small tmpfs as the state directory (run `make test` as root)")
            return
        }
        // A run that crashed left its tmpfs mounted: those go first.
        let mounts = (try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8)) ?? ""
        for line in mounts.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count > 2, fields[0] == "tmpfs", fields[1].hasPrefix("/tmp/handoff-"), fields[1].hasSuffix("/.local/state") else { continue }
            umount2(String(fields[1]), Int32(MNT_DETACH))
        }
        let home = try DaemonHome()
        defer { home.remove() }
        let state = home.directory + "/.local/state"
        try home.user.makeDirectory(home.directory + "/.local")
        try home.user.makeDirectory(state)
        let mounted = try await Subprocess.run("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=512k,mode=0700,uid=\(home.user.uid),gid=\(home.user.gid)", "tmpfs", state])
        guard mounted.status == 0 else { throw TestFailure("mount: \(mounted)") }
        defer { umount2(state, Int32(MNT_DETACH)) }  // before the home goes, whatever happened

        var daemon = try await home.start()
        #expect(try await home.ctl(["account", "create", "--device-name", "desk"]).status == 0)
        #expect(try await home.ctl(["become-current", "--type", "org.example.Before", "--title", "Before"]).status == 0)

        // Fill the disk as the user would (another program's files).
        let dd = home.user.command(["/bin/dd", "if=/dev/zero", "of=\(state)/filler", "bs=4k"], environment: home.environment)
        let fill = try await Subprocess.run(dd[0], Array(dd.dropFirst()))
        #expect(fill.stderr.contains("No space left"), "\(fill)")

        let after = try await home.ctl(["become-current", "--type", "org.example.After", "--title", "After"])
        #expect(after.status != 0, "\(after)")
        #expect(after.stderr.contains("no space left on the disk that holds") && after.stderr.contains("free some space"), "\(after.stderr)")
        #expect(try await home.ctl(["current"]).stdout.contains("Before"), "the previous activity stays current")
        let rename = try await home.ctl(["devices", "rename", "study"])
        #expect(rename.status != 0 && rename.stderr.contains("no space left"), "\(rename)")
        #expect(try await home.ctl(["devices"]).stdout.contains("desk"), "the previous name stays")
        #expect(daemon.isRunning)

        // What is on disk is the previous state, whole: a restart reads it back.
        _ = try await daemon.stop()
        daemon = try await home.start()
        #expect(try await home.ctl(["current"]).stdout.contains("Before"))
        #expect(try await home.ctl(["devices"]).stdout.contains("desk"))
        // Space again: everything works.
        try FileManager.default.removeItem(atPath: state + "/filler")
        #expect(try await home.ctl(["become-current", "--type", "org.example.After", "--title", "After"]).status == 0)
        _ = try await daemon.stop()
    }
}
