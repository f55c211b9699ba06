import DaemonCore
import HandoffAPI

// What the account's services fail with (DaemonError explains codes).
extension DaemonError.Code {
    package static let noAccount = Self(rawValue: "no_account")
    package static let accountExists = Self(rawValue: "account_exists")
    package static let invalidCode = Self(rawValue: "invalid_code")
    package static let codeRejected = Self(rawValue: "code_rejected")
    package static let inviteExpired = Self(rawValue: "invite_expired")
    package static let inviteUsed = Self(rawValue: "invite_used")
    package static let notAccountAdmin = Self(rawValue: "not_account_admin")
    package static let unknownDevice = Self(rawValue: "unknown_device")
    package static let ambiguousDevice = Self(rawValue: "ambiguous_device")
    package static let revoked = Self(rawValue: "revoked")
}

// Failures more than one service reports, with their advice written once.
extension DaemonError {
    package static let noAccount = DaemonError(
        .noAccount, "this device has no account yet; create one (handoffctl account create) or join one (handoffctl account join CODE)"
    )
    package static let alreadyMember = DaemonError(.accountExists, "this device already belongs to an account (handoffctl account show)")

    /// This device was removed from (or left) its account: by whom, when, and how to rejoin.
    package static func removed(_ removal: RemovalInfo) -> DaemonError {
        DaemonError(.revoked, "this device was \(removal.sentence); \(removal.advice)")
    }
}
