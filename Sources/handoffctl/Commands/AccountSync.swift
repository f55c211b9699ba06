import ArgumentParser
import HandoffAPI
import HandoffClient

struct AccountSync: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Talk to one device now and exchange account state with it.",
        discussion: "Devices do this whenever they meet; this is how removals spread. Useful to check that a device accepts this one."
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Option(help: ArgumentHelp("The device to talk to.", valueName: "host:port"))
    var peer: String

    @Flag(help: "Print the local API's answer as JSON.")
    var json = false

    func run() throws {
        let result = try global.client(root).sync(SyncRequest(peer: peer))
        if json { return try Terminal.json(result) }
        Terminal.out(
            "\(safe(result.peerName)) (\(result.peerID.short)…) accepted this device; account state version \(result.stateVersion)\(result.updated ? " (updated)" : "")"
        )
    }
}
