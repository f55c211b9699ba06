#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffModel

/// One activity this device saw (docs/apps.md, "History"): its own, as it last was while current,
/// or another device's, as it came when this device fetched it.
public struct HistoryEntry: Codable, Sendable, Equatable {
    public var activity: Activity
    /// The device it was current on (nil: this device, before it had an account).
    public var device: LocalEvent.PeerRef?
    /// It was this device's own.
    public var own: Bool
    /// When it was last seen: made current or updated here, or fetched from the other device.
    public var seenAt: Timestamp

    public init(activity: Activity, device: LocalEvent.PeerRef?, own: Bool, seenAt: Timestamp) {
        self.activity = activity
        self.device = device
        self.own = own
        self.seenAt = seenAt
    }
}

/// Answer to `GET /v1/history`: newest first.
public struct HistoryResponse: Codable, Sendable, Equatable {
    public var entries: [HistoryEntry]
    /// Whether history is kept (`[history] enabled`); off, `entries` is empty.
    public var enabled: Bool

    public init(entries: [HistoryEntry], enabled: Bool) {
        self.entries = entries
        self.enabled = enabled
    }
}
