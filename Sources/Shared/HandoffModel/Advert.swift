#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a device says about itself on the network — only ever sealed (docs/discovery.md): who it
/// is, a sequence number that orders its announcements, and a summary of its current activity.
/// The same summary travels in `activityNotice` on the fast path.
public struct Advert: Sendable, Equatable {
    public var deviceID: DeviceID
    /// Grows with every change; a receiver keeps the highest it has seen.
    public var sequence: UInt64
    public var activity: ActivitySummary?

    public init(deviceID: DeviceID, sequence: UInt64, activity: ActivitySummary?) {
        self.deviceID = deviceID
        self.sequence = sequence
        self.activity = activity
    }

    static let version: UInt8 = 1

    public func encoded() -> [UInt8] {
        var w = ByteWriter()
        w.byte(Advert.version)
        w.raw(Base32.decode(deviceID.text) ?? [])
        w.varint(sequence)
        if let activity {
            w.byte(1)
            activity.encode(into: &w)
        } else {
            w.byte(0)
        }
        return w.bytes
    }

    public init?(decoding bytes: [UInt8]) {
        var r = ByteReader(bytes)
        guard (try? r.byte()) == Advert.version, let digest = try? r.take(32),
            let sequence = try? r.varint(), let hasActivity = try? r.byte()
        else { return nil }
        self.deviceID = DeviceID(digest: Array(digest))
        self.sequence = sequence
        if hasActivity == 1 {
            guard let activity = ActivitySummary(decoding: &r) else { return nil }
            self.activity = activity
        } else {
            self.activity = nil
        }
        guard r.isAtEnd else { return nil }
    }
}

/// An activity in a line: enough for `peers` to show it and for `continue` to ask for it by id.
public struct ActivitySummary: Sendable, Equatable, Codable {
    public var id: UUID
    public var type: String
    /// Possibly shortened to fit an advert (`titleTruncated`).
    public var title: String
    public var updatedAt: Timestamp
    public var expirationDate: Timestamp?
    public var supportsContinuationStreams: Bool
    public var titleTruncated: Bool
    /// It has a web page, so a device without an app for its type can still continue it in the
    /// browser (the desktop offers it). The address itself stays out of adverts.
    public var hasWebpage: Bool
    /// The activity's `targetContentIdentifier`, for the window that will take it, once known
    /// (`targetKnown`): adverts do not carry it (they stay small and sealed as they are); the
    /// sessions' `activityTarget` message does, right after each notice (docs/peer-protocol.md).
    /// Not in adverts; the local API shows it once known (`peers --json`).
    public var targetContentIdentifier: String?
    public var targetKnown = false

    /// The longest target the notice carries: a longer one is not told (the window is then
    /// known only once the activity is).
    public static let maximumTargetBytes = 512

    public init(_ a: Activity) {
        id = a.id
        type = a.type
        title = a.title
        updatedAt = a.updatedAt
        expirationDate = a.expirationDate
        supportsContinuationStreams = a.supportsContinuationStreams
        titleTruncated = false
        hasWebpage = a.content.webpageURL != nil
        if (a.content.targetContentIdentifier?.utf8.count ?? 0) <= Self.maximumTargetBytes {
            targetContentIdentifier = a.content.targetContentIdentifier
            targetKnown = true
        }
    }

    public init(
        id: UUID, type: String, title: String, updatedAt: Timestamp, expirationDate: Timestamp? = nil,
        supportsContinuationStreams: Bool = false, titleTruncated: Bool = false, hasWebpage: Bool = false
    ) {
        self.hasWebpage = hasWebpage
        self.id = id
        self.type = type
        self.title = title
        self.updatedAt = updatedAt
        self.expirationDate = expirationDate
        self.supportsContinuationStreams = supportsContinuationStreams
        self.titleTruncated = titleTruncated
    }

    /// The same summary with the title cut to at most `bytes` of UTF-8, on a character boundary.
    public func truncatingTitle(to bytes: Int) -> ActivitySummary {
        guard title.utf8.count > bytes else { return self }
        var copy = self
        var cut = ""
        for ch in title {
            guard cut.utf8.count + String(ch).utf8.count <= max(0, bytes - 3) else { break }
            cut.append(ch)
        }
        copy.title = cut + "…"
        copy.titleTruncated = true
        return copy
    }

    func encode(into w: inout ByteWriter) {
        w.raw(uuidBytes(id))
        w.lengthPrefixed(Array(type.utf8))
        w.lengthPrefixed(Array(title.utf8))
        w.zigzag(updatedAt.microsecondsSinceEpoch)
        var flags: UInt8 = 0
        if expirationDate != nil { flags |= 1 }
        if supportsContinuationStreams { flags |= 2 }
        if titleTruncated { flags |= 4 }
        // Added later: a daemon that predates it ignores the bit and offers no browser fallback.
        if hasWebpage { flags |= 8 }
        w.byte(flags)
        if let expirationDate { w.zigzag(expirationDate.microsecondsSinceEpoch) }
    }

    init?(decoding r: inout ByteReader) {
        guard let idBytes = try? r.take(16), let id = try? uuid(from: idBytes),
            let type = try? r.utf8String(), (try? ActivityContent.validateType(type)) != nil,
            let title = try? r.utf8String(), title.utf8.count <= ActivityLimits.maximumTitleBytes,
            !title.unicodeScalars.contains(where: isControl),
            let updated = try? r.zigzag(), let flags = try? r.byte()
        else { return nil }
        self.id = id
        self.type = type
        self.title = title
        self.updatedAt = Timestamp(microsecondsSinceEpoch: updated)
        self.supportsContinuationStreams = flags & 2 != 0
        self.titleTruncated = flags & 4 != 0
        self.hasWebpage = flags & 8 != 0
        if flags & 1 != 0 {
            guard let expiry = try? r.zigzag() else { return nil }
            self.expirationDate = Timestamp(microsecondsSinceEpoch: expiry)
        } else {
            self.expirationDate = nil
        }
        guard updatedAt.isRepresentable, expirationDate?.isRepresentable ?? true else { return nil }
    }

    enum CodingKeys: String, CodingKey {
        case id, type, title, updatedAt, expirationDate, supportsContinuationStreams, titleTruncated, hasWebpage, targetContentIdentifier
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(UUID.self, forKey: .id)
        type = try c.decode(String.self, forKey: .type)
        title = try c.decode(String.self, forKey: .title)
        updatedAt = try c.decode(Timestamp.self, forKey: .updatedAt)
        expirationDate = try c.decodeIfPresent(Timestamp.self, forKey: .expirationDate)
        supportsContinuationStreams = try c.decodeIfPresent(Bool.self, forKey: .supportsContinuationStreams) ?? false
        titleTruncated = try c.decodeIfPresent(Bool.self, forKey: .titleTruncated) ?? false
        hasWebpage = try c.decodeIfPresent(Bool.self, forKey: .hasWebpage) ?? false
        targetContentIdentifier = try c.decodeIfPresent(String.self, forKey: .targetContentIdentifier)
        targetKnown = targetContentIdentifier != nil
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id.lowercasedString, forKey: .id)
        try c.encode(type, forKey: .type)
        try c.encode(title, forKey: .title)
        try c.encode(updatedAt, forKey: .updatedAt)
        try c.encodeIfPresent(expirationDate, forKey: .expirationDate)
        try c.encode(supportsContinuationStreams, forKey: .supportsContinuationStreams)
        if titleTruncated { try c.encode(true, forKey: .titleTruncated) }
        if hasWebpage { try c.encode(true, forKey: .hasWebpage) }
        try c.encodeIfPresent(targetContentIdentifier, forKey: .targetContentIdentifier)
    }
}
