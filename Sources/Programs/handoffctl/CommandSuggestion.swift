import ArgumentParser

/// "handoffctl contineu": a mistyped command gets the command it was probably meant to be, before
/// ArgumentParser's "Unexpected argument" (which, for commands with a default subcommand such as
/// `account`, would even name the wrong one).
enum CommandSuggestion {
    /// The one-line error for `arguments` (without the program name), or nil when every command
    /// word in it is known (or nothing is close enough to suggest).
    static func check(_ arguments: [String], root: any ParsableCommand.Type) -> String? {
        var command: any ParsableCommand.Type = root
        var path = [root.configuration.commandName ?? "handoffctl"]
        var words = arguments[...]
        while let word = nextWord(&words) {
            let subcommands = command.configuration.subcommands
            guard !subcommands.isEmpty else { return nil }
            if let next = subcommands.first(where: { name(of: $0) == word }) {
                command = next
                path.append(word)
                continue
            }
            guard let guess = closest(to: word, among: subcommands.map(name(of:))) else { return nil }
            let all = path.joined(separator: " ")
            return "\(all) has no command \(displayed(word)); did you mean \(all) \(guess)? (\(all) --help lists them)"
        }
        return nil
    }

    /// The next word that is not an option (nor the value of `--socket`).
    private static func nextWord(_ words: inout ArraySlice<String>) -> String? {
        while let word = words.popFirst() {
            if word == "--socket" {
                _ = words.popFirst()
                continue
            }
            if word.hasPrefix("-") { return nil }  // options end the command words we check
            return word
        }
        return nil
    }

    private static func name(of command: any ParsableCommand.Type) -> String {
        command.configuration.commandName ?? String(describing: command).lowercased()
    }

    /// The candidate within two edits (or that `word` starts), if exactly one is closest.
    static func closest(to word: String, among candidates: [String]) -> String? {
        let scored = candidates.map { ($0, distance(word, $0)) }.filter { $0.1 <= 2 || ($0.0.hasPrefix(word) && word.count >= 3) }
        guard let best = scored.min(by: { $0.1 < $1.1 }) else { return nil }
        return scored.filter { $0.1 == best.1 }.count == 1 ? best.0 : nil
    }

    /// Edit distance, with a swap of two neighbours counting as one edit.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1) }
            }
        }
        return d[a.count][b.count]
    }

    private static func displayed(_ word: String) -> String {
        "\"" + String(word.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.prefix(40)) + "\""
    }
}
