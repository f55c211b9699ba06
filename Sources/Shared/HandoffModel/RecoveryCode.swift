/// The code `handoffctl account recovery-code` prints and `account recover` takes: from it — and
/// only with it — any member can restore the account's key (docs/security.md, "Losing the key
/// holder"). 128 random bits, written as an invite code is (`InviteCode`: Crockford's base32 in
/// groups of four, two check characters), so that a typo is caught before the slow key
/// derivation runs.
public struct RecoveryCode: Sendable, Equatable {
    public let secret: [UInt8]

    public init(secret: [UInt8]) {
        precondition(secret.count == InviteCode.secretLength)
        self.secret = secret
    }

    public var text: String { InviteCode(secret: secret).text }

    /// Accepts what a person types, as an invite code does; errors read `error.describe(as:
    /// "recovery code")`.
    public init(parsing text: String) throws(InviteCode.ParseError) {
        secret = try InviteCode(parsing: text).secret
    }
}
