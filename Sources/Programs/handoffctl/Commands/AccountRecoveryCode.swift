import ArgumentParser
import HandoffAPI
import HandoffClient
import HandoffModel

struct AccountRecoveryCode: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recovery-code",
        abstract: "Make a code that restores the account key on any of your devices.",
        discussion: """
            Run it on the device holding the account key. Write the code down and keep it away \
            from your computers: if this device is lost, `handoffctl account recover CODE` on any \
            other device of the account makes that device the key holder. The code is shown once; \
            your devices carry only the key sealed with it (docs/security.md). A new code replaces \
            the last.
            """
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Flag(help: "Print the local API's answer as JSON.")
    var json = false

    func run() throws {
        let made = try global.client(root).send(.makeRecoveryCode)
        if json { return try Terminal.json(made) }
        Terminal.out(made.code)
        Terminal.diagnostic("handoffctl: write this down; it is not shown again. With it, any device of \(displayQuoted(made.account.accountName)) takes over the account key: handoffctl account recover CODE\n")
    }
}
