#if canImport(Glibc)
import Glibc
#endif

/// A file that came from another device — a document, a paste saved from another device's
/// clipboard — put in place under its own name in a folder the user reads (docs/apps.md,
/// "Documents from any app"; docs/clipboard.md): `report.odt`, else `report (2).odt`, … A file
/// already there is never replaced.
public enum FileKeeping {
    public enum Failure: Error, Sendable {
        /// What a system call said about `path`.
        case system(path: String, errno: Int32)
        /// 1000 files of that name are there already.
        case crowded(directory: String, name: String)
    }

    /// `partial` under `name` in `directory`, or `name (2)`, `name (3)`…: renamed where the
    /// filesystem can refuse to replace, else hard-linked (which never replaces either; `partial`
    /// then stays, for the caller to remove).
    public static func keep(_ partial: String, as name: String, in directory: String) -> Result<String, Failure> {
        for attempt in 1...1000 {
            let path = directory + "/" + numbered(name, attempt)
            if LinuxCalls.renameWithoutReplacing(partial, to: path) { return .success(path) }
            if errno == EINVAL || errno == ENOSYS {
                if link(partial, path) == 0 { return .success(path) }
            }
            guard errno == EEXIST else { return .failure(.system(path: path, errno: errno)) }
        }
        return .failure(.crowded(directory: directory, name: name))
    }

    /// `report.odt`, `report (2).odt`, `report (3).odt`…, the name shortened (its extension
    /// kept) if it, or the number, would take it over 255 bytes.
    public static func numbered(_ name: String, _ attempt: Int) -> String {
        guard attempt > 1 || name.utf8.count > 255 else { return name }
        let dot = name.lastIndex(of: ".").flatMap { $0 == name.startIndex ? nil : $0 } ?? name.endIndex
        var stem = name[..<dot]
        let suffix = (attempt > 1 ? " (\(attempt))" : "") + name[dot...]
        while stem.utf8.count + suffix.utf8.count > 255, !stem.isEmpty { stem = stem.dropLast() }
        return stem + suffix
    }

    /// `path` and each folder above it that is missing (mode 0755, as a user's folders are).
    public static func makeDirectory(_ path: String) -> Result<Void, Failure> {
        var partial = ""
        for part in path.split(separator: "/") {
            partial += "/" + part
            if mkdir(partial, 0o755) != 0, errno != EEXIST { return .failure(.system(path: partial, errno: errno)) }
        }
        return .success(())
    }
}
