import ArgumentParser
import HandoffAPI
import HandoffClient

struct AccountAcceptKey: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accept-key",
        abstract: "Take the account key another device offers this one.",
        discussion: """
            After `handoffctl account transfer-key THIS-DEVICE` on the device holding the key \
            (`handoffctl account show` says when an offer waits). This device then invites, \
            removes and renames devices.
            """
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Flag(help: "Print the local API's answer as JSON.")
    var json = false

    func run() throws {
        let info = try global.client(root).send(.acceptKey)
        if json { return try Terminal.json(info) }
        AccountShow.describe(info).forEach(Terminal.out)
    }
}
