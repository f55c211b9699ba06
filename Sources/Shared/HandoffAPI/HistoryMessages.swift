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

/// `POST /v1/history/delete`: deletes saved activities on every device of the account
/// (docs/apps.md, "Deleting saved activities") — those of these contents, of these types, or
/// all of them: their history entries, windows' restoration activities, and the current
/// activity if it is one.
public struct DeleteSavedRequest: Codable, Sendable, Equatable {
    public var persistentIdentifiers: [String]
    public var types: [String]
    public var all: Bool

    public init(persistentIdentifiers: [String] = [], types: [String] = [], all: Bool = false) {
        self.persistentIdentifiers = persistentIdentifiers
        self.types = types
        self.all = all
    }

    enum CodingKeys: String, CodingKey { case persistentIdentifiers, types, all }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        persistentIdentifiers = try c.decodeIfPresent([String].self, forKey: .persistentIdentifiers) ?? []
        types = try c.decodeIfPresent([String].self, forKey: .types) ?? []
        all = try c.decodeIfPresent(Bool.self, forKey: .all) ?? false
    }
}

public struct DeleteSavedResponse: Codable, Sendable, Equatable {
    /// Names the deletion on every device.
    public var deletion: UUID
    /// What went here: history entries, restoration activities, the current activity.
    public var historyEntries: Int
    public var restorations: Int
    public var current: Bool
    /// The devices told now; the others hear it when they next talk to one that knows it.
    public var devicesTold: Int

    public init(deletion: UUID, historyEntries: Int, restorations: Int, current: Bool, devicesTold: Int) {
        self.deletion = deletion
        self.historyEntries = historyEntries
        self.restorations = restorations
        self.current = current
        self.devicesTold = devicesTold
    }
}
