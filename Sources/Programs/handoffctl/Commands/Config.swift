import ArgumentParser
import HandoffAPI
import HandoffClient

struct Config: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show or change this device's settings (handoff, clipboard: on or off).",
        discussion: """
            `handoffctl config` shows the settings; `handoffctl config handoff off` turns handoff \
            off on this device: it is no longer advertised, no other device is answered, and no \
            notification offers their activities — `handoffctl continue` still works when you \
            ask. `handoffctl config handoff on` turns it back on. handoffd keeps the setting \
            across restarts (the status icon's switch is the same one).
            """
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Argument(help: "The setting: handoff or clipboard.")
    var setting: String?

    @Argument(help: "Its new value: on or off.")
    var value: String?

    @Flag(help: "Print the local API's answer (DeviceSettings) as JSON.")
    var json = false

    static let settings = ["handoff", "clipboard"]

    func validate() throws {
        if let setting, !Config.settings.contains(setting) {
            throw ValidationError("there is no setting \(setting); the settings are: \(Config.settings.joined(separator: ", "))")
        }
        if let value, value != "on", value != "off" {
            throw ValidationError("\(setting ?? "handoff") is on or off, not \(value)")
        }
    }

    func run() throws {
        let client = global.client(root)
        let change = value.map { value in
            setting == "clipboard" ? SettingsChange(clipboard: value == "on") : SettingsChange(handoff: value == "on")
        }
        let settings = try change.map { try client.send(.changeSettings($0)) } ?? client.send(.settings)
        if json { return try Terminal.json(settings) }
        if setting != "clipboard" { Terminal.out("handoff \(settings.handoff ? "on" : "off")") }
        if setting != "handoff" { Terminal.out("clipboard \(settings.clipboard ? "on" : "off")") }
    }
}
