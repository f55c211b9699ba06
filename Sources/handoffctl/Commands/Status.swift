import ArgumentParser
import HandoffAPI
import HandoffClient

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show what handoffd is doing.")

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Flag(help: "Print the local API's status object.")
    var json = false

    func run() throws {
        let status = try global.client(root).status()
        if json {
            try Terminal.json(status)
            return
        }
        Terminal.out("handoffd \(status.version) running (pid \(status.pid), uid \(status.uid)) since \(status.startedAt.rfc3339)")
        Terminal.out("  socket:    \(safe(status.socketPath))")
        Terminal.out("  state:     \(safe(status.stateDirectory))")
        Terminal.out("  current:   \(status.currentActivity.map(HumanFormat.summary) ?? "none")")
        Terminal.out("  limit:     \(status.maximumActivityBytes) bytes per activity")
    }
}
