import ArgumentParser
import HandoffAPI
import HandoffClient
import HandoffModel

struct History: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the recent activities this device saw; delete saved ones everywhere.",
        subcommands: [HistoryList.self, HistoryDelete.self],
        defaultSubcommand: HistoryList.self
    )
}

struct HistoryList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the recent activities this device saw, newest first (the default).",
        discussion: """
            This device's own (each as it last was while current) and the other devices' it \
            fetched, with the device, when, the type, the title and the ids. Kept under \
            handoffd's state directory, bounded by [history] in handoffd.toml (enabled = false \
            keeps none).
            """
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Flag(help: "Print the local API's history.")
    var json = false

    func run() throws {
        let response = try global.client(root).send(.history)
        if json { return try Terminal.json(response) }
        guard response.enabled else { return Terminal.out("history is off ([history] enabled = false in handoffd.toml)") }
        if response.entries.isEmpty { Terminal.out("no activities yet") }
        let now = Timestamp.now()
        for (index, entry) in response.entries.enumerated() {
            let device = entry.own ? "this device" : safe(entry.device?.name ?? "?")
            let a = entry.activity
            Terminal.out("\(index + 1)  \(entry.seenAt.age(at: now)) ago  \(device)  \(safe(a.type))  \(displayQuoted(a.title))")
            var ids = ["id \(a.id.lowercasedString)"]
            if let persistent = a.content.persistentIdentifier { ids.append("persistent \(displayQuoted(persistent))") }
            if let target = a.content.targetContentIdentifier { ids.append("target \(displayQuoted(target))") }
            if let page = a.content.webpageURL { ids.append(safe(page)) }
            Terminal.out("   " + ids.joined(separator: "  "))
        }
    }
}

struct HistoryDelete: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete saved activities on every device of the account.",
        discussion: """
            Those with the persistent ids given, of the types given, or --all: their history \
            entries, windows' restoration activities, and the current activity if it is one — \
            here, on the devices reachable now, and on the others when they next talk to one \
            that knows (docs/apps.md, "Deleting saved activities").
            """
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Option(name: .customLong("persistent-id"), help: ArgumentHelp("The saved activities of this content (repeatable).", valueName: "id"))
    var persistentIdentifiers: [String] = []

    @Option(name: .customLong("type"), help: ArgumentHelp("The saved activities of this type (repeatable).", valueName: "type"))
    var types: [String] = []

    @Flag(help: "Every saved activity.")
    var all = false

    @Flag(help: "Print the local API's answer.")
    var json = false

    func validate() throws {
        if persistentIdentifiers.isEmpty, types.isEmpty, !all { throw ValidationError("say what to delete: --persistent-id, --type or --all") }
    }

    func run() throws {
        let response = try global.client(root).send(.deleteSaved(DeleteSavedRequest(persistentIdentifiers: persistentIdentifiers, types: types, all: all)))
        if json { return try Terminal.json(response) }
        var here = ["\(response.historyEntries) history entr\(response.historyEntries == 1 ? "y" : "ies")"]
        if response.restorations > 0 { here.append("\(response.restorations) restoration activit\(response.restorations == 1 ? "y" : "ies")") }
        if response.current { here.append("the current activity") }
        Terminal.out("deleted here: \(here.joined(separator: ", ")); told \(response.devicesTold) device\(response.devicesTold == 1 ? "" : "s") now, the others when they next connect")
    }
}
