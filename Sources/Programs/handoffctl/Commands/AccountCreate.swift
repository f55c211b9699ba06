import ArgumentParser
import HandoffAPI
import HandoffClient

struct AccountCreate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Create an account, with this device as its first member.",
        discussion: "This device keeps the account's key: invite and remove devices from here."
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Option(help: "The account's name (default: \"USER's devices\").")
    var name: String?

    @Option(name: .customLong("device-name"), help: "This device's name (default: the host name).")
    var deviceName: String?

    @Flag(help: "Print the local API's answer as JSON.")
    var json = false

    func run() throws {
        let info = try global.client(root).send(.createAccount(CreateAccountRequest(name: name, deviceName: deviceName)))
        if json { return try Terminal.json(info) }
        AccountShow.describe(info).forEach(Terminal.out)
        Terminal.diagnostic("handoffctl: next, on this device: handoffctl account invite\n")
        Terminal.diagnostic("handoffctl: so that losing this device does not lose the account, make a recovery code and write it down: handoffctl account recovery-code\n")
    }
}
