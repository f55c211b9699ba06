import ArgumentParser
import HandoffAPI
import HandoffClient

struct Current: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show this device's current activity.",
        discussion: "Exits with status 16 when there is none."
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Flag(help: "Print the activity as the local API's JSON.")
    var json = false

    func run() throws {
        let response = try global.client(root).send(.currentActivity)
        if json {
            try Terminal.json(response.activity)
        } else {
            HumanFormat.activity(response.activity).forEach(Terminal.out)
        }
    }
}
