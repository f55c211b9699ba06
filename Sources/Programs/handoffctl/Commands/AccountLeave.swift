import ArgumentParser
import HandoffAPI
import HandoffClient
import HandoffModel

struct AccountLeave: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "leave",
        abstract: "Forget the account on this device, and tell the others.",
        discussion: """
            The devices this one can reach now are told; the one holding the account key removes \
            this device from the account. This device's keys and account state are deleted; it can \
            then create an account or join one again (handoffctl account join CODE). A device that \
            was removed from its account leaves it this way too.

            The device holding the account key leaves only once it is the last device, once \
            another device holds the key (handoffctl account recovery-code here, then account \
            recover CODE there), or with --abandon: the others then keep an account that nobody \
            can add devices to or remove them from.
            """
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Flag(name: [.customLong("abandon"), .customLong("force")], help: "Leave even though this device holds the account key and others remain.")
    var force = false

    @Flag(help: "Print the local API's answer as JSON.")
    var json = false

    func run() throws {
        let left = try global.client(root).send(.leaveAccount(LeaveRequest(force: force)))
        if json { return try Terminal.json(left) }
        Terminal.out("left \(displayQuoted(left.accountName)); this device can join an account again (handoffctl account join CODE)")
        if left.wasRemoved {
            return  // nobody to tell: the account had removed this device
        } else if left.removedByKeyHolder {
            Terminal.diagnostic("told \(left.told.map(safe).joined(separator: ", ")); the account no longer lists this device\n")
        } else if !left.told.isEmpty {
            Terminal.diagnostic(
                "told \(left.told.map(safe).joined(separator: ", ")), but not the device holding the account key: it still lists this one; remove it there (handoffctl devices remove NAME)\n"
            )
        } else {
            Terminal.diagnostic("no other device was reachable: the account still lists this one; remove it on the device holding the account key (handoffctl devices remove NAME)\n")
        }
    }
}
