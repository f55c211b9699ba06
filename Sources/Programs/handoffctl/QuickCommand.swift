import HandoffAPI
import HandoffClient

/// The two command lines run most often by scripts and by the other device's user — `handoffctl
/// --version` and `handoffctl continue [PEER] [--json] [--socket PATH]` — recognised without
/// ArgumentParser. Its first parse looks up every command's configuration through the Swift
/// runtime's reflection (conformance scans over the whole binary), about a quarter of the time
/// handoffctl took to start (docs/benchmarks.md, "Starting handoffctl"). Anything else, or
/// anything here in another spelling (`--help`, `--json=…`, `--`, a stream option), goes to
/// ArgumentParser, which stays the one definition of the syntax: QuickCommandTests checks a table
/// of the lines this accepts against ArgumentParser's reading of them.
enum QuickCommand: Equatable {
    case version
    case continueActivity(peer: String?, json: Bool, socket: String?)

    init?(_ arguments: [String]) {
        if arguments == ["--version"] {
            self = .version
            return
        }
        var words = arguments[...]
        // `--socket PATH` may come before the subcommand as well as after it, where it wins
        // (GlobalOptions); each at most once here.
        var rootSocket: String?
        if Self.isSocketOption(words.first) {
            guard let value = Self.socketValue(&words) else { return nil }
            rootSocket = value
        }
        guard words.popFirst() == "continue" else { return nil }
        var peer: String?
        var json = false
        var socket: String?
        while let word = words.first {
            if word == "--json", !json {
                words.removeFirst()
                json = true
            } else if Self.isSocketOption(word), socket == nil {
                guard let value = Self.socketValue(&words) else { return nil }
                socket = value
            } else if !word.hasPrefix("-"), word != "help", peer == nil {
                words.removeFirst()
                peer = word
            } else {
                return nil
            }
        }
        self = .continueActivity(peer: peer, json: json, socket: socket ?? rootSocket)
    }

    private static func isSocketOption(_ word: String?) -> Bool {
        word == "--socket" || word?.hasPrefix("--socket=") == true
    }

    /// The value of the `--socket` option at the front of `words`, taken off them; nil when it
    /// has none a user meant (ArgumentParser then says what is wrong).
    private static func socketValue(_ words: inout ArraySlice<String>) -> String? {
        guard let word = words.popFirst() else { return nil }
        let value = word == "--socket" ? words.popFirst() : String(word.dropFirst("--socket=".count))
        guard let value, !value.isEmpty, !value.hasPrefix("-") else { return nil }
        return value
    }
}

extension QuickCommand {
    /// Does what ArgumentParser's parse of the same line would run.
    func run() throws {
        switch self {
        case .version:
            Terminal.out(HandoffVersion.current)
        case .continueActivity(let peer, let json, let socket):
            let client = HandoffClient(socketPath: socket ?? HandoffPaths.defaultSocketPath())
            try Continue.perform(peer: peer, json: json, streamTo: nil, streamExec: nil, client: client)
        }
    }
}
