import ArgumentParser
import HandoffAPI
import HandoffClient
import HandoffModel

struct AccountTransferKey: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "transfer-key",
        abstract: "Hand the account key to another of your devices.",
        discussion: """
            Run it on the device holding the account key, then accept on the other device with \
            `handoffctl account accept-key` within 5 minutes. The other device then invites, \
            removes and renames devices; this one deletes its copy of the key once the other has \
            stored it. Stopping this command (Ctrl-C) before the other accepted withdraws the offer.

            If the key went and the other device never said it stored it (it is gone), this device \
            signs nothing until `--cancel` gives the hand-over up; if that device did store the \
            key, remove it (handoffctl devices remove DEVICE) and rotate the key.
            """
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Argument(help: "The device to hand the key to: its name or the start of its id (handoffctl devices).")
    var device: String?

    @Flag(help: "Give up a hand-over whose receipt never came, so that this device signs again.")
    var cancel = false

    @Flag(help: "Print the local API's updates as JSON lines.")
    var json = false

    func validate() throws {
        guard cancel || device != nil else { throw ValidationError("name the device to hand the key to (handoffctl devices)") }
        guard !(cancel && device != nil) else { throw ValidationError("--cancel gives up the hand-over under way, whichever device it went to; name no device") }
    }

    func run() throws {
        let updates = try global.client(root).subscribe(.transferKey(KeyTransferRequest(device: device ?? "", cancel: cancel ? true : nil)))
        var name = device ?? ""
        while let update = try updates.next() {
            if json {
                try Terminal.json(update, pretty: false)
                Terminal.flush()
            }
            if let offer = update.offered {
                name = offer.deviceName
                if json { continue }
                Terminal.diagnostic(
                    """
                    handoffctl: offered the account key to \(safe(offer.deviceName)); on it run:
                        handoffctl account accept-key
                    handoffctl: valid until \(offer.expiresAt.rfc3339); waiting (Ctrl-C withdraws the offer)…

                    """
                )
            } else if update.cancelled != nil {
                if !json { Terminal.out("the hand-over was given up; this device signs again (if the other device stored the key, remove it and run handoffctl account rotate-key)") }
                return
            } else if update.transferred != nil {
                if !json { Terminal.out("\(safe(name)) holds the account key now; this device is a member") }
                return
            } else if update.unconfirmed != nil {
                throw CLIError(
                    .timeout,
                    "the key went to \(safe(name)), which did not say it stored it; this device keeps its copy but signs nothing until that is settled: handoffctl account sync \(safe(name))"
                )
            } else if update.expired == true {
                throw CLIError(.inviteExpired, "\(safe(name)) did not accept the account key in time; this device still holds it (run handoffctl account transfer-key again)")
            }
        }
        throw CLIError(.daemonNotRunning, "handoffd stopped while waiting for the other device")
    }
}
