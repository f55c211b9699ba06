import ArgumentParser
import HandoffAPI
import HandoffDaemon
import HandoffModel
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// handoffd: parse flags, set up logging, run the daemon's services until SIGTERM/SIGINT.
@main
struct HandoffdCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "handoffd",
        abstract: "The handoff daemon: publishes your current activity and lets your other devices continue it.",
        discussion: """
            Runs in the foreground; stop it with SIGTERM or Ctrl-C. Normally started by systemd \
            (systemctl --user enable --now handoffd) or by `make run`.
            """,
        version: HandoffVersion.current
    )

    @Option(help: ArgumentHelp("Unix socket of the local API.", valueName: "path"))
    var socket: String = HandoffPaths.defaultSocketPath()

    @Option(name: .customLong("state-dir"), help: ArgumentHelp("Directory for keys and state (0700).", valueName: "path"))
    var stateDirectory: String = HandoffPaths.stateDirectory()

    @Option(
        name: .customLong("max-activity-bytes"),
        help: ArgumentHelp("Hard cap on an encoded activity.", valueName: "bytes")
    )
    var maximumActivityBytes: Int = ActivityLimits.defaultMaximumEncodedSize

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical")
        }
        guard maximumActivityBytes >= 1024 else {
            throw ValidationError("--max-activity-bytes must be at least 1024")
        }
    }

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "handoffd")
        let configuration = DaemonConfiguration(
            socketPath: socket,
            stateDirectory: stateDirectory,
            limits: ActivityLimits(maximumEncodedSize: maximumActivityBytes)
        )
        do {
            let daemon = try HandoffDaemon(configuration: configuration, logger: logger)
            try await daemon.run()
        } catch let error as DaemonError {
            FileHandleStderr.write("handoffd: error: \(error)\n")
            throw ExitCode(error.code == .alreadyRunning ? 3 : 1)
        }
    }
}

enum FileHandleStderr {
    static func write(_ text: String) {
        var bytes = Array(text.utf8)
        _ = Glibc.write(2, &bytes, bytes.count)
    }
}

