import DaemonCore
import HandoffModel

#if canImport(Glibc)
import Glibc
#endif

/// The folders documents are offered from and looked for in (docs/apps.md, "Documents from any
/// app"): the user's home, and the folders handoffd.toml lists (`[documents] folders`). A folder is
/// known to the other devices by its name — its last part — so that `~/Sync` here and
/// `/data/Sync` there are one folder, as a folder Syncthing keeps on both is.
package struct DocumentFolders: Sendable, Equatable {
    package struct Root: Sendable, Equatable {
        package let name: String
        package let path: String
    }

    /// The listed folders and the home, deepest first: a file is placed in the innermost.
    package let roots: [Root]

    /// System temporary directories: nothing in them is offered, unless a folder that holds it
    /// is itself in one (a home under /tmp, as in tests).
    static let temporary = ["/tmp", "/var/tmp", "/dev/shm"]

    /// `folders` are absolute paths (handoffd.toml's, with `~/` already expanded); their names are
    /// unique and none is `home` (`DaemonSettings` checks).
    /// A home of `/` (a user without one) is no folder: it would be the whole disk.
    package init(home: String, folders: [String]) {
        var all = folders.map { Root(name: String($0.split(separator: "/").last ?? ""), path: Self.trimmed($0)) }
        if Self.trimmed(home) != "/" { all.append(Root(name: DocumentPlace.home, path: Self.trimmed(home))) }
        // By where they lead: a folder listed through a link is as deep as the folder itself.
        func depth(_ root: Root) -> Int { (Self.resolve(root.path) ?? root.path).utf8.count }
        roots = all.sorted { (depth($1), $0.path) < (depth($0), $1.path) }
    }

    private static func trimmed(_ path: String) -> String {
        var path = Substring(path)
        while path.count > 1, path.hasSuffix("/") { path = path.dropLast() }
        return String(path)
    }

    /// Where `file` is, in words the other devices understand, and its resolved path. It is
    /// resolved first (symbolic links, `..`), so a link in the home to a file elsewhere is judged
    /// by where it leads.
    package func place(of file: String) throws(DaemonError) -> (place: DocumentPlace, resolved: String) {
        guard file.hasPrefix("/") else { throw DaemonError(.notOffered, "\(file) is not an absolute path") }
        guard let resolved = Self.resolve(file) else {
            throw DaemonError(.notOffered, "\(file) does not exist (or a folder on its way cannot be read)")
        }
        for root in roots {
            guard let base = Self.resolve(root.path), let relative = Self.relative(resolved, to: base) else { continue }
            guard let place = DocumentPlace(folder: root.name, path: relative) else {
                throw DaemonError(.notOffered, "\(file) is hidden, or in a hidden folder: hidden files are never offered")
            }
            if Self.isTemporary(resolved), !Self.isTemporary(base + "/") {
                throw DaemonError(.notOffered, "\(file) is in a temporary folder: nothing there is offered")
            }
            return (place, resolved)
        }
        throw DaemonError(
            .notOffered,
            "\(file) is outside your home folder and the folders in handoffd.toml ([documents] folders): it is not offered"
        )
    }

    /// Where `place` is on this device, resolved, if this device has its folder and the file
    /// is there, inside it (no link leads out).
    package func existing(_ place: DocumentPlace) -> String? {
        guard let root = roots.first(where: { $0.name == place.folder }), let base = Self.resolve(root.path),
            let resolved = Self.resolve(base + "/" + place.path), let relative = Self.relative(resolved, to: base),
            DocumentPlace(folder: place.folder, path: relative) != nil
        else { return nil }
        return resolved
    }

    /// Whether `resolved` (a resolved path) is still where `place` says, inside its folder.
    package func holds(_ resolved: String, at place: DocumentPlace) -> Bool {
        existing(place) == resolved
    }

    static func relative(_ path: String, to base: String) -> String? {
        let prefix = base == "/" ? "/" : base + "/"
        guard path.hasPrefix(prefix), path.utf8.count > prefix.utf8.count else { return nil }
        return String(path.dropFirst(prefix.count))
    }

    static func isTemporary(_ path: String) -> Bool {
        temporary.contains { path == $0 || path.hasPrefix($0 + "/") }
    }

    /// The path with every link and `.`/`..` resolved; nil if it does not exist.
    static func resolve(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
