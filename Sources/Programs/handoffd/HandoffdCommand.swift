import ArgumentParser
import DaemonCore
import HandoffAPI
import HandoffDaemon
import HandoffModel
import HandoffSystem
import Logging
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// The entry point. The daemon's tasks prefer NIO's event loop: on Linux the default executor is
/// libdispatch's global queues, whose first worker starts a monitor that wakes the process every
/// second for good (docs/platform.md, "Waiting without waking"); an event loop sleeps in epoll
/// until there is work or a deadline.
@main
enum HandoffdMain {
    static func main() async {
        HandoffDaemon.tuneProcessForStreams()
        await ProgramExecutor.run(on: EventLoopTasks(MultiThreadedEventLoopGroup.singleton)) {
            // `handoffd` alone, as systemd starts it, has nothing to parse: ArgumentParser's first
            // parse (reflection over every option) would add to every start (docs/benchmarks.md).
            if CommandLine.arguments.count == 1 {
                await DaemonOptions().runAsMain()
            } else {
                await HandoffdCommand.main()
            }
        }
    }
}

/// handoffd: parse flags, set up logging, run the daemon's services until SIGTERM/SIGINT.
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

    @Option(help: ArgumentHelp("Read only this configuration file.", valueName: "file"))
    var config: String?

    @Option(help: ArgumentHelp("TCP port other devices connect to (config: port).", valueName: "port"))
    var port: Int?

    @Option(name: .customLong("listen"), help: ArgumentHelp("Address to accept devices on; repeatable (config: listen).", valueName: "ip"))
    var listen: [String] = []

    @Option(
        name: .customLong("max-activity-bytes"),
        help: ArgumentHelp("Hard cap on an encoded activity (config: max_activity_bytes).", valueName: "bytes")
    )
    var maximumActivityBytes: Int?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical (config: log_level).")
    var logLevel: String?

    @Option(name: .customLong("peer"), help: ArgumentHelp("A device to keep a session with without multicast; repeatable (config: peers).", valueName: "host:port"))
    var peers: [String] = []

    @Option(help: ArgumentHelp("What opens a continued web page when no app handles it (config: browser).", valueName: "command"))
    var browser: String?

    @Flag(name: .customLong("create-account"), help: "If this device has no account yet, create one (what `make run` does on first use).")
    var createAccount = false

    @Option(name: .customLong("join"), help: ArgumentHelp("If this device has no account yet, join the one inviting with CODE.", valueName: "code"))
    var joinCode: String?

    @Option(name: .customLong("join-peer"), help: ArgumentHelp("Where the inviting device is, for --join.", valueName: "host:port"))
    var joinPeer: String?

    var options: DaemonOptions {
        DaemonOptions(
            socket: socket, stateDirectory: stateDirectory, config: config, port: port, listen: listen, maximumActivityBytes: maximumActivityBytes,
            logLevel: logLevel, peers: peers, browser: browser, createAccount: createAccount, joinCode: joinCode, joinPeer: joinPeer
        )
    }

    func run() async throws {
        try await options.run()
    }

    func validate() throws {
        if let logLevel, !DaemonSettings.logLevels.contains(logLevel) {
            throw ValidationError("--log-level must be one of \(DaemonSettings.logLevels.joined(separator: ", "))")
        }
        if let maximumActivityBytes, maximumActivityBytes < 1024 {
            throw ValidationError("--max-activity-bytes must be at least 1024")
        }
        if createAccount, joinCode != nil {
            throw ValidationError("--create-account and --join exclude each other")
        }
        if let port, !(0...65535).contains(port) {
            throw ValidationError("--port must be from 1 to 65535 (0 picks a free port)")
        }
        if let joinCode {
            do {
                _ = try InviteCode(parsing: joinCode)
            } catch {
                throw ValidationError("--join \(joinCode): \(error.description) (handoffctl account invite, on the device that has the account, prints it)")
            }
        }
    }
}

/// What handoffd runs with: the flags' values, or their defaults when it was given none.
struct DaemonOptions {
    var socket = HandoffPaths.defaultSocketPath()
    var stateDirectory = HandoffPaths.stateDirectory()
    var config: String?
    var port: Int?
    var listen: [String] = []
    var maximumActivityBytes: Int?
    var logLevel: String?
    var peers: [String] = []
    var browser: String?
    var createAccount = false
    var joinCode: String?
    var joinPeer: String?

    /// Ends the process as ArgumentParser's `main` would: the command's exit code, or 1 for any
    /// other error — said as handoffd says its own ("handoffd: error: …", not "Error: …").
    func runAsMain() async {
        do {
            try await run()
        } catch let code as ExitCode {
            exit(code.rawValue)
        } catch {
            FileHandleStderr.write("handoffd: error: \(error)\n")
            exit(1)
        }
    }

    /// The configuration file to name in messages: the one given, else the last one read, else
    /// the user's own (where a setting would go).
    func configFile(read: [String]) -> String {
        config ?? read.last ?? DaemonSettings.defaultFiles().last!
    }

    /// Defaults, then the configuration files, then flags; and the files read.
    func settings() throws(ConfigFile.ParseError) -> (DaemonSettings, read: [String]) {
        var settings = DaemonSettings()
        let read: [String]
        if let config {
            read = try settings.load(files: [config], requireAll: true)
        } else {
            read = try settings.load(files: DaemonSettings.defaultFiles())
        }
        if let port { settings.port = port }
        if !listen.isEmpty { settings.listen = listen }
        if let maximumActivityBytes { settings.maxActivityBytes = maximumActivityBytes }
        if let logLevel { settings.logLevel = logLevel }
        if !peers.isEmpty { settings.peers = peers }
        if let browser { settings.browser = browser }
        return (settings, read)
    }

    /// SIGHUP: the configuration is read again; what can change while running does (log level,
    /// handlers, browser), the rest is named as needing a restart. A bad file changes nothing.
    func reload(_ daemon: HandoffDaemon, level: DaemonLogHandler.Level, logger: Logger) {
        do {
            let (settings, _) = try settings()
            level.current = Logger.Level(rawValue: settings.logLevel) ?? .info
            let needRestart = try daemon.reload(settings)
            if !needRestart.isEmpty {
                logger.warning(
                    "some settings take effect only after a restart",
                    metadata: ["settings": "\(needRestart.joined(separator: ", "))", "fix": "systemctl --user restart handoffd"]
                )
            }
        } catch let error as ConfigFile.ParseError {
            logger.error("configuration not reloaded; the running one stays", metadata: ["error": "\(error)"])
        } catch {
            logger.error("configuration not reloaded; the running one stays", metadata: ["error": "\(error)"])
        }
    }

    func run() async throws {
        let settings: DaemonSettings
        let read: [String]
        do {
            (settings, read) = try self.settings()
        } catch {
            FileHandleStderr.write("handoffd: error: \(error)\n")
            throw ExitCode(2)
        }
        let level = DaemonLogHandler.Level(Logger.Level(rawValue: settings.logLevel) ?? .info)
        let format = DaemonLogHandler.detectFormat()
        LoggingSystem.bootstrap { label in DaemonLogHandler(label: label, format: format, level: level) }
        let logger = Logger(label: "handoffd")
        var configuration = DaemonConfiguration(settings: settings, socketPath: socket, stateDirectory: stateDirectory)
        configuration.notifier = SystemdNotifier.fromProcessEnvironment()
        configuration.configFile = configFile(read: read)
        if let joinCode {
            configuration.firstUse = .join(code: joinCode, peer: joinPeer)
        } else if createAccount {
            configuration.firstUse = .createAccount
        }
        do {
            // Until the daemon's hangup service traps it, a SIGHUP (systemctl reload) must not end
            // the daemon, as its default action would.
            signal(SIGHUP, SIG_IGN)
            let daemon = try HandoffDaemon(configuration: configuration, logger: logger)
            try await daemon.run { reload(daemon, level: level, logger: logger) }
        } catch let error as DaemonError {
            FileHandleStderr.write("handoffd: error: \(error)\n")
            throw ExitCode(error.code == .alreadyRunning ? 3 : error.code == .firstUse ? 4 : 1)
        }
    }
}

enum FileHandleStderr {
    static func write(_ text: String) {
        var bytes = Array(text.utf8)
        _ = Glibc.write(2, &bytes, bytes.count)
    }
}
