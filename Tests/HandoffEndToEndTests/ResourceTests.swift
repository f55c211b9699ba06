import Foundation
import HandoffAPI
import HandoffModel
import HandoffTestSupport
import Testing

/// Hundreds of continuation streams leave both daemons as they were: descriptors, threads and
/// memory. Seen: every file-backed stream left its file open in both daemons (328 streams, 328
/// descriptors on the same file and 46 MB more memory in the serving one). bench/soak runs the
/// same for a thousand continuations.
@Suite(.heaviest, .timeLimit(.minutes(5))) struct ResourceTests {
    @Test func streamsLeaveNothingBehindInEitherDaemon() async throws {
        await Rig.withHosts(["alpha", "bravo"]) { rig in
            let ends = ContinuationEndToEndTests()
            let (alphaID, _) = try await EndToEndTests().startPaired(rig)
            try await Rig.waitFor("bravo to reach alpha") { try await ends.peers(rig).contains { $0.id == alphaID && $0.reachable } }
            // 1 MiB for the streams that end whole; 4 MiB for those cut off (more than the sockets
            // between the hosts hold, so that they are still under way when cut).
            let file = rig.home("alpha") + "/payload"
            let big = rig.home("alpha") + "/big"
            #expect(try await rig.run("alpha", ["/bin/sh", "-c", "head -c 1048576 /dev/urandom > \(file) && head -c 4194304 /dev/urandom > \(big)"]).status == 0)
            let daemons = [try await ends.daemonPID(rig, "alpha"), try await ends.daemonPID(rig, "bravo")]
            let copy = rig.home("bravo") + "/copy"

            let server = try rig.ctlProcess("alpha", ["become-current", "--type", "org.example.Soak", "--title", "Soak", "--stream-file", file])
            try await server.wait(for: "the stream server to attach") { $0.stderr.contains("attached") }
            try await ends.waitUntilBravoSees(rig, title: "Soak")
            func fileStream() async throws {
                let r = try await rig.ctl("bravo", ["continue", "desk", "--stream-to", copy])
                guard r.status == 0 else { throw TestFailure("continue --stream-to: \(r)") }
                try FileManager.default.removeItem(atPath: copy)
            }
            // Warm: the first streams make what stays (pools, caches, the session's buffers).
            for _ in 0..<20 { try await fileStream() }
            let before = Usage(daemons)

            // 200 file streams, whole at both ends; what the last ones hold goes once they end (a
            // file is closed on a thread of its own, connections as their close completes).
            for _ in 0..<200 { try await fileStream() }
            try await Self.settle(daemons, like: before, files: rig.directory, "after 200 file streams")
            let afterFiles = Usage(daemons)

            _ = try await server.stop()
            let bigServer = try rig.ctlProcess("alpha", ["become-current", "--type", "org.example.Soak", "--title", "Big", "--stream-file", big])
            try await bigServer.wait(for: "the stream server to attach") { $0.stderr.contains("attached") }
            try await ends.waitUntilBravoSees(rig, title: "Big")

            // 20 cut by the receiving side: its reader takes 100 kB of 4 MB and leaves.
            let ctl = try rig.user.product("handoffctl")
            for _ in 0..<20 {
                let r = try await rig.run("bravo", ["/bin/sh", "-c", "\(ctl) continue desk --stream-to - | head -c 100000 > /dev/null"])
                #expect(r.status == 0, "\(r)")
            }
            _ = try await bigServer.stop()

            // 10 cut by the originating side: its app (handoffctl serving the file) is killed
            // while the stream waits for a receiver that stopped reading after 1 MB.
            for round in 0..<10 {
                let title = "Cut \(round)"
                let app = try rig.ctlProcess("alpha", ["become-current", "--type", "org.example.Soak", "--title", title, "--stream-file", big])
                try await app.wait(for: "the stream server to attach") { $0.stderr.contains("attached") }
                try await ends.waitUntilBravoSees(rig, title: title)
                let count = try await rig.ctlJSON("bravo", StreamsResponse.self, ["streams"]).streams.count
                let stalled = try RunningProcess(
                    Rig.script, ["exec", rig.name, "bravo"] + rig.user.command(["/bin/sh", "-c", "\(ctl) continue desk --stream-to - | (head -c 1000000 > /dev/null; sleep 60)"], environment: rig.environment("bravo"))
                )
                try await Rig.waitFor("1 MB to reach bravo's reader", seconds: 30) {
                    let streams = try await rig.ctlJSON("bravo", StreamsResponse.self, ["streams"]).streams
                    return streams.count > count && streams.last!.bytesReceived >= 1_000_000
                }
                _ = try await app.stop(signal: SIGKILL)
                try await Rig.waitFor("the stream to fail on bravo", seconds: 30) {
                    try await rig.ctlJSON("bravo", StreamsResponse.self, ["streams"]).streams.last?.state == .failed
                }
                _ = try await stalled.stop(signal: SIGKILL)
            }
            let streams = try await rig.ctlJSON("bravo", StreamsResponse.self, ["streams"]).streams
            #expect(streams.suffix(30).allSatisfy { $0.state == .failed }, "\(streams.suffix(30).map(\.state))")

            // What a stream holds goes when it ends (a file is closed on a thread of its own).
            try await Self.settle(daemons, like: before, files: rig.directory, "after 250 streams")
            let after = Usage(daemons)
            for (index, host) in ["alpha", "bravo"].enumerated() {
                print("250 streams: handoffd on \(host): descriptors \(before.descriptors[index]) -> \(afterFiles.descriptors[index]) -> \(after.descriptors[index]), threads \(before.threads[index]) -> \(after.threads[index]), anonymous memory \(before.anonymousKiB[index] / 1024) -> \(afterFiles.anonymousKiB[index] / 1024) -> \(after.anonymousKiB[index] / 1024) MB")
                #expect(afterFiles.descriptors[index] <= before.descriptors[index] + Self.slack, "\(host) holds descriptors after 200 file streams")
                #expect(after.threads[index] <= before.threads[index] + 2, "\(host) grew threads")
                // Before, each stream kept its buffers: 200 streams held ~30 MB. What a debug
                // build's allocator keeps around is far below 8 MB.
                #expect(after.anonymousKiB[index] - before.anonymousKiB[index] < 8 << 10, "\(host) grew by \((after.anonymousKiB[index] - before.anonymousKiB[index]) / 1024) MB")
            }
        }
    }

    /// What discovery may hold beyond `before` at any moment: one more DNS-SD reference, an avahi
    /// client of its own of about five descriptors (docs/platform.md), which comes and goes with
    /// what the network says — and 2 more.
    static let slack = 7

    /// Waits until neither daemon holds a descriptor on a stream's file (under `files`), and each
    /// holds at most `slack` more descriptors than `before`; else fails naming what they hold
    /// that they did not.
    static func settle(_ daemons: [pid_t], like before: Usage, files: String, _ when: String) async throws {
        do {
            try await Rig.waitFor("the daemons' descriptors back where they were \(when)") {
                let now = Usage(daemons)
                return now.targets.allSatisfy { !$0.contains { $0.hasPrefix(files) } }
                    && zip(now.descriptors, before.descriptors).allSatisfy { $0 <= $1 + slack }
            }
        } catch {
            let more = zip(daemons, before.targets).map { pid, earlier in
                var held = ProcessUsage.descriptorTargets(pid)
                for target in earlier { if let i = held.firstIndex(of: target) { held.remove(at: i) } }
                return held.sorted().joined(separator: ", ")
            }
            throw TestFailure("\(error); held now and not before: alpha [\(more[0])], bravo [\(more[1])]")
        }
    }

    /// Descriptors (and what they are open on), threads and anonymous memory (KiB) of some
    /// processes, now.
    struct Usage {
        let descriptors: [Int]
        let targets: [[String]]
        let threads: [Int]
        let anonymousKiB: [Int]

        init(_ pids: [pid_t]) {
            targets = pids.map(ProcessUsage.descriptorTargets)
            descriptors = targets.map(\.count)
            threads = pids.map(ProcessUsage.threads)
            anonymousKiB = pids.map(ProcessUsage.anonymousKiB)
        }
    }
}
