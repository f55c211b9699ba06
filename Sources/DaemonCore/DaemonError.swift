import HandoffSystem
/// A failure of the daemon itself (not of one request): it names what went wrong and what to do.
public struct DaemonError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case alreadyRunning = "already_running"
        case unsafeDirectory = "unsafe_directory"
        case io = "io"
        case socket = "socket"
        case configuration = "configuration"
        /// `--create-account` or `--join` could not be done (`make run`'s first use).
        case firstUse = "first_use"
    }

    public var code: Code
    public var message: String
    public var cause: (any Error & Sendable)?

    public init(_ code: Code, _ message: String, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    /// The message, and its cause in words (never NIO's text of it).
    public var description: String {
        if let cause { return "\(message) (\(SocketErrorText.describe(cause)))" }
        return message
    }
}

/// An errno, named, for causes.
public struct SystemCallError: Error, Sendable, CustomStringConvertible {
    public var call: String
    public var errno: Int32

    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    public var description: String { "\(call): \(SystemCall.describe(errno))" }
}

#if canImport(Glibc)
import Glibc
#endif
