/// The parts of a freedesktop.org `.desktop` file handoff uses: an application's name and `Exec`
/// line, and the activity types it continues (`X-Handoff-ActivityTypes=a;b;`, the Linux analogue
/// of `NSUserActivityTypes` in an app's Info.plist).
package struct DesktopEntry: Sendable, Equatable {
    /// The desktop file id: its path below `applications/`, with `/` turned into `-`.
    var id: String
    var path: String
    var name: String
    package var exec: String?
    var icon: String?
    var tryExec: String?
    var activityTypes: [String]
    /// `Hidden=true`: the file deletes the entry (and hides one of the same id further down).
    var hidden: Bool
    var isApplication: Bool
    /// `DBusActivatable=true`: the app is reached through `org.freedesktop.Application` on the
    /// session bus under its id (the file id without `.desktop`).
    var dbusActivatable: Bool
    /// `DBusActivatable` and `X-Handoff-ContinueAction=true`: the app's running instance takes
    /// continuations through its `handoff-continue` action (docs/dbus.md).
    var continueAction: Bool

    static let activityTypesKey = "X-Handoff-ActivityTypes"
    static let continueActionKey = "X-Handoff-ContinueAction"

    /// Reads the `[Desktop Entry]` group; nil when there is none.
    package init?(id: String, path: String, text: String) {
        var values: [String: String] = [:]
        var inEntry = false
        var sawEntry = false
        for rawLine in text.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            let line = String(rawLine).trimmed
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("[") {
                inEntry = line == "[Desktop Entry]"
                sawEntry = sawEntry || inEntry
                continue
            }
            guard inEntry, let eq = line.firstIndex(of: "=") else { continue }
            let key = String(line[..<eq]).trimmed
            // Localized variants (Name[fr]) are not needed: the name only goes into logs and %c.
            guard !key.contains("["), values[key] == nil else { continue }
            values[key] = String(line[line.index(after: eq)...]).trimmed
        }
        guard sawEntry else { return nil }
        self.id = id
        self.path = path
        self.name = values["Name"].map(DesktopEntry.unescape) ?? id
        self.exec = values["Exec"].map(DesktopEntry.unescape)
        self.icon = values["Icon"].map(DesktopEntry.unescape)
        self.tryExec = values["TryExec"].map(DesktopEntry.unescape)
        self.activityTypes = values[DesktopEntry.activityTypesKey].map(DesktopEntry.list) ?? []
        self.hidden = values["Hidden"] == "true"
        self.isApplication = (values["Type"] ?? "Application") == "Application"
        self.dbusActivatable = values["DBusActivatable"] == "true"
        self.continueAction = dbusActivatable && values[Self.continueActionKey] == "true"
    }

    /// The escapes of string values: `\s \n \t \r \\`.
    static func unescape(_ value: String) -> String {
        var out = ""
        var escaped = false
        for c in value {
            if escaped {
                switch c {
                case "s": out.append(" ")
                case "n": out.append("\n")
                case "t": out.append("\t")
                case "r": out.append("\r")
                default: out.append(c == "\\" ? "\\" : c)  // `\;` in lists and unknown escapes keep the character
                }
                escaped = false
            } else if c == "\\" {
                escaped = true
            } else {
                out.append(c)
            }
        }
        return out
    }

    /// A `;`-separated list, where `\;` is a literal semicolon.
    static func list(_ value: String) -> [String] {
        var items: [String] = []
        var current = ""
        var escaped = false
        for c in value {
            if escaped {
                current.append(c == ";" ? ";" : "\\")
                if c != ";" { current.append(c) }
                escaped = false
            } else if c == "\\" {
                escaped = true
            } else if c == ";" {
                items.append(current)
                current = ""
            } else {
                current.append(c)
            }
        }
        items.append(current)
        return items.map { unescape($0).trimmed }.filter { !$0.isEmpty }
    }
}

/// A command line as `.desktop` `Exec` keys (and handoffd.toml's `browser` and `[handlers]`) write
/// it: arguments separated by spaces, double quotes around arguments with spaces, and inside quotes
/// `\"`, `` \` ``, `\$` and `\\`. Never given to a shell.
package struct ExecLine: Sendable, Equatable {
    package struct SyntaxError: Error, Equatable, CustomStringConvertible {
        package var description: String
    }

    var arguments: [String]

    package init(parsing text: String) throws(SyntaxError) {
        var arguments: [String] = []
        var current = ""
        var inArgument = false
        var quoted = false
        var escaped = false
        for c in text {
            if escaped {
                current.append(c)
                escaped = false
            } else if quoted {
                if c == "\\" {
                    escaped = true
                } else if c == "\"" {
                    quoted = false
                } else {
                    current.append(c)
                }
            } else if c == " " || c == "\t" {
                if inArgument { arguments.append(current) }
                current = ""
                inArgument = false
            } else if c == "\"" {
                quoted = true
                inArgument = true
            } else {
                current.append(c)
                inArgument = true
            }
        }
        guard !quoted, !escaped else { throw SyntaxError(description: "a quoted argument is not closed") }
        if inArgument { arguments.append(current) }
        guard let program = arguments.first, !program.isEmpty, !program.contains("%") else {
            throw SyntaxError(description: "there is no program to run")
        }
        self.arguments = arguments
    }

    /// What fills the field codes.
    struct Fields {
        /// `%f %F`: the activity's file; also `%u %U` when there is no `url`.
        var file: String?
        /// `%u %U`: the web page (for the browser command).
        var url: String?
        /// `%c`: the application's name.
        var name: String?
        /// `%i`: `--icon ICON`.
        var icon: String?
        /// `%k`: the `.desktop` file.
        var desktopFile: String?
    }

    /// The arguments with field codes replaced. A code alone in an argument that has no value
    /// removes the argument; deprecated codes (`%d %D %n %N %v %m`) are dropped as the
    /// specification asks.
    func expanded(_ fields: Fields) -> [String] {
        var out: [String] = []
        for argument in arguments {
            if argument == "%i" {
                if let icon = fields.icon { out += ["--icon", icon] }
                continue
            }
            var result = ""
            var dropped = false
            var chars = argument.makeIterator()
            while let c = chars.next() {
                guard c == "%" else {
                    result.append(c)
                    continue
                }
                switch chars.next() {
                case "%": result.append("%")
                case "f", "F": if let file = fields.file { result += file } else { dropped = true }
                case "u", "U": if let target = fields.url ?? fields.file { result += target } else { dropped = true }
                case "c": result += fields.name ?? ""
                case "k": result += fields.desktopFile ?? ""
                case "i": result += fields.icon ?? ""
                case .some, .none: dropped = true  // deprecated or unknown code
                }
            }
            if dropped && result.isEmpty { continue }
            out.append(result)
        }
        return out
    }
}
