import DaemonCore

// What continuation streams fail with (DaemonError explains codes).
extension DaemonError.Code {
    package static let unknownContinuation = Self(rawValue: "unknown_continuation")
    package static let unknownStream = Self(rawValue: "unknown_stream")
    package static let streamsUnsupported = Self(rawValue: "streams_unsupported")
    package static let streamRefused = Self(rawValue: "stream_refused")
}
