import ArgumentParser
import HandoffAPI
import HandoffClient

#if canImport(Glibc)
import Glibc
#endif

@main
struct Handoffctl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "handoffctl",
        abstract: "Start something on one computer, continue it on another.",
        discussion: """
            handoffctl talks to your handoffd over its local socket. Data goes to stdout, \
            messages to stderr; --json prints the local API's types unchanged.

            EXIT STATUS
            \(ExitStatus.table)
            """,
        version: HandoffVersion.current,
        subcommands: [
            BecomeCurrent.self,
            Current.self,
            ResignCurrent.self,
            Watch.self,
            Peers.self,
            Continue.self,
            Streams.self,
            History.self,
            Clipboard.self,
            Link.self,
            Open.self,
            Account.self,
            Devices.self,
            Status.self,
            Config.self,
            Doctor.self,
        ]
    )

    /// `handoffctl --socket PATH status` as well as `handoffctl status --socket PATH`.
    @OptionGroup var global: GlobalOptions

    /// Our own entry point so that every failure becomes one line on stderr and a distinct status.
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        do {
            if let quick = QuickCommand(arguments) {
                try quick.run()
                return
            }
            if let mistyped = CommandSuggestion.check(arguments, root: Handoffctl.self) {
                Terminal.error(mistyped)
                Glibc.exit(ExitStatus.usage.rawValue)
            }
            var command = try parseAsRoot(arguments)
            try command.run()
        } catch let error as CLIError {
            Terminal.flush()
            Terminal.error(error.message)
            Glibc.exit(error.status.rawValue)
        } catch let error as HandoffClientError {
            Terminal.flush()
            Terminal.error(error.message)
            Glibc.exit(ExitStatus(error.code).rawValue)
        } catch {
            exit(withError: error)
        }
    }
}

/// Options every subcommand takes.
struct GlobalOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The daemon's socket (default: $XDG_RUNTIME_DIR/handoff/handoffd.sock).",
            valueName: "path"
        )
    )
    var socket: String?

    /// The socket given after the subcommand wins over one given before it.
    func client(_ root: Handoffctl) -> HandoffClient {
        HandoffClient(socketPath: socketPath(root))
    }

    func socketPath(_ root: Handoffctl) -> String {
        socket ?? root.global.socket ?? HandoffPaths.defaultSocketPath()
    }
}
