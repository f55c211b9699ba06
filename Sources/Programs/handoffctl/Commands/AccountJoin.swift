import ArgumentParser
import HandoffAPI
import HandoffClient

struct AccountJoin: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "join",
        abstract: "Join another device's account with the code it printed.",
        discussion: """
            The code is proved to the inviting device without being sent, over TLS 1.3 keyed by \
            it; a recording of the exchange does not let anyone guess it (docs/security.md).
            """
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Argument(help: "The code `handoffctl account invite` printed (any case, dashes optional).")
    var code: String

    @Option(help: ArgumentHelp("Where the inviting device is.", valueName: "host:port"))
    var peer: String?

    @Option(name: .customLong("device-name"), help: "This device's name (default: the host name).")
    var deviceName: String?

    @Flag(help: "Print the local API's answer as JSON.")
    var json = false

    func run() throws {
        let info = try global.client(root).send(.joinAccount(JoinAccountRequest(code: code, peer: peer, deviceName: deviceName)))
        if json { return try Terminal.json(info) }
        AccountShow.describe(info).forEach(Terminal.out)
    }
}
