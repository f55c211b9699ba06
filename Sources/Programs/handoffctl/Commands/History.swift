import ArgumentParser
import HandoffAPI
import HandoffClient
import HandoffModel

struct History: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the recent activities this device saw, newest first.",
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
