import ArgumentParser
import HandoffAPI
import HandoffClient
import HandoffModel

struct DevicesRename: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rename",
        abstract: "Rename a device in the account; every device learns the new name.",
        discussion: """
            `handoffctl devices rename NEWNAME` renames this device; `handoffctl devices rename \
            DEVICE NEWNAME` renames another one, on the device holding the account key (which \
            signs the account's names). On another device, renaming this one asks the key holder, \
            which must be reachable.
            """
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Argument(help: "The device (a name or a unique start of its id), then the new name; or only the new name, for this device.")
    var names: [String] = []

    @Flag(help: "Print the local API's answer as JSON.")
    var json = false

    func validate() throws {
        guard (1...2).contains(names.count) else {
            throw ValidationError("give the new name (this device), or a device and its new name")
        }
    }

    func run() throws {
        let request = names.count == 2 ? RenameDeviceRequest(device: names[0], name: names[1]) : RenameDeviceRequest(name: names[0])
        let renamed = try global.client(root).send(.renameDevice(request))
        if json { return try Terminal.json(renamed) }
        Terminal.out("\(renamed.id.short)… is now called \(displayQuoted(renamed.name))\(renamed.isThisDevice ? " (this device)" : "")")
    }
}
