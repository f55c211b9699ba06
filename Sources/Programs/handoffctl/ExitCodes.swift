import HandoffAPI
import HandoffClient

/// handoffctl's exit statuses: one per failure a user or a script may want to tell apart.
/// Documented in `handoffctl --help` and docs/cli.md; never renumber one that shipped.
enum ExitStatus: Int32, CaseIterable {
    case success = 0
    case failure = 1
    case daemonNotRunning = 3
    case permissionDenied = 4
    case timeout = 5
    case invalidType = 10
    case badValueSyntax = 11
    case missingRequiredKey = 12
    case payloadTooLarge = 13
    case invalidWebpageURL = 14
    case invalidActivity = 15
    case noCurrentActivity = 16
    case activityChanged = 17
    case expired = 18
    case noAccount = 20
    case accountExists = 21
    case invalidCode = 22
    case codeRejected = 23
    case inviteExpired = 24
    case inviteUsed = 25
    case notAccountAdmin = 26
    case unknownDevice = 27
    case unreachable = 30
    case refused = 31
    case revoked = 32
    case versionMismatch = 33
    case rateLimited = 34
    case unknownPeer = 35
    case noHandler = 36
    case handlerFailed = 37
    case streamsUnsupported = 38
    case streamRefused = 39
    case streamFailed = 40
    case unknownStream = 41
    case problemsFound = 42
    case handoffOff = 43
    case notOffered = 44
    case documentMismatch = 45
    case invalidLink = 46
    case notSaved = 47
    case clipboardOff = 48
    case noClipboard = 49
    /// ArgumentParser's own status for unknown flags and missing arguments (EX_USAGE).
    case usage = 64

    var meaning: String {
        switch self {
        case .success: "success"
        case .failure: "unexpected failure (see the message)"
        case .daemonNotRunning: "handoffd is not running"
        case .permissionDenied: "not allowed to use this handoffd"
        case .timeout: "handoffd (or the running app it asked) did not answer in time"
        case .invalidType: "the activity type is not reverse-DNS"
        case .badValueSyntax: "a value could not be parsed (--info, --info-json, --expires-in…)"
        case .missingRequiredKey: "a required userInfo key is missing"
        case .payloadTooLarge: "the activity is larger than the limit"
        case .invalidWebpageURL: "the webpage URL is not http(s)"
        case .invalidActivity: "another activity field is invalid (title, a value, expiry in the past…)"
        case .noCurrentActivity: "there is no current activity"
        case .activityChanged: "the activity changed meanwhile"
        case .expired: "the activity expired"
        case .noAccount: "this device has no account yet"
        case .accountExists: "this device already has an account"
        case .invalidCode: "the invite or recovery code has a typo"
        case .codeRejected: "the invite or recovery code was not accepted"
        case .inviteExpired: "the invite code or the key offer expired"
        case .inviteUsed: "the invite code was already used"
        case .notAccountAdmin: "only the device holding the account key may do that"
        case .unknownDevice: "no such device in the account (or the prefix is ambiguous)"
        case .unreachable: "the other device cannot be reached"
        case .refused: "the other device is not in this account, or refused this one"
        case .revoked: "a device involved has been removed from the account"
        case .versionMismatch: "the other device speaks another protocol version"
        case .rateLimited: "too many attempts; wait and try again"
        case .unknownPeer: "no device of the account has that name or id"
        case .noHandler: "no application here handles the activity's type (and it has no web page)"
        case .handlerFailed: "the app or browser for the activity could not be started, or the running app refused it"
        case .streamsUnsupported: "the activity does not offer continuation streams"
        case .streamRefused: "the other device refused the stream (no app serves it, or it was not continued)"
        case .streamFailed: "the continuation stream broke before it ended"
        case .unknownStream: "no such stream or continuation on this device (they last until handoffd restarts)"
        case .problemsFound: "handoffctl doctor found something to fix"
        case .handoffOff: "handoff is off on this device (handoffctl config handoff on)"
        case .notOffered: "the file may not be offered (outside your home and [documents] folders, hidden, temporary or too large)"
        case .documentMismatch: "the document that came is not the one offered; it was discarded"
        case .invalidLink: "not a handoff: link of this account (or made before its secret changed twice)"
        case .notSaved: "the linked activity is neither current on its device nor in this device's history"
        case .clipboardOff: "the clipboard is not shared on this device (handoffctl clipboard on)"
        case .noClipboard: "no copy from another device to paste (none, or it ran out)"
        case .usage: "wrong command-line usage"
        }
    }

    init(_ code: APIErrorCode) {
        switch code {
        case .invalidType: self = .invalidType
        case .missingRequiredKey: self = .missingRequiredKey
        case .payloadTooLarge, .requestTooLarge: self = .payloadTooLarge
        case .invalidWebpageURL: self = .invalidWebpageURL
        case .invalidTitle, .invalidValue, .typeImmutable: self = .invalidActivity
        case .badRequest, .malformedEncoding: self = .badValueSyntax
        case .noCurrentActivity: self = .noCurrentActivity
        case .activityChanged: self = .activityChanged
        case .expired: self = .expired
        case .forbidden, .forbiddenOrigin: self = .permissionDenied
        case .noAccount: self = .noAccount
        case .accountExists: self = .accountExists
        case .invalidCode: self = .invalidCode
        case .codeRejected: self = .codeRejected
        case .inviteExpired: self = .inviteExpired
        case .inviteUsed: self = .inviteUsed
        case .notAccountAdmin: self = .notAccountAdmin
        case .unknownDevice, .ambiguousDevice: self = .unknownDevice
        case .badPeerAddress: self = .badValueSyntax
        case .unreachable: self = .unreachable
        case .refused: self = .refused
        case .revoked: self = .revoked
        case .versionMismatch: self = .versionMismatch
        case .rateLimited: self = .rateLimited
        case .unknownPeer: self = .unknownPeer
        case .timeout: self = .timeout
        case .handoffOff: self = .handoffOff
        case .notOffered: self = .notOffered
        case .documentMismatch: self = .documentMismatch
        case .invalidLink: self = .invalidLink
        case .notSaved: self = .notSaved
        case .clipboardOff: self = .clipboardOff
        case .noClipboard: self = .noClipboard
        case .noHandler: self = .noHandler
        case .handlerFailed: self = .handlerFailed
        case .streamsUnsupported: self = .streamsUnsupported
        case .streamRefused: self = .streamRefused
        case .unknownStream, .unknownContinuation: self = .unknownStream
        case .invalidAppID, .invalidWindowID: self = .badValueSyntax
        // Apps' own requests (HandoffKit); no command of handoffctl makes them.
        case .unknownRegistration, .tooManyApps, .tooManyWindows: self = .failure
        case .notFound, .methodNotAllowed, .unsupportedVersion, .internalError, .unknown: self = .failure
        }
    }

    init(_ code: HandoffClientError.Code) {
        switch code {
        case .daemonNotRunning: self = .daemonNotRunning
        case .permissionDenied: self = .permissionDenied
        case .timeout: self = .timeout
        case .protocolError: self = .failure
        case .api(let apiCode): self.init(apiCode)
        }
    }

    /// The table for `--help`.
    static var table: String {
        allCases.map { "  \(String($0.rawValue).padding(to: 4))\($0.meaning)" }.joined(separator: "\n")
    }
}

/// A failure to report and exit with: one line on stderr, a distinct status.
struct CLIError: Error {
    var status: ExitStatus
    var message: String

    init(_ status: ExitStatus, _ message: String) {
        self.status = status
        self.message = message
    }

    init(_ error: HandoffClientError) {
        self.init(ExitStatus(error.code), error.message)
    }
}

extension String {
    /// Left-aligned in a column of `width` (longer text is left as is).
    func padding(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
