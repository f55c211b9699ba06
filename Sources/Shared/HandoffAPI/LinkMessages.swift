#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffModel

/// What a `handoff:` link names (docs/apps.md, "Links"): the account, the device the activity was
/// current on, and the activity's ids. The link carries it sealed with a key of the account's
/// devices; nobody else reads it.
public struct LinkTarget: Codable, Sendable, Equatable {
    /// The account (its root key's id).
    public var account: DeviceID
    /// The device the activity was current on.
    public var device: DeviceID
    public var activityID: UUID
    public var type: String
    public var persistentIdentifier: String?
    public var targetContentIdentifier: String?
    /// Its web page: where the link still leads when the activity is kept nowhere.
    public var webpageURL: String?

    /// The most of an id or page a link carries: a longer one is left out (the activity's id and
    /// the rest still name it), so that links stay short enough to paste anywhere.
    public static let maximumIdentifierBytes = 512
    public static let maximumPageBytes = 2048

    public init(account: DeviceID, device: DeviceID, activity: Activity) {
        self.account = account
        self.device = device
        activityID = activity.id
        type = activity.type
        func short(_ text: String?, _ limit: Int) -> String? { text.flatMap { $0.utf8.count <= limit ? $0 : nil } }
        persistentIdentifier = short(activity.content.persistentIdentifier, Self.maximumIdentifierBytes)
        targetContentIdentifier = short(activity.content.targetContentIdentifier, Self.maximumIdentifierBytes)
        webpageURL = short(activity.content.webpageURL, Self.maximumPageBytes)
    }

    /// Whether `activity` is the linked one: the same activity, or — by its
    /// `persistentIdentifier` — the same content in a later activity of the same type.
    public func names(_ activity: Activity) -> Bool {
        if activity.id == activityID { return true }
        guard let persistentIdentifier, activity.type == type else { return false }
        return activity.content.persistentIdentifier == persistentIdentifier
    }

    enum CodingKeys: String, CodingKey {
        case account = "a", device = "d", activityID = "i", type = "t", persistentIdentifier = "p", targetContentIdentifier = "c"
        case webpageURL = "w"
    }
}

/// `POST /v1/links`: a link to an activity. At most one of the fields; none: this device's
/// current activity.
public struct LinkRequest: Codable, Sendable, Equatable {
    /// That device's current activity (a name, a unique start of its id): fetched, and kept in
    /// the history so the link opens here while the device is away.
    public var peer: String?
    /// The history's entry at this position (1 = the newest, as `handoffctl history` numbers them).
    public var historyEntry: Int?
    /// The newest history entry with this `persistentIdentifier`.
    public var persistentIdentifier: String?

    public init(peer: String? = nil, historyEntry: Int? = nil, persistentIdentifier: String? = nil) {
        self.peer = peer
        self.historyEntry = historyEntry
        self.persistentIdentifier = persistentIdentifier
    }
}

public struct LinkResponse: Codable, Sendable, Equatable {
    /// `handoff:v1.…`
    public var link: String
    public var target: LinkTarget
    /// The activity linked, as it was when the link was made.
    public var activity: Activity
    /// The device it is current on (nil: this one).
    public var device: LocalEvent.PeerRef?

    public init(link: String, target: LinkTarget, activity: Activity, device: LocalEvent.PeerRef?) {
        self.link = link
        self.target = target
        self.activity = activity
        self.device = device
    }
}

/// `POST /v1/links/open`: reopens a linked activity here.
public struct OpenLinkRequest: Codable, Sendable, Equatable {
    public var link: String
    public var delivery: ContinueRequest.Delivery
    /// As `ContinueRequest.environment`.
    public var environment: [String: String]

    /// The longest link read: a sealed target with its largest ids and page fits well within.
    public static let maximumLinkBytes = 8192

    public init(link: String, delivery: ContinueRequest.Delivery = .dispatch, environment: [String: String] = [:]) {
        self.link = link
        self.delivery = delivery
        self.environment = environment
    }

    enum CodingKeys: String, CodingKey { case link, delivery, environment }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        link = try c.decode(String.self, forKey: .link)
        delivery = try c.decodeIfPresent(ContinueRequest.Delivery.self, forKey: .delivery) ?? .dispatch
        environment = try c.decodeIfPresent([String: String].self, forKey: .environment) ?? [:]
    }
}

public struct OpenLinkResponse: Codable, Sendable, Equatable {
    /// Where the activity came from.
    public enum Source: String, Codable, Sendable {
        /// The device it was current on, where it still is: its latest state (the app there
        /// heard `willSave`), with its continuation streams.
        case device
        /// This device's history: as it was last seen, without streams.
        case history
        /// Kept nowhere: only its web page, to the app that claims the site or the browser.
        case webpage
    }

    public var source: Source
    /// Why not from the device, when it is not (`alpha is not reachable`, `alpha moved on`).
    public var reason: String?
    public var target: LinkTarget
    public var continued: ContinueResponse

    public init(source: Source, reason: String?, target: LinkTarget, continued: ContinueResponse) {
        self.source = source
        self.reason = reason
        self.target = target
        self.continued = continued
    }
}
