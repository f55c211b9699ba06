/// Why an activity, or an encoding of one, was refused. Messages are written for the person who
/// typed the command: they name the field and say what would be accepted.
public struct ActivityError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        /// `type` is not reverse-DNS or too long.
        case invalidType = "invalid_type"
        /// `title` too long or holds control characters.
        case invalidTitle = "invalid_title"
        /// `webpageURL` is not an http(s) URL.
        case invalidWebpageURL = "invalid_webpage_url"
        /// A userInfo key or value is not acceptable (bad URL value, nesting too deep, empty key…).
        case invalidValue = "invalid_value"
        /// A key named in `requiredUserInfoKeys` is absent from `userInfo`.
        case missingRequiredKey = "missing_required_key"
        /// The encoded activity is larger than the configured hard cap.
        case payloadTooLarge = "payload_too_large"
        /// `expirationDate` is not in the future.
        case expired = "expired"
        /// Bytes that are not a well-formed encoding.
        case malformedEncoding = "malformed_encoding"
        /// A well-formed encoding of a version this build does not know.
        case unsupportedVersion = "unsupported_version"
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

/// Sizes the product promises (docs/activity-encoding.md). Only the hard cap is configurable.
public struct ActivityLimits: Sendable, Equatable {
    public static let maximumTypeBytes = 128
    public static let maximumTitleBytes = 256
    /// Above this `become-current` warns, as Apple advises for NSUserActivity payloads.
    public static let warningEncodedSize = 3 * 1024
    public static let defaultMaximumEncodedSize = 64 * 1024

    /// The hard cap on the encoded activity; over it nothing is stored or sent.
    public var maximumEncodedSize: Int

    public init(maximumEncodedSize: Int = ActivityLimits.defaultMaximumEncodedSize) {
        self.maximumEncodedSize = maximumEncodedSize
    }

    /// The advice for an activity of `size` encoded bytes, which every way of making one current
    /// passes on (handoffctl, the local API, HandoffKit, D-Bus): none up to `warningEncodedSize`.
    public static func warnings(encodedSize size: Int) -> [String] {
        guard size > warningEncodedSize else { return [] }
        return [
            "the activity encodes to \(size) bytes, more than \(warningEncodedSize / 1024) KiB; keep activities small and move bulk data into a continuation stream"
        ]
    }
}
