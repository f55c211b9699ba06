import HandoffModel

/// Every error the local API can answer with. The raw value is the `code` in
/// `{"error":{"code":"…","message":"…"}}`; clients branch on it, people read the message.
public enum APIErrorCode: String, Codable, Sendable, CaseIterable {
    // The request itself
    case badRequest = "bad_request"
    case notFound = "not_found"
    case methodNotAllowed = "method_not_allowed"
    case forbidden = "forbidden"
    case forbiddenOrigin = "forbidden_origin"
    case requestTooLarge = "request_too_large"

    // The activity (mirrors ActivityError.Code)
    case invalidType = "invalid_type"
    case invalidTitle = "invalid_title"
    case invalidWebpageURL = "invalid_webpage_url"
    case invalidValue = "invalid_value"
    case missingRequiredKey = "missing_required_key"
    case payloadTooLarge = "payload_too_large"
    case expired = "expired"
    case malformedEncoding = "malformed_encoding"
    case unsupportedVersion = "unsupported_version"

    // The current activity
    case noCurrentActivity = "no_current_activity"
    /// An update named an activity that is no longer current.
    case activityChanged = "activity_changed"
    /// An update tried to change the type of an existing activity.
    case typeImmutable = "type_immutable"

    // Accounts and devices
    /// This device has no account yet.
    case noAccount = "no_account"
    case accountExists = "account_exists"
    /// The invite code has a typo (its check characters do not match).
    case invalidCode = "invalid_code"
    /// The other device did not accept the code (wrong code, or no invite pending there).
    case codeRejected = "code_rejected"
    case inviteExpired = "invite_expired"
    case inviteUsed = "invite_used"
    /// Only the device holding the account's root key may invite and remove devices.
    case notAccountAdmin = "not_account_admin"
    case unknownDevice = "unknown_device"
    case ambiguousDevice = "ambiguous_device"

    // Other devices
    /// No device of the account matches the name or id given.
    case unknownPeer = "unknown_peer"
    case badPeerAddress = "bad_peer_address"
    case unreachable = "unreachable"
    /// The other device is not in our account, or we are not in its.
    case refused = "refused"
    /// This device, or the other one, has been removed from the account.
    case revoked = "revoked"
    case rateLimited = "rate_limited"
    case versionMismatch = "version_mismatch"
    case timeout = "timeout"
    /// Handoff is off on this device (`handoffctl config handoff on` turns it on).
    case handoffOff = "handoff_off"

    // The clipboard (docs/clipboard.md)
    /// The clipboard is not shared on this device (`handoffctl clipboard on`).
    case clipboardOff = "clipboard_off"
    /// No copy from another device to paste (none, it ran out, or a newer one replaced it).
    case noClipboard = "no_clipboard"

    // Continuations and streams
    /// No app on this device declares the activity's type, and it has no web page.
    case noHandler = "no_handler"
    /// The app (or browser) could not be started, or failed at once.
    case handlerFailed = "handler_failed"
    /// No such continuation (or stream) on this device; they last until handoffd restarts.
    case unknownContinuation = "unknown_continuation"
    case unknownStream = "unknown_stream"
    /// The activity does not offer continuation streams.
    case streamsUnsupported = "streams_unsupported"
    /// The originating device or app did not take the stream.
    case streamRefused = "stream_refused"

    // Documents (docs/apps.md, "Documents from any app")
    /// The file may not be offered: outside the home folder and the configured folders, hidden,
    /// in a temporary directory, not a regular file, or over `[documents] max_size`.
    case notOffered = "not_offered"
    /// The document that came is not the one offered (its size or SHA-256 differs): discarded.
    case documentMismatch = "document_mismatch"

    // Links to activities (docs/apps.md, "Links")
    /// Not a `handoff:` link, or one this account's devices did not make (or made before the
    /// account's secret changed twice).
    case invalidLink = "invalid_link"
    /// The linked activity is neither current on its device nor in this device's history.
    case notSaved = "not_saved"

    // Apps and windows (docs/apps.md)
    /// An app id that is not a reverse-DNS name (like org.example.Notes).
    case invalidAppID = "invalid_app_id"
    /// A window id that is empty or longer than 64 bytes.
    case invalidWindowID = "invalid_window_id"
    /// No app is registered under that registration (it quit, or handoffd restarted).
    case unknownRegistration = "unknown_registration"
    /// Too many apps registered, or windows kept, at once.
    case tooManyApps = "too_many_apps"
    case tooManyWindows = "too_many_windows"

    case internalError = "internal_error"
    /// A code this client does not know (sent by a newer daemon).
    case unknown = "unknown"

    public init(from decoder: any Decoder) throws {
        let raw = try decoder.singleValueContainer().decode(String.self)
        self = APIErrorCode(rawValue: raw) ?? .unknown
    }

    public init(_ code: ActivityError.Code) {
        switch code {
        case .invalidType: self = .invalidType
        case .invalidTitle: self = .invalidTitle
        case .invalidWebpageURL: self = .invalidWebpageURL
        case .invalidValue: self = .invalidValue
        case .missingRequiredKey: self = .missingRequiredKey
        case .payloadTooLarge: self = .payloadTooLarge
        case .expired: self = .expired
        case .malformedEncoding: self = .malformedEncoding
        case .unsupportedVersion: self = .unsupportedVersion
        }
    }

    /// The HTTP status the daemon answers with.
    public var httpStatus: Int {
        switch self {
        case .badRequest, .malformedEncoding, .unknown: 400
        case .forbidden, .forbiddenOrigin: 403
        case .notFound, .noCurrentActivity: 404
        case .methodNotAllowed: 405
        case .activityChanged, .typeImmutable: 409
        case .requestTooLarge, .payloadTooLarge: 413
        case .invalidType, .invalidTitle, .invalidWebpageURL, .invalidValue, .missingRequiredKey, .expired,
            .unsupportedVersion:
            422
        case .noAccount, .unknownDevice, .unknownPeer, .unknownContinuation, .unknownStream, .noHandler: 404
        case .streamsUnsupported, .streamRefused: 409
        case .handlerFailed: 500
        case .notOffered: 403
        case .documentMismatch: 502
        case .invalidLink: 400
        case .notSaved: 404
        case .accountExists, .inviteUsed, .ambiguousDevice, .handoffOff, .clipboardOff: 409
        case .noClipboard: 404
        case .invalidCode, .badPeerAddress: 400
        case .codeRejected, .refused, .revoked, .notAccountAdmin: 403
        case .inviteExpired: 410
        case .rateLimited, .tooManyApps, .tooManyWindows: 429
        case .invalidAppID, .invalidWindowID: 422
        case .unknownRegistration: 404
        case .unreachable, .versionMismatch: 502
        case .timeout: 504
        case .internalError: 500
        }
    }
}

/// The body of every error response.
public struct APIErrorBody: Codable, Sendable, Equatable {
    public struct Detail: Codable, Sendable, Equatable {
        public var code: APIErrorCode
        public var message: String
    }

    public var error: Detail

    public init(code: APIErrorCode, message: String) {
        self.error = Detail(code: code, message: message)
    }

    public init(_ e: ActivityError) {
        self.init(code: APIErrorCode(e.code), message: e.message)
    }
}

/// The version every component reports; bumped with each release.
public enum HandoffVersion {
    public static let current = "0.1.0"
}
