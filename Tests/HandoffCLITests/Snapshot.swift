import Foundation
import HandoffTestSupport
import Testing

/// Text snapshots under Tests/HandoffCLITests/Snapshots. A missing snapshot is written and the
/// test fails, so that every new snapshot is read by a person before it counts.
/// `UPDATE_SNAPSHOTS=1 swift test` rewrites them all (then review the diff).
enum Snapshot {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Snapshots")

    static func expect(_ actual: String, named name: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let url = directory.appendingPathComponent(name + ".txt")
        let update = ProcessInfo.processInfo.environment["UPDATE_SNAPSHOTS"] == "1"
        guard !update, let expected = try? String(contentsOf: url, encoding: .utf8) else {
            try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try? actual.write(to: url, atomically: true, encoding: .utf8)
            if !update {
                Issue.record("new snapshot \(name) written to \(url.path); review it and run again", sourceLocation: sourceLocation)
            }
            return
        }
        #expect(actual == expected, "snapshot \(name) differs (UPDATE_SNAPSHOTS=1 to accept)", sourceLocation: sourceLocation)
    }

    /// Replaces what changes from run to run (ids, times, pids, temp paths) with stable markers.
    static func normalize(_ text: String, directory: String? = nil) -> String {
        var t = text
        if let directory { t = t.replacingOccurrences(of: directory, with: "<dir>") }
        t = t.replacingOccurrences(
            of: #"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"#,
            with: "<uuid>",
            options: .regularExpression
        )
        t = t.replacingOccurrences(
            of: #"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z"#,
            with: "<time>",
            options: .regularExpression
        )
        t = t.replacingOccurrences(of: #"pid \d+"#, with: "pid <pid>", options: .regularExpression)
        t = t.replacingOccurrences(of: #""pid": \d+"#, with: #""pid": <pid>"#, options: .regularExpression)
        t = t.replacingOccurrences(of: #"port:( +)\d+"#, with: "port:$1<port>", options: .regularExpression)
        t = t.replacingOccurrences(of: #""peerPort": \d+"#, with: #""peerPort": <port>"#, options: .regularExpression)
        // Whether this machine has the browser command installed (xdg-utils).
        t = t.replacingOccurrences(of: #""found": (true|false)"#, with: #""found": <installed?>"#, options: .regularExpression)
        return t
    }
}

enum CLI {
    static let handoffctl = Subprocess.product("handoffctl")

    static func run(_ daemon: TestDaemon?, _ arguments: [String], stdin: Data? = nil) async throws -> ProcessResult {
        let socket = daemon.map { ["--socket", $0.socketPath] } ?? []
        return try await Subprocess.run(handoffctl, socket + arguments, stdin: stdin)
    }
}
