import ArgumentParser
import HandoffAPI
import HandoffClient

struct ResignCurrent: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resign-current",
        abstract: "Withdraw this device's current activity from your other devices.",
        discussion: "Succeeds when there is nothing to withdraw, and says so on stderr."
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Flag(help: "Print the local API's answer as JSON.")
    var json = false

    func run() throws {
        let response = try global.client(root).send(.resignCurrent)
        if json {
            try Terminal.json(response)
        } else if let resigned = response.resigned {
            Terminal.out(resigned.id.lowercasedString)
        } else {
            Terminal.diagnostic("handoffctl: there was no current activity\n")
        }
    }
}
