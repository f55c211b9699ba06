import ArgumentParser
import HandoffAPI
import HandoffClient

struct Devices: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the account's devices.",
        subcommands: [DevicesList.self, DevicesRemove.self, DevicesRename.self],
        defaultSubcommand: DevicesList.self
    )
}

struct DevicesList: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List the account's devices (the default).")

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Flag(help: "Print the local API's device list.")
    var json = false

    func run() throws {
        let client = global.client(root)
        let list = try client.send(.devices)
        if json { return try Terminal.json(list) }
        if let removal = try client.send(.account).removal {
            Terminal.diagnostic("handoffctl: this device was \(safe(removal.sentence)); \(removal.advice)\n")
        }
        let nameWidth = min(32, max(4, list.devices.map { safe($0.name).count }.max() ?? 0))
        Terminal.out("  " + "ID".padding(to: 14) + "NAME".padding(to: nameWidth + 2) + "ADDED")
        for d in list.devices {
            Terminal.out((d.isThisDevice ? "* " : "  ") + (d.id.short + "…").padding(to: 14) + safe(d.name).padding(to: nameWidth + 2) + d.addedAt.rfc3339)
        }
        if !list.revoked.isEmpty {
            Terminal.out("removed:")
            for r in list.revoked {
                let by = r.reason == .left ? " (left)" : r.byName.map { " by \(safe($0))" } ?? ""
                Terminal.out("  " + (r.id.short + "…").padding(to: 14) + safe(r.name).padding(to: nameWidth + 2) + r.revokedAt.rfc3339 + by)
            }
        }
    }
}
