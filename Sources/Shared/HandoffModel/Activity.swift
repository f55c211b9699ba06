#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What an application says about the activity it wants continued: the fields an app sets on
/// `NSUserActivity`. The daemon wraps it in an `Activity` with the fields it assigns.
public struct ActivityContent: Sendable, Equatable {
    /// Reverse-DNS, e.g. `com.example.editor.edit`. Immutable once an activity is created.
    public var type: String
    public var title: String
    public var userInfo: [String: ActivityValue]
    /// Keys that must be present in `userInfo`; kept sorted so the encoding is canonical.
    public var requiredUserInfoKeys: [String]
    /// http or https only; the receiver's browser opens it when no application handles `type`.
    public var webpageURL: String?
    public var targetContentIdentifier: String?
    public var persistentIdentifier: String?
    public var expirationDate: Timestamp?
    public var supportsContinuationStreams: Bool
    /// Set by an attached app: ask it for fresh state (`willSave`) before a peer receives this.
    public var needsSave: Bool

    public init(
        type: String,
        title: String = "",
        userInfo: [String: ActivityValue] = [:],
        requiredUserInfoKeys: [String] = [],
        webpageURL: String? = nil,
        targetContentIdentifier: String? = nil,
        persistentIdentifier: String? = nil,
        expirationDate: Timestamp? = nil,
        supportsContinuationStreams: Bool = false,
        needsSave: Bool = false
    ) {
        self.type = type
        self.title = title
        self.userInfo = userInfo
        self.requiredUserInfoKeys = Array(Set(requiredUserInfoKeys)).sorted(by: ActivityContent.byteOrder)
        self.webpageURL = webpageURL
        self.targetContentIdentifier = targetContentIdentifier
        self.persistentIdentifier = persistentIdentifier
        self.expirationDate = expirationDate
        self.supportsContinuationStreams = supportsContinuationStreams
        self.needsSave = needsSave
    }

    /// The order used for every set of strings we encode: UTF-8 bytes, so that all implementations
    /// agree (Swift's own `<` on String follows Unicode canonical ordering, which other languages don't).
    public static func byteOrder(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }
}

/// The current activity as the daemon holds, stores and sends it.
@dynamicMemberLookup
public struct Activity: Sendable, Equatable {
    public var id: UUID
    public var content: ActivityContent
    public var createdAt: Timestamp
    public var updatedAt: Timestamp
    /// The device id of the daemon that published it (set once accounts exist).
    public var originDevice: String?

    public init(
        id: UUID = UUID(),
        content: ActivityContent,
        createdAt: Timestamp,
        updatedAt: Timestamp? = nil,
        originDevice: String? = nil
    ) {
        self.id = id
        self.content = content
        self.createdAt = createdAt
        self.updatedAt = updatedAt ?? createdAt
        self.originDevice = originDevice
    }

    public subscript<T>(dynamicMember keyPath: WritableKeyPath<ActivityContent, T>) -> T {
        get { content[keyPath: keyPath] }
        set { content[keyPath: keyPath] = newValue }
    }

    public func isExpired(at now: Timestamp) -> Bool {
        guard let expiry = content.expirationDate else { return false }
        return expiry <= now
    }
}

extension UUID {
    /// Lower-case, as Linux tools (systemd, util-linux) print UUIDs; used in JSON, logs and the CLI.
    public var lowercasedString: String { uuidString.lowercased() }
}
