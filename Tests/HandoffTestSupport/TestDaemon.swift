import Foundation
import HandoffAPI
import HandoffClient
import DaemonCore
import HandoffDaemon
import HandoffDiscovery
import HandoffModel
import Logging

/// A real handoffd, in this test process, on its own temp directory: socket, state and all.
public final class TestDaemon: Sendable {
    public let directory: String
    public let daemon: HandoffDaemon
    private let task: Task<Void, any Error>

    public var socketPath: String { daemon.configuration.socketPath }
    public var stateDirectory: String { daemon.configuration.stateDirectory }
    /// The local API, waiting as long as a loaded machine may take (a test's own guard says what
    /// hung): longer than any of the test daemons' deadlines, so that it never races one.
    public var client: HandoffClient { HandoffClient(socketPath: socketPath, timeoutSeconds: 120) }
    /// `127.0.0.1:PORT`, what other test daemons dial.
    public var peerAddress: String { "127.0.0.1:\(daemon.peerPort)" }

    /// Starts a daemon and returns once its socket accepts connections. Pass `directory` to reuse
    /// the state of a previous daemon (restart tests).
    /// Peers are accepted on 127.0.0.1 at a free port (`peerAddress`).
    /// Discovery runs on `network` (in memory): daemons started on the same one find each other.
    public static func start(
        directory: String? = nil,
        limits: ActivityLimits = ActivityLimits(),
        network: DiscoveryNetwork = DiscoveryNetwork(),
        configure: (inout DaemonConfiguration) -> Void = { _ in }
    ) async throws -> TestDaemon {
        let dir = try directory ?? TempDirectory.make()
        var configuration = DaemonConfiguration(
            socketPath: dir + "/run/handoffd.sock",
            stateDirectory: dir + "/state/handoff",
            limits: limits,
            peerPort: 0,
            peerBindAddresses: ["127.0.0.1"]
        )
        configuration.discovery = InMemoryDiscovery(network: network)
        // Deadlines a loaded 2-core machine cannot race (docs/testing.md): apps and devices in
        // this process answer when the scheduler lets them. A test about a deadline sets it.
        configuration.deadlines = TestDaemon.generousDeadlines
        configuration.saveWindow = .seconds(30)
        // Apps are looked for only where a test puts them, never in this machine's own.
        configuration.handlerEnvironment = [
            "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": dir, "XDG_DATA_HOME": dir + "/share", "XDG_DATA_DIRS": dir + "/system-share",
        ]
        configure(&configuration)
        let daemon = try HandoffDaemon(configuration: configuration, logger: TestLogger.make("handoffd"))
        let task = Task { try await daemon.run(handleSignals: false) }
        do {
            try await daemon.waitUntilReady()
        } catch {
            _ = try? await task.value
            throw error
        }
        return TestDaemon(directory: dir, daemon: daemon, task: task)
    }

    public static let generousDeadlines = Deadlines(
        appAnswer: .seconds(60), peerRequest: .seconds(60), membershipRequest: .seconds(60), localRequest: .seconds(60), fileRequest: .seconds(60),
        streamTake: .seconds(60), clipboardTake: .seconds(60)
    )

    private init(directory: String, daemon: HandoffDaemon, task: Task<Void, any Error>) {
        self.directory = directory
        self.daemon = daemon
        self.task = task
    }

    /// Graceful shutdown, as SIGTERM does; waits for it to finish.
    public func stop() async throws {
        await daemon.shutdown()
        try await task.value
    }

    /// Stops the daemon and deletes its directory.
    public func finish() async throws {
        try await stop()
        TempDirectory.remove(directory)
    }
}

public struct TestFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

public enum TestLogger {
    /// Quiet unless HANDOFF_TEST_LOG=debug (or another level) asks for logs on stderr.
    public static func make(_ label: String) -> Logger {
        guard let levelName = ProcessInfo.processInfo.environment["HANDOFF_TEST_LOG"],
            let level = Logger.Level(rawValue: levelName)
        else {
            return Logger(label: label, factory: { _ in SwiftLogNoOpLogHandler() })
        }
        var logger = Logger(label: label, factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = level
        return logger
    }
}

public enum TempDirectory {
    public static func make(prefix: String = "handoff-test") throws -> String {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        guard let result = mkdtemp(&template) else { throw TestFailure("mkdtemp failed: \(errno)") }
        return String(cString: result)
    }

    public static func remove(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }
}
