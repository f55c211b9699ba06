import DaemonCore

// What continuation streams fail with (DaemonError explains codes).
extension DaemonError.Code {
    package static let unknownContinuation = Self(.unknownContinuation)
    package static let unknownStream = Self(.unknownStream)
    package static let streamsUnsupported = Self(.streamsUnsupported)
    package static let streamRefused = Self(.streamRefused)
}
