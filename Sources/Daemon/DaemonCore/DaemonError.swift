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
    /// (`DaemonAccounts`' `noAccount`, `DaemonStreams`' `unknownStream`…). A failure a client can
    /// act on is made from the local API's code it is answered with (docs/local-api.md), so the
    /// compiler checks the name; a failure of the daemon itself, like `alreadyRunning`, is
    /// `internal` and answered as `internal_error`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// What the local API answers; nil for the daemon's own failures.
        public let api: APIErrorCode?
        /// The code's name, as logs and handoffd's exit message show it.
        public let rawValue: String

        /// A failure answered under `api`'s code.
        public init(_ api: APIErrorCode) {
            self.api = api
            rawValue = api.rawValue
        }

        /// A failure of the daemon itself (never a request's): answered as `internal_error`.
        public init(internal name: String) {
            api = nil
            rawValue = name
        }

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
        self.init(Code(APIErrorCode(error.code)), error.message)
    }

    /// The message, and its cause in words (never NIO's text of it).
    public var description: String {
        if let cause { return "\(message) (\(SocketErrorText.describe(cause)))" }
        return message
    }
}

// Failures of the daemon itself, at start or reload: handoffd prints them and exits.
extension DaemonError.Code {
    public static let alreadyRunning = Self(internal: "already_running")
    public static let unsafeDirectory = Self(internal: "unsafe_directory")
    public static let io = Self(internal: "io")
    public static let socket = Self(internal: "socket")
    public static let configuration = Self(internal: "configuration")
    /// `--create-account` or `--join` could not be done (`make run`'s first use).
    public static let firstUse = Self(internal: "first_use")
}

// Failures of one request, common to every feature.
extension DaemonError.Code {
    public static let badRequest = Self(.badRequest)
    public static let internalError = Self(.internalError)
    public static let noCurrentActivity = Self(.noCurrentActivity)
    public static let activityChanged = Self(.activityChanged)
    public static let typeImmutable = Self(.typeImmutable)
    public static let expired = Self(.expired)
    public static let badPeerAddress = Self(.badPeerAddress)
}

extension APIErrorCode {
    /// The one place a daemon's code becomes the local API's: the one it was made from, or
    /// `internal_error` for the daemon's own failures.
    public init(_ code: DaemonError.Code) {
        self = code.api ?? .internalError
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
