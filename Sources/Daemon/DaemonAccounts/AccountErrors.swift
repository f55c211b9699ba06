import DaemonCore
import HandoffAPI

// What the account's services fail with (DaemonError explains codes).
extension DaemonError.Code {
    package static let noAccount = Self(.noAccount)
    package static let accountExists = Self(.accountExists)
    package static let invalidCode = Self(.invalidCode)
    package static let codeRejected = Self(.codeRejected)
    package static let inviteExpired = Self(.inviteExpired)
    package static let inviteUsed = Self(.inviteUsed)
    package static let notAccountAdmin = Self(.notAccountAdmin)
    package static let unknownDevice = Self(.unknownDevice)
    package static let invalidLink = Self(.invalidLink)
    package static let ambiguousDevice = Self(.ambiguousDevice)
    package static let revoked = Self(.revoked)
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
