import DaemonCore
import HandoffAPI

/// What the local API answers a failed request with: a code of the contract (its HTTP status
/// follows) and a message. Only this module makes them — from its own checks (HTTP, who is
/// asking, the route), or from a service's `DaemonError` in `init(_:)`, the one place a daemon
/// failure becomes an answer.
struct LocalAPIError: Error, Sendable, Equatable, CustomStringConvertible {
    var code: APIErrorCode
    var message: String

    init(_ code: APIErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    init(_ failure: DaemonError) {
        self.init(APIErrorCode(failure.code), failure.description)
    }

    /// Whatever a route threw, as an answer (anything not a daemon failure is a bug, said so).
    init(answering error: any Error) {
        switch error {
        case let e as LocalAPIError: self = e
        case let e as DaemonError: self.init(e)
        default: self.init(.internalError, "the daemon failed: \(error)")
        }
    }

    var body: APIErrorBody { APIErrorBody(code: code, message: message) }
    var description: String { message }
}
