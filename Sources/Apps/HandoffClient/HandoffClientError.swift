import HandoffAPI

/// Why a local-API call failed: the daemon said no (`api`), or we could not reach it at all.
public struct HandoffClientError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable, Equatable {
        /// No daemon is listening on the socket (absent, or a dead daemon's file).
        case daemonNotRunning
        /// The socket exists but this user may not connect to it.
        case permissionDenied
        /// The daemon answered with something that is not the local API.
        case protocolError
        /// The daemon did not answer in time.
        case timeout
        /// The daemon refused the request; the code says why.
        case api(APIErrorCode)
    }

    public var code: Code
    public var message: String
    public var cause: (any Error & Sendable)?

    public init(_ code: Code, _ message: String, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    public var description: String { message }
}
