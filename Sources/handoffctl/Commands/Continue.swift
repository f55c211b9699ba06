import ArgumentParser
import HandoffAPI
import HandoffClient
import HandoffModel

struct Continue: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Continue what another of your devices is doing.",
        discussion: """
            PEER is a device name, a unique start of its id (see handoffctl peers), or HOST:PORT. \
            The activity asked for is the one this device saw; if it changed meanwhile, that is \
            an error (status 17) rather than a surprise.
            """
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Argument(help: "The device to continue from.")
    var peer: String

    @Flag(help: "Print the activity as the local API's JSON.")
    var json = false

    func run() throws {
        let response = try global.client(root).continueActivity(ContinueRequest(peer: peer))
        if json { return try Terminal.json(response.activity) }
        Terminal.diagnostic("handoffctl: from \(safe(response.peerName)) (\(response.peerID.short)…):\n")
        HumanFormat.activity(response.activity).forEach(Terminal.out)
    }
}
