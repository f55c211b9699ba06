#if canImport(Glibc)
import Glibc
#endif

/// A path as a Unix-socket address (`sockaddr_un`), which Glibc leaves to be filled byte by byte.
public enum UnixSocketAddress {
    /// Runs `body` with `path` as a socket address; nil when the path is too long for one.
    /// Inlinable, so that it is specialised where it is called: generic, it made the runtime
    /// build pointer types' metadata on every handoffctl run (docs/benchmarks.md, "handoffctl's
    /// share of continue").
    @inlinable
    public static func with<T>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}

/// What handoffd reads or writes itself for a continuation stream (the file socket): a regular
/// file, or /dev/null. Their reads and writes always end; a pipe's or a terminal's may wait for
/// ever, so those go through the app (handoffctl) instead. Both sides decide with this.
public enum HandedOverFile {
    public static func isAccepted(_ fd: Int32) -> Bool {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return false }
        switch st.st_mode & S_IFMT {
        case S_IFREG: return true
        case S_IFCHR: return st.st_rdev == devNull
        default: return false
        }
    }

    private static let devNull: UInt = {
        var st = stat()
        return stat("/dev/null", &st) == 0 ? UInt(st.st_rdev) : UInt.max
    }()
}
