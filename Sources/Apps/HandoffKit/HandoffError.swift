import HandoffAPI
import HandoffClient

/// What went wrong, for an app: a code to branch on and one line for a person that says what to
/// do. Every failure of HandoffKit is one of these (docs/handoffkit.md, "Errors").
public struct HandoffError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: Sendable, Equatable {
        /// handoffd is not running for this user (start it: `systemctl --user start handoffd`).
        /// HandoffKit keeps what the app set and hands it over when handoffd is back.
        case handoffdNotRunning
        /// The socket belongs to someone else, or this process may not use it.
        case permissionDenied
        /// The activity is not valid: a bad type, title or URL, a missing required key, too
        /// large, expired (`APIErrorCode` says which).
        case invalidActivity(APIErrorCode)
        /// `invalidate()` was called: make a new activity.
        case invalidated
        /// The app, its windows or its activities are over handoffd's bounds (docs/apps.md).
        case tooMany(APIErrorCode)
        /// The continuation is gone: it timed out, or went elsewhere.
        case unknownContinuation
        /// The other device's activity does not offer streams, or nobody there took this one.
        case streamRefused(APIErrorCode)
        /// The other device could not be reached.
        case unreachable
        /// handoffd, or the other device, did not answer in time.
        case timeout
        /// handoffd answered something this HandoffKit does not understand (another version).
        case versionMismatch
        /// Anything else handoffd refused, with its code.
        case refused(APIErrorCode)
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    /// The one place a local-API failure becomes an app's error.
    init(_ error: HandoffClientError) {
        switch error.code {
        case .daemonNotRunning: self.init(.handoffdNotRunning, error.message)
        case .permissionDenied: self.init(.permissionDenied, error.message)
        case .protocolError: self.init(.versionMismatch, error.message)
        case .timeout: self.init(.timeout, error.message)
        case .api(.forbidden): self.init(.permissionDenied, error.message)
        case .api(let code): self.init(Self.code(of: code), error.message)
        }
    }

    static func code(of api: APIErrorCode) -> Code {
        switch api {
        case .invalidType, .invalidTitle, .invalidWebpageURL, .invalidValue, .missingRequiredKey, .expired, .payloadTooLarge, .requestTooLarge,
            .typeImmutable, .malformedEncoding, .invalidWindowID, .invalidAppID:
            .invalidActivity(api)
        case .tooManyApps, .tooManyWindows, .rateLimited: .tooMany(api)
        case .unknownContinuation: .unknownContinuation
        case .streamsUnsupported, .streamRefused: .streamRefused(api)
        case .unreachable: .unreachable
        case .timeout: .timeout
        case .versionMismatch, .unsupportedVersion: .versionMismatch
        default: .refused(api)
        }
    }
}
