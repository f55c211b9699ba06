import ArgumentParser
import HandoffAPI
import HandoffClient
import HandoffSystem

#if canImport(Glibc)
import Glibc
#endif

struct AccountInvite: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "invite",
        abstract: "Print a one-time code for another device to join, and wait for it.",
        discussion: """
            The code is valid for 10 minutes and for one device. Stopping this command (Ctrl-C) \
            cancels it. Prints the code on the first line of stdout, and "joined ID NAME" when a \
            device has joined.
            """
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Flag(help: "Print the local API's updates as JSON lines.")
    var json = false

    func run() throws {
        let updates = try global.client(root).subscribe(.invite)
        while let update = try updates.next() {
            if json {
                try Terminal.json(update, pretty: false)
                Terminal.flush()
                if update.expired == true { throw CLIError(.inviteExpired, "the invite expired; nobody joined") }
                continue
            }
            if let invite = update.invite {
                Terminal.out(invite.code)
                Terminal.flush()
                let peer = LocalAddresses.ipv4().first.map { "\($0):\(invite.port)" } ?? "THIS-HOST:\(invite.port)"
                Terminal.diagnostic(
                    """
                    handoffctl: on the other device run:
                        handoffctl account join \(invite.code) --peer \(peer)
                    handoffctl: valid until \(invite.expiresAt.rfc3339), for one device; waiting (Ctrl-C cancels)…

                    """
                )
            } else if let device = update.joined {
                Terminal.out("joined \(device.id.text) \(safe(device.name))")
                return
            } else if update.expired == true {
                throw CLIError(.inviteExpired, "the invite expired; nobody joined (run handoffctl account invite again)")
            }
        }
        throw CLIError(.daemonNotRunning, "handoffd stopped while waiting for the invite")
    }
}
