import ArgumentParser
import HandoffAPI
import HandoffClient
import HandoffModel

struct Link: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a handoff: link to an activity, to reopen it later on any of your devices.",
        discussion: """
            Without arguments, this device's current activity; with PEER, that device's (fetched \
            now and kept in this device's history, so the link opens here while it is away); \
            with --history N, entry N of handoffctl history. The link names the account, the \
            device and the activity's ids, sealed: only your devices can read it. Open it with \
            handoffctl open LINK, or click it in any app (handoffctl is the handler of handoff: \
            links).
            """
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Argument(help: "The device whose current activity to link to (default: this device's).")
    var peer: String?

    @Option(name: .customLong("history"), help: ArgumentHelp("Link to entry N of handoffctl history.", valueName: "N"))
    var historyEntry: Int?

    @Flag(help: "Print the local API's answer: the link, what it names, the activity.")
    var json = false

    func validate() throws {
        if peer != nil, historyEntry != nil { throw ValidationError("give a device or --history, not both") }
        if let historyEntry, historyEntry < 1 { throw ValidationError("--history counts from 1 (the newest entry)") }
    }

    func run() throws {
        let response = try global.client(root).send(.link(LinkRequest(peer: peer, historyEntry: historyEntry)))
        if json { return try Terminal.json(response) }
        Terminal.out(response.link)
        let device = response.device.map { safe($0.name) } ?? "this device"
        Terminal.diagnostic("handoffctl: a link to \(displayQuoted(response.activity.title)) (\(safe(response.activity.type))) on \(device)\n")
    }
}
