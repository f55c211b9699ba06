import DaemonCore

// What talking to other devices fails with (DaemonError explains codes).
extension DaemonError.Code {
    package static let unknownPeer = Self(rawValue: "unknown_peer")
    package static let unreachable = Self(rawValue: "unreachable")
    /// The other device is not in our account, or we are not in its.
    package static let refused = Self(rawValue: "refused")
    package static let rateLimited = Self(rawValue: "rate_limited")
    package static let versionMismatch = Self(rawValue: "version_mismatch")
    package static let timeout = Self(rawValue: "timeout")
}
