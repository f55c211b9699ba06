#if canImport(Glibc)
import Glibc
#endif

/// What every system call needs, written once: trying again when a signal interrupted it, and
/// errno in words.
public enum SystemCall {
    /// Calls `body` until it does not fail with EINTR, and returns what it returned last (a
    /// negative result leaves errno set).
    @inlinable
    public static func retrying<Result: SignedInteger>(_ body: () -> Result) -> Result {
        while true {
            let result = body()
            if result >= 0 || errno != EINTR { return result }
        }
    }

    /// errno's text (strerror), e.g. "No such file or directory".
    public static func describe(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}
