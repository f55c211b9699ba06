import ArgumentParser
import HandoffAPI
import HandoffClient
import HandoffModel

struct AccountRecover: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recover",
        abstract: "Restore the account key on this device from a recovery code.",
        discussion: """
            For when the device holding the account key is lost: this device becomes the key \
            holder, and can invite and remove devices. Wrong codes are counted: after five, each \
            try waits longer (docs/security.md).
            """
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Argument(help: "The code `handoffctl account recovery-code` printed (any case, dashes optional).")
    var code: String

    @Flag(help: "Print the local API's answer as JSON.")
    var json = false

    func run() throws {
        // A typo is caught here, before handoffd spends a key derivation on it.
        do {
            _ = try RecoveryCode(parsing: code)
        } catch {
            throw CLIError(.invalidCode, error.describe(as: "recovery code"))
        }
        let info = try global.client(root).send(.recover(RecoverRequest(code: code)))
        if json { return try Terminal.json(info) }
        AccountShow.describe(info).forEach(Terminal.out)
    }
}
