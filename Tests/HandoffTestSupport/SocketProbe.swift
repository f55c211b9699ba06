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
}
