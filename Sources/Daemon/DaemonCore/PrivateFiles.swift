#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffModel
import HandoffSystem

#if canImport(Glibc)
import Glibc
#endif

/// Directories and files only their owner may read: the state directory (0700) and what is in it
/// (0600), and the runtime directory holding the socket.
public enum PrivateFiles {
    /// Creates `path` (and missing parents, 0700) or checks an existing one: it must be a directory
    /// owned by us; its mode is tightened to 0700 if it is looser.
    public static func ensureDirectory(_ path: String) throws(DaemonError) {
        var st = stat()
        if lstat(path, &st) != 0 {
            guard errno == ENOENT else {
                throw DaemonError(.io, "cannot inspect \(path)", cause: SystemCallError(call: "lstat", errno: errno))
            }
            let parent = parentDirectory(of: path)
            if parent != path, parent != "/" { try ensureParent(parent) }
            guard mkdir(path, 0o700) == 0 || errno == EEXIST else {
                throw DaemonError(.io, "cannot create directory \(path)", cause: SystemCallError(call: "mkdir", errno: errno))
            }
            guard lstat(path, &st) == 0 else {
                throw DaemonError(.io, "cannot inspect \(path)", cause: SystemCallError(call: "lstat", errno: errno))
            }
        }
        guard st.st_mode & S_IFMT == S_IFDIR else {
            throw DaemonError(.unsafeDirectory, "\(path) exists but is not a directory; move it away and start handoffd again")
        }
        guard st.st_uid == geteuid() else {
            throw DaemonError(
                .unsafeDirectory,
                "\(path) belongs to uid \(st.st_uid), not to this user (uid \(geteuid())); remove it, or point XDG_RUNTIME_DIR / XDG_STATE_HOME elsewhere"
            )
        }
        if st.st_mode & 0o077 != 0 {
            guard chmod(path, 0o700) == 0 else {
                throw DaemonError(.io, "cannot make \(path) private", cause: SystemCallError(call: "chmod", errno: errno))
            }
        }
    }

    /// Parents are ordinary directories (e.g. ~/.local/state): created 0700 if missing, left alone
    /// if present.
    private static func ensureParent(_ path: String) throws(DaemonError) {
        var st = stat()
        if stat(path, &st) == 0 { return }
        let parent = parentDirectory(of: path)
        if parent != path, parent != "/" { try ensureParent(parent) }
        guard mkdir(path, 0o700) == 0 || errno == EEXIST else {
            throw DaemonError(.io, "cannot create directory \(path)", cause: SystemCallError(call: "mkdir", errno: errno))
        }
    }

    package static func parentDirectory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// Replaces `path` so that a reader (or a crash at any instant) sees either the old content or
    /// the new, never a mix: write a temp file in the same directory, fsync, rename, fsync the directory.
    /// Not `durable` (a cache): no fsync — after a power loss the file may be the old one or empty,
    /// never a mix of two.
    public static func writeAtomically(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600, durable: Bool = true) throws(DaemonError) {
        let temp = "\(path).tmp-\(getpid())"
        let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode)
        guard fd >= 0 else {
            let failure = SystemCallError(call: "open", errno: errno)
            throw noSpace(failure, path) ?? DaemonError(.io, "cannot write \(temp)", cause: failure)
        }
        var failure: SystemCallError?
        var offset = 0
        while offset < bytes.count, failure == nil {
            let n = bytes.withUnsafeBytes { raw in SystemCall.retrying { write(fd, raw.baseAddress! + offset, bytes.count - offset) } }
            if n < 0 {
                failure = SystemCallError(call: "write", errno: errno)
            } else {
                offset += n
            }
        }
        if failure == nil, fchmod(fd, mode) != 0 { failure = SystemCallError(call: "fchmod", errno: errno) }
        if failure == nil, durable, fsync(fd) != 0 { failure = SystemCallError(call: "fsync", errno: errno) }
        close(fd)
        if failure == nil, rename(temp, path) != 0 { failure = SystemCallError(call: "rename", errno: errno) }
        if let failure {
            unlink(temp)
            throw noSpace(failure, path) ?? DaemonError(.io, "cannot save \(path)", cause: failure)
        }
        if durable { syncDirectory(of: path) }
    }

    /// A full disk (or quota) said so, and that nothing was lost: the previous file is untouched.
    private static func noSpace(_ failure: SystemCallError, _ path: String) -> DaemonError? {
        guard failure.errno == ENOSPC || failure.errno == EDQUOT else { return nil }
        return DaemonError(
            .io,
            "no space left on the disk that holds \(parentDirectory(of: path)) — nothing was changed there (the previous state stays); free some space and try again"
        )
    }

    /// Makes a rename or unlink in `path`'s directory durable.
    public static func syncDirectory(of path: String) {
        let dir = open(parentDirectory(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dir >= 0 {
            fsync(dir)
            close(dir)
        }
    }

    /// The whole file, or nil if it does not exist.
    public static func read(_ path: String, maximumSize: Int) throws(DaemonError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw DaemonError(.io, "cannot read \(path)", cause: SystemCallError(call: "open", errno: errno))
        }
        defer { close(fd) }
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { raw in SystemCall.retrying { Glibc.read(fd, raw.baseAddress!, raw.count) } }
            if n < 0 {
                throw DaemonError(.io, "cannot read \(path)", cause: SystemCallError(call: "read", errno: errno))
            }
            if n == 0 { return result }
            result += chunk[0..<n]
            guard result.count <= maximumSize else {
                throw DaemonError(.io, "\(path) is larger than \(maximumSize) bytes")
            }
        }
    }

    public static func remove(_ path: String) {
        unlink(path)
    }

    /// Removes the regular files of `directory` whose names `matching` takes and that were last
    /// written more than `seconds` before `now`: what a crash or an old run left behind.
    public static func removeStale(in directory: String, olderThan seconds: Int64, now: Timestamp, matching: (String) -> Bool) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for name in names where matching(name) {
            var st = stat()
            let path = directory + "/" + name
            if lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFREG, now.microsecondsSinceEpoch / 1_000_000 - Int64(st.st_mtim.tv_sec) > seconds {
                unlink(path)
            }
        }
    }

    /// Moves an unreadable file aside rather than deleting it: a newer version may have written it,
    /// and the user may want it back.
    public static func quarantine(_ path: String) -> String {
        let aside = "\(path).unreadable"
        rename(path, aside)
        return aside
    }
}
