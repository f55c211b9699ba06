import ArgumentParser
import HandoffAPI
import HandoffClient

struct AccountRotateKey: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotate-key",
        abstract: "Replace the account key with a new one, after a recovery.",
        discussion: """
            Run it on the device holding the account key, once the lost or stolen device that held \
            it before was removed (handoffctl devices remove NAME). The old key then makes no new \
            devices and signs nothing your devices accept; they are certified again by the new key \
            as they reach this device (offline ones when they next do). The recovery code sealed \
            the old key: make a new one (handoffctl account recovery-code). Update handoff on \
            every device first: older versions do not follow a rotated key.
            """
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Flag(help: "Print the local API's answer as JSON.")
    var json = false

    func run() throws {
        let info = try global.client(root).send(.rotateKey)
        if json { return try Terminal.json(info) }
        AccountShow.describe(info).forEach(Terminal.out)
        Terminal.diagnostic("handoffctl: the old recovery code no longer restores the key; make a new one: handoffctl account recovery-code\n")
    }
}
