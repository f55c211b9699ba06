import ArgumentParser
import HandoffAPI
import HandoffClient
import HandoffModel

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show what handoffd is doing.")

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Flag(help: "Print the local API's status object.")
    var json = false

    func run() throws {
        let status = try global.client(root).send(.status)
        if json {
            try Terminal.json(status)
            return
        }
        Terminal.out("handoffd \(status.version) running (pid \(status.pid), uid \(status.uid)) since \(status.startedAt.rfc3339)")
        Terminal.out("  socket:    \(safe(status.socketPath))")
        Terminal.out("  state:     \(safe(status.stateDirectory))")
        if let account = status.account {
            Terminal.out("  account:   \(displayQuoted(account.accountName)) (\(account.accountID.short)…), \(account.deviceCount) device\(account.deviceCount == 1 ? "" : "s")")
            Terminal.out("  device:    \(safe(account.deviceName)) (\(account.deviceID.short)…)\(account.isAdmin ? ", holds the account key" : "")")
            if let removal = account.removal {
                Terminal.out("  REMOVED:   this device was \(safe(removal.sentence))")
                Terminal.out("             \(removal.advice)")
            } else if let offer = account.keyOffer {
                Terminal.out("  key offer: \(AccountShow.offerLine(offer))")
            } else if account.recoveryCodeMadeAt == nil {
                Terminal.out("  recovery:  none: losing the device holding the account key loses the account (\(account.isAdmin ? "" : "on it: ")handoffctl account recovery-code)")
            }
        } else {
            Terminal.out("  account:   none (handoffctl account create, or account join CODE)")
            if let inviting = status.invitingNearby, inviting > 0 {
                let devices = inviting == 1 ? "1 device nearby is" : "\(inviting) devices nearby are"
                Terminal.out("  invited:   \(devices) inviting: join with its code (handoffctl account join CODE)")
            }
        }
        if status.settings?.handoff == false {
            Terminal.out("  handoff:   off on this device: not advertised, other devices not answered (handoffctl config handoff on)")
        }
        Terminal.out("  port:      \(status.peerPort)")
        Terminal.out("  discovery: \(Peers.describe(status.discovery))")
        if let wideArea = status.discovery.wideArea { Terminal.out("  wide area: \(Peers.describe(wideArea))") }
        Terminal.out("  peers:     \(status.reachablePeers) reachable\(status.strangers > 0 ? "; \(status.strangers) other handoff device\(status.strangers == 1 ? "" : "s") on this network" : "")")
        Terminal.out("  current:   \(status.currentActivity.map(HumanFormat.summary) ?? "none")")
        Terminal.out("  limit:     \(status.maximumActivityBytes) bytes per activity")
    }
}
