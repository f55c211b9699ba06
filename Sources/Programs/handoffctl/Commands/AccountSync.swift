import ArgumentParser
import HandoffAPI
import HandoffClient

struct AccountSync: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Talk to one device now and exchange account state with it.",
        discussion: """
            PEER is what `continue` takes: a device name, a unique start of its id, or HOST:PORT. \
            Devices do this whenever they meet; this is how removals spread. Useful to check that \
            a device accepts this one.
            """
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Argument(help: "The device to talk to.")
    var peer: String?

    /// The form before PEER was an argument; kept so that scripts keep working.
    @Option(name: .customLong("peer"), help: .hidden)
    var peerOption: String?

    @Flag(help: "Print the local API's answer as JSON.")
    var json = false

    func validate() throws {
        guard (peer == nil) != (peerOption == nil) else {
            throw ValidationError("name one device: handoffctl account sync PEER (a name, an id start, or HOST:PORT)")
        }
    }

    func run() throws {
        let result = try global.client(root).send(.sync(SyncRequest(peer: peer ?? peerOption ?? "")))
        if json { return try Terminal.json(result) }
        Terminal.out(
            "\(safe(result.peerName)) (\(result.peerID.short)…) accepted this device; account state version \(result.stateVersion)\(result.updated ? " (updated)" : "")"
        )
    }
}
