import HandoffModel

/// The parts of a freedesktop.org `.desktop` file handoff uses: an application's name and `Exec`
/// line, the activity types it continues (`X-Handoff-ActivityTypes=a;b;`, the Linux analogue
/// of `NSUserActivityTypes` in an app's Info.plist) and the sites it shows
/// (`X-Handoff-WebDomains=example.com;*.example.org;`, Apple's associated domains).
package struct DesktopEntry: Sendable, Equatable {
    /// The desktop file id: its path below `applications/`, with `/` turned into `-`.
    var id: String
    var path: String
    var name: String
    package var exec: String?
    var icon: String?
    var tryExec: String?
    var activityTypes: [String]
    /// The MIME types of the files it opens (`MimeType=`).
    var mimeTypes: [String]
    /// The sites whose pages it opens (docs/apps.md, "Web pages into apps").
    var webDomains: [WebDomainClaim]
    /// What `X-Handoff-WebDomains` lists that claims nothing (`*.com`, not a host name): logged.
    var ignoredWebDomains: [String]
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
    static let webDomainsKey = "X-Handoff-WebDomains"
    static let continueActionKey = "X-Handoff-ContinueAction"
    static let mimeTypesKey = "MimeType"

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
        self.mimeTypes = values[DesktopEntry.mimeTypesKey].map(DesktopEntry.list) ?? []
        let domains = values[DesktopEntry.webDomainsKey].map(DesktopEntry.list) ?? []
        self.webDomains = domains.compactMap(WebDomainClaim.init)
        self.ignoredWebDomains = domains.filter { WebDomainClaim($0) == nil }
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
