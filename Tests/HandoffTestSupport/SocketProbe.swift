import HandoffSystem

#if canImport(Glibc)
import Glibc
#endif

/// What a test can tell of a connected socket without disturbing it.
public enum SocketProbe {
    /// Still connected, and nothing came from the other side (neither data nor its close): a
    /// peek that does not wait.
    public static func isOpenAndSilent(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_DONTWAIT | MSG_PEEK)) == -1 && errno == EAGAIN
    }

    /// Something listens on the Unix socket at `path`: a connection is accepted (the file alone
    /// exists from bind(2) on, and a connection before listen(2) is refused).
    public static func accepts(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return UnixSocketAddress.with(path) { connect(fd, $0, $1) } == 0
    }
}
