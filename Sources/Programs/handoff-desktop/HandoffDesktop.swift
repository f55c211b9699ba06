import ArgumentParser
import DesktopAgent
import Foundation
import HandoffAPI
import HandoffClient
import HandoffDBus
import HandoffSystem
import Logging
import UnixSignals

/// The entry point. The agent's tasks prefer one thread of its own: on Linux the default executor
/// is libdispatch's global queues, whose first worker starts a monitor that wakes the process
/// every second for good (docs/platform.md, "Waiting without waking"). The agent's work is a few
/// messages a minute; one thread carries it.
@main
enum HandoffDesktopMain {
    static let tasks = DiskThread(name: "handoff-tasks")

    static func main() async {
        // A display server or app gone mid-write (libxcb writes with writev; an app's paste pipe)
        // is an error to handle, never the end of the agent.
        signal(SIGPIPE, SIG_IGN)
        await ProgramExecutor.run(on: tasks.tasks) { await HandoffDesktop.main() }
    }
}

/// `handoff-desktop` runs the agent; `handoff-desktop activate` and `open` are what handoffd
/// runs to hand a continuation or a document to a DBusActivatable app (docs/dbus.md).
struct HandoffDesktop: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "handoff-desktop",
        abstract: "Shows what your other devices are doing as notifications, and continues it with one click.",
        discussion: "Runs in your graphical session, next to handoffd (docs/desktop.md).",
        version: HandoffVersion.current,
        subcommands: [Agent.self, Activate.self, Open.self],
        defaultSubcommand: Agent.self
    )

    /// The session bus: `--bus`, else the session's.
    static func connect(_ bus: String?, environment: [String: String]) throws -> DBusConnection {
        guard let address = bus ?? DBusConnection.sessionBusAddress(environment: environment) else {
            throw Failure("no session bus: run handoff-desktop in your graphical session (DBUS_SESSION_BUS_ADDRESS or XDG_RUNTIME_DIR is not set)")
        }
        do {
            return try DBusConnection.connect(address: address)
        } catch {
            throw Failure("cannot connect to the session bus at \(address): \(error.message)")
        }
    }
}

/// The session agent (docs/desktop.md): started by the user unit bound to
/// graphical-session.target, or by XDG autostart; stops on SIGTERM/SIGINT or when the session
/// bus goes away.
struct Agent: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Runs the agent (what handoff-desktop alone does)."
    )

    /// The exit status when another agent has the session.
    static let alreadyRunning: Int32 = 3

    @Option(name: .long, help: "handoffd's socket (default: $XDG_RUNTIME_DIR/handoff/handoffd.sock).")
    var socket: String?

    @Option(name: .long, help: "The session bus address (default: $DBUS_SESSION_BUS_ADDRESS, else $XDG_RUNTIME_DIR/bus).")
    var bus: String?

    @Option(name: .long, help: "trace, debug, info, notice, warning or error.")
    var logLevel: Logger.Level = .info

    /// Tests start the panel after the agent, or none at all, and need not wait the default.
    @Option(name: .long, help: .hidden)
    var statusIconGrace: Double = 30

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let level = logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "handoff-desktop")
        let connection = try HandoffDesktop.connect(bus, environment: environment)
        let agent = DesktopAgent(
            bus: connection, client: HandoffClient(socketPath: socket ?? HandoffPaths.defaultSocketPath(environment: environment)),
            session: environment, options: DesktopAgent.Options(environment: environment, statusIconGrace: .milliseconds(Int64(statusIconGrace * 1000))),
            logger: logger
        )
        let outcome = await withTaskGroup(of: DBusError?.self) { group in
            group.addTask {
                do throws(DBusError) {
                    try await agent.run()
                    return nil
                } catch {
                    return error
                }
            }
            group.addTask {
                for await _ in await UnixSignalsSequence(trapping: .sigterm, .sigint) { break }
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        connection.close()
        if let outcome {
            if outcome.name == DBusError.addressInUseName {
                // Its own status: the unit does not restart for it (RestartPreventExitStatus).
                FileHandle.standardError.write(Data("Error: handoff-desktop already runs in this session (\(DesktopAgent.busName) is taken)\n".utf8))
                throw ExitCode(Agent.alreadyRunning)
            }
            throw Failure("cannot start: \(outcome.message)")
        }
    }
}

/// Hands a continuation to the running instance of a DBusActivatable app (or has the bus start
/// it): what handoffd runs instead of the `.desktop` file's `Exec` line. Exits 0 once the app
/// took the call; 1 when it certainly did not get it (no bus, no such app, object or action),
/// and handoffd runs the `Exec` line; 2 when it may have (no answer in time), and handoffd does
/// not start it a second time.
struct Activate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Hands a continued activity to a DBusActivatable app (org.freedesktop.Application.ActivateAction handoff-continue)."
    )

    @Option(name: .long, help: "The session bus address (default: $DBUS_SESSION_BUS_ADDRESS, else $XDG_RUNTIME_DIR/bus).")
    var bus: String?

    @Argument(help: "The app's desktop file id, e.g. org.example.Editor.desktop.")
    var desktopFileID: String

    @Argument(help: "The activity file handoffd wrote.")
    var activityFile: String

    func run() async throws {
        try await HandoffDesktop.overDBus(desktopFileID, bus: bus, what: "the activity") { connection, id, environment throws(DBusError) in
            try await ApplicationActivation.activate(connection, applicationID: id, activityFile: activityFile, session: environment)
        }
    }
}

/// Hands a continued document to the running instance of a DBusActivatable app that opens its
/// type (or has the bus start it): `org.freedesktop.Application.Open`. Exit statuses as
/// `activate`'s.
struct Open: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Hands a continued document to a DBusActivatable app (org.freedesktop.Application.Open)."
    )

    @Option(name: .long, help: "The session bus address (default: $DBUS_SESSION_BUS_ADDRESS, else $XDG_RUNTIME_DIR/bus).")
    var bus: String?

    @Argument(help: "The app's desktop file id, e.g. org.gnome.TextEditor.desktop.")
    var desktopFileID: String

    @Argument(help: "The document's absolute path.")
    var file: String

    func run() async throws {
        try await HandoffDesktop.overDBus(desktopFileID, bus: bus, what: "the document") { connection, id, environment throws(DBusError) in
            try await ApplicationActivation.open(connection, applicationID: id, file: file, session: environment)
        }
    }
}

extension HandoffDesktop {
    /// Makes one call to the app `desktopFileID` names; exits 1 when it certainly did not reach
    /// it (handoffd then runs its `Exec` line), 2 when it may have.
    static func overDBus(
        _ desktopFileID: String, bus: String?, what: String,
        _ call: (DBusConnection, String, [String: String]) async throws(DBusError) -> Void
    ) async throws {
        guard let applicationID = ApplicationActivation.applicationID(desktopFileID: desktopFileID) else {
            throw Failure("\(desktopFileID) is not a D-Bus application id with .desktop (org.example.App.desktop)")
        }
        let environment = ProcessInfo.processInfo.environment
        let connection = try connect(bus, environment: environment)
        defer { connection.close() }
        do {
            try await call(connection, applicationID, environment)
        } catch {
            FileHandle.standardError.write(Data("Error: \(applicationID) did not take \(what): \(error)\n".utf8))
            throw ExitCode(ApplicationActivation.notDelivered(error) ? 1 : 2)
        }
    }
}

/// A one-line reason on stderr, and exit status 1.
struct Failure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
