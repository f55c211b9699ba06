import ArgumentParser
import HandoffAPI
import HandoffClient

struct DevicesRemove: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Remove a device from the account for good.",
        discussion: """
            The device is refused by this one at once, and by every other device as soon as it \
            has talked to one that knows (handoffctl account sync).
            """
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Argument(help: "The device's id, a unique start of it, or its exact name.")
    var id: String

    @Flag(help: "Print the local API's answer as JSON.")
    var json = false

    func run() throws {
        let removed = try global.client(root).send(.removeDevice(id))
        if json { return try Terminal.json(removed) }
        Terminal.out("removed \(removed.id.text) \(safe(removed.name))")
    }
}
