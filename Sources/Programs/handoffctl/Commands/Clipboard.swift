import ArgumentParser
import HandoffAPI
import HandoffClient
import HandoffModel

struct Clipboard: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show, paste from, or turn off the clipboard your devices share.",
        discussion: """
            A copy on one of your devices is announced to the others (the kinds and sizes, never \
            the content); the content moves only when another device pastes it. Copies last 2 \
            minutes ([clipboard] lifetime in handoffd.toml). The desktop agent (handoff-desktop) \
            offers another device's copy as your clipboard; `handoffctl clipboard paste` prints \
            it (docs/clipboard.md).
            """,
        subcommands: [ClipboardShow.self, ClipboardPaste.self, ClipboardSwitch.On.self, ClipboardSwitch.Off.self],
        defaultSubcommand: ClipboardShow.self
    )
}

/// The words `show` and `watch` print for the clipboard.
enum ClipboardText {
    static func summary(_ state: ClipboardState, now: Timestamp = .now()) -> String {
        guard state.enabled else { return "the clipboard is off on this device (handoffctl clipboard on)" }
        guard let copy = state.newest else { return "nothing copied in the last minutes" }
        let origin = copy.peer.map { "copied on \(safe($0.name))" } ?? "copied here"
        let forms = copy.items.map { "\(safe($0.type)) (\(StreamProgress.size($0.size)))" }.joined(separator: ", ")
        return "\(origin) \(copy.copiedAt.age(at: now)) ago: \(forms)"
    }
}

struct ClipboardShow: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show the newest copy on your devices: where, when, which kinds (the default)."
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Flag(help: "Print the local API's ClipboardState as JSON.")
    var json = false

    func run() throws {
        let state = try global.client(root).send(.clipboard)
        if json { return try Terminal.json(state) }
        Terminal.out(ClipboardText.summary(state))
    }
}

struct ClipboardPaste: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "paste",
        abstract: "Print another device's copy (or write it to a file).",
        discussion: """
            Fetches the newest copy made on another device of the account, in the kind --type \
            names (default: text, else the first kind it has), and writes it to standard output \
            or --output. Fails with status 49 when no other device copied anything in the last \
            minutes.
            """
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Option(name: .shortAndLong, help: "The kind to paste, e.g. text/plain;charset=utf-8, image/png, text/uri-list (text/uri-list#N: its Nth entry's file).")
    var type: String?

    @Option(name: .shortAndLong, help: "Write it to this file instead of standard output.")
    var output = "-"

    func run() throws {
        let client = global.client(root)
        let state = try client.send(.clipboard)
        guard state.enabled else { throw CLIError(.clipboardOff, "the clipboard is off on this device; turn it on with: handoffctl clipboard on") }
        guard let copy = state.newest, let peer = copy.peer else {
            throw CLIError(.noClipboard, "no other device copied anything in the last minutes; copy something there first")
        }
        let types = copy.items.map(\.type)
        let chosen: String
        if let type {
            // A file of its file list (`text/uri-list#N`) is pasted on its own.
            guard types.contains(ClipboardNotice.fileIndex(type) == nil ? type : ClipboardNotice.fileListType) else {
                throw CLIError(.noClipboard, "the copy from \(safe(peer.name)) has no \(safe(type)); it has: \(types.map(safe).joined(separator: ", "))")
            }
            chosen = type
        } else {
            chosen = ClipboardCopy.preferredTypes.first(where: types.contains) ?? types[0]
        }
        // Whole or not at all: a file appears only once complete, standard output gets nothing
        // of a paste cut short.
        let paste = LocalAPIStream.pasteClipboard(copy.id, type: chosen)
        if output == "-" {
            _ = try StreamTransfer.receiveWhole(paste, client: client)
        } else {
            _ = try StreamTransfer.receive(paste, into: output, client: client, progress: false)
        }
    }
}

enum ClipboardSwitch {
    static func set(_ on: Bool, _ global: GlobalOptions, _ root: Handoffctl) throws {
        let settings = try global.client(root).send(.changeSettings(SettingsChange(clipboard: on)))
        Terminal.out("clipboard \(settings.clipboard ? "on" : "off")")
    }

    struct On: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "on", abstract: "Share copies with your other devices again.")
        @OptionGroup var global: GlobalOptions
        @ParentCommand var root: Handoffctl
        func run() throws { try ClipboardSwitch.set(true, global, root) }
    }

    struct Off: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "off", abstract: "Stop sharing copies: nothing copied here is announced, nothing from elsewhere offered."
        )
        @OptionGroup var global: GlobalOptions
        @ParentCommand var root: Handoffctl
        func run() throws { try ClipboardSwitch.set(false, global, root) }
    }
}
