#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffModel
import HandoffSystem

#if canImport(Glibc)
import Glibc
#endif

/// Which local program continues an activity of a given type: one set in handoffd.toml's
/// `[handlers]`, else an application whose `.desktop` file lists the type in
/// `X-Handoff-ActivityTypes`. Looked up afresh for each continuation, so an app installed a
/// minute ago counts. Only this device's user and administrator choose these programs — a peer
/// only names a type.
package struct HandlerCatalog: Sendable {
    enum Handler: Sendable, Equatable {
        case configured(type: String, ExecLine)
        case desktop(DesktopEntry, ExecLine)

        var label: String {
            switch self {
            case .configured: "config"
            case .desktop(let entry, _): entry.id
            }
        }
    }

    /// Activity type → command, from handoffd.toml.
    var configured: [String: ExecLine]
    /// Where `applications/` directories are looked for, most important first.
    var dataDirectories: [String]

    package init(configured: [String: ExecLine], dataDirectories: [String]) {
        self.configured = configured
        self.dataDirectories = dataDirectories
    }

    /// Where `applications/` are: `HandoffPaths.baseDirectories(.data)`.
    package static func dataDirectories(environment: [String: String]) -> [String] {
        HandoffPaths.baseDirectories(.data, environment: environment)
    }

    func handler(for type: String, searchPath: String) -> Handler? {
        if let line = configured[type] { return .configured(type: type, line) }
        return applications(mentioning: DesktopEntry.activityTypesKey, searchPath: searchPath).first { $0.0.activityTypes.contains(type) }.map { .desktop($0.0, $0.1) }
    }

    /// The installed app that opens files of `mimeType`: the first the user's (then the
    /// system's) `mimeapps.list` names as its default, as `xdg-mime query default` finds it
    /// (the freedesktop MIME Applications Associations specification); else the first whose
    /// `.desktop` file lists the type.
    func application(opening mimeType: String, configDirectories: [String], searchPath: String) -> (DesktopEntry, ExecLine)? {
        let candidates = applications(mentioning: DesktopEntry.mimeTypesKey, searchPath: searchPath)
        let files = configDirectories.map { $0 + "/mimeapps.list" } + dataDirectories.map { $0 + "/applications/mimeapps.list" }
        for file in files {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { continue }
            for id in Self.defaults(for: mimeType, in: text) {
                if let found = candidates.first(where: { $0.0.id == id }) { return found }
            }
        }
        return candidates.first { $0.0.mimeTypes.contains(mimeType) }
    }

    /// The desktop file ids `[Default Applications]` gives for `mimeType` in a mimeapps.list.
    static func defaults(for mimeType: String, in text: String) -> [String] {
        var inDefaults = false
        for rawLine in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            let line = String(rawLine).trimmed
            if line.hasPrefix("[") {
                inDefaults = line == "[Default Applications]"
                continue
            }
            guard inDefaults, let eq = line.firstIndex(of: "="), String(line[..<eq]).trimmed == mimeType else { continue }
            return DesktopEntry.list(String(line[line.index(after: eq)...]))
        }
        return []
    }

    /// Where mimeapps.list is: `HandoffPaths.baseDirectories(.config)`.
    package static func configDirectories(environment: [String: String]) -> [String] {
        HandoffPaths.baseDirectories(.config, environment: environment)
    }

    /// Every installed app's claims (for `doctor`), and what it lists that claims nothing.
    func webDomainClaims(searchPath: String) -> [DesktopEntry] {
        applications(mentioning: DesktopEntry.webDomainsKey, searchPath: searchPath).map(\.0).filter { !$0.webDomains.isEmpty || !$0.ignoredWebDomains.isEmpty }
    }

    /// The applications that apply — the first file of an id wins, a hidden one hides it, and
    /// one whose `TryExec` is missing is not installed — among those whose file mentions `key`.
    func applications(mentioning key: String, searchPath: String) -> [(DesktopEntry, ExecLine)] {
        var found: [(DesktopEntry, ExecLine)] = []
        var seen: Set<String> = []
        for directory in dataDirectories {
            for (id, path) in HandlerCatalog.desktopFiles(in: directory + "/applications") {
                // The first file with an id wins; a later one of the same id is shadowed by it.
                guard seen.insert(id).inserted else { continue }
                guard let text = try? String(contentsOfFile: path, encoding: .utf8), text.contains(key),
                    let entry = DesktopEntry(id: id, path: path, text: text), entry.isApplication, !entry.hidden,
                    let exec = entry.exec, let line = try? ExecLine(parsing: exec)
                else { continue }
                if let tryExec = entry.tryExec {
                    let installed = tryExec.hasPrefix("/") ? access(tryExec, X_OK) == 0 : ChildProcess.search(tryExec, path: searchPath) != nil
                    guard installed else { continue }
                }
                found.append((entry, line))
            }
        }
        return found
    }

    /// The `.desktop` file with this id that applies (the first in `dataDirectories`), for an
    /// app's name and icon.
    func entry(id: String) -> DesktopEntry? {
        for directory in dataDirectories {
            guard let (_, path) = HandlerCatalog.desktopFiles(in: directory + "/applications").first(where: { $0.0 == id }) else { continue }
            guard let text = try? String(contentsOfFile: path, encoding: .utf8), let entry = DesktopEntry(id: id, path: path, text: text), !entry.hidden else { return nil }
            return entry
        }
        return nil
    }

    /// `(desktop file id, path)` of every `.desktop` file below `directory`, sorted by id.
    static func desktopFiles(in directory: String) -> [(String, String)] {
        var found: [(String, String)] = []
        // Subdirectories name the id's prefix (kde/app.desktop is kde-app.desktop); a few levels suffice.
        func walk(_ relative: String, depth: Int) {
            let path = relative.isEmpty ? directory : directory + "/" + relative
            guard depth <= 4, let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return }
            for name in names where !name.hasPrefix(".") {
                let child = relative.isEmpty ? name : relative + "/" + name
                if name.hasSuffix(".desktop") {
                    found.append((child.replacing("/", with: "-"), directory + "/" + child))
                } else {
                    var isDirectory = false
                    if FileManager.default.fileExists(atPath: directory + "/" + child, isDirectory: &isDirectory), isDirectory {
                        walk(child, depth: depth + 1)
                    }
                }
            }
        }
        walk("", depth: 1)
        return found.sorted { $0.0 < $1.0 }
    }
}
