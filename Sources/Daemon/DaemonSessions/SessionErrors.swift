import DaemonCore

// What talking to other devices fails with (DaemonError explains codes).
extension DaemonError.Code {
    package static let unknownPeer = Self(.unknownPeer)
    package static let unreachable = Self(.unreachable)
    /// The other device is not in our account, or we are not in its.
    package static let refused = Self(.refused)
    package static let rateLimited = Self(.rateLimited)
    package static let versionMismatch = Self(.versionMismatch)
    package static let timeout = Self(.timeout)
}
