import HandoffAPI
import HandoffModel
import HandoffSystem

/// The daemon's one error type: what every service throws, from a refused request to a socket
/// that would not bind. It names what went wrong in a sentence for people, advice included, and a
/// code for programs. Services never see the local API's contract errors: the API edge
/// (DaemonLocalAPI) maps a `DaemonError` to an answer, and `APIErrorCode.init(_:)` below is the
/// one place a code becomes the contract's.
public struct DaemonError: Error, Sendable, CustomStringConvertible {
    /// Extensible: each feature module declares the codes it fails with in an extension of its own
    /// (`DaemonAccounts`' `noAccount`, `DaemonStreams`' `unknownStream`…). A code whose raw value is
    /// a code of the local API (docs/local-api.md) is answered as that code; any other — a failure
    /// of the daemon itself, like `alreadyRunning` — as `internal_error`.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }
    }

    public var code: Code
    public var message: String
    public var cause: (any Error & Sendable)?

    public init(_ code: Code, _ message: String, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    /// An activity the model refused, under the model's own code.
    public init(_ error: ActivityError) {
        self.init(Code(rawValue: error.code.rawValue), error.message)
    }

    /// The message, and its cause in words (never NIO's text of it).
    public var description: String {
        if let cause { return "\(message) (\(SocketErrorText.describe(cause)))" }
        return message
    }
}

// Failures of the daemon itself, at start or reload: handoffd prints them and exits.
extension DaemonError.Code {
    public static let alreadyRunning = Self(rawValue: "already_running")
    public static let unsafeDirectory = Self(rawValue: "unsafe_directory")
    public static let io = Self(rawValue: "io")
    public static let socket = Self(rawValue: "socket")
    public static let configuration = Self(rawValue: "configuration")
    /// `--create-account` or `--join` could not be done (`make run`'s first use).
    public static let firstUse = Self(rawValue: "first_use")
}

// Failures of one request, common to every feature.
extension DaemonError.Code {
    public static let badRequest = Self(rawValue: "bad_request")
    public static let internalError = Self(rawValue: "internal_error")
    public static let noCurrentActivity = Self(rawValue: "no_current_activity")
    public static let activityChanged = Self(rawValue: "activity_changed")
    public static let typeImmutable = Self(rawValue: "type_immutable")
    public static let expired = Self(rawValue: "expired")
    public static let badPeerAddress = Self(rawValue: "bad_peer_address")
}

extension APIErrorCode {
    /// The one place a daemon's code becomes the local API's: same name, or `internal_error`.
    public init(_ code: DaemonError.Code) {
        self = APIErrorCode(rawValue: code.rawValue) ?? .internalError
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
