#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffModel

/// One of the account's other devices, as this daemon sees it now.
public struct PeerInfo: Codable, Sendable, Equatable {
    public var id: DeviceID
    public var name: String
    /// A session with it is open (its activity changes reach us in milliseconds).
    public var reachable: Bool
    /// How it was found: "mdns", "static", "wide-area".
    public var foundVia: [String]
    /// Where it can be reached, as `host:port`.
    public var addresses: [String]
    /// Its current activity, as it last told us (nil: none).
    public var activity: ActivitySummary?
    /// When we last heard from it (advert or session).
    public var lastSeen: Timestamp?
    /// When its latest advert arrived over DNS-SD.
    public var lastAdvert: Timestamp?
    public var unreachableSince: Timestamp?
    /// How far its clock was ahead of ours (negative: behind) when the session began, in seconds.
    public var clockOffsetSeconds: Double?

    public init(
        id: DeviceID, name: String, reachable: Bool, foundVia: [String], addresses: [String], activity: ActivitySummary?,
        lastSeen: Timestamp?, lastAdvert: Timestamp?, unreachableSince: Timestamp?, clockOffsetSeconds: Double? = nil
    ) {
        self.clockOffsetSeconds = clockOffsetSeconds
        self.id = id
        self.name = name
        self.reachable = reachable
        self.foundVia = foundVia
        self.addresses = addresses
        self.activity = activity
        self.lastSeen = lastSeen
        self.lastAdvert = lastAdvert
        self.unreachableSince = unreachableSince
    }
}

/// Advertising and browsing, for `status` and `peers`.
public struct DiscoveryStatus: Codable, Sendable, Equatable {
    public enum State: String, Codable, Sendable {
        /// No account yet: nothing to advertise.
        case off
        case starting
        case running
        /// The mDNS daemon (Avahi) is not reachable; `retryAt` says when we try again.
        case unavailable
    }

    public var state: State
    public var detail: String?
    public var retryAt: Timestamp?
    /// Our current (random, rotating) service instance name.
    public var instanceName: String?
    /// Static peers from the configuration.
    public var staticPeers: [String]
    /// DNS-SD in a unicast zone (`[wide_area]`), when configured.
    public var wideArea: WideAreaStatus?

    public init(
        state: State, detail: String? = nil, retryAt: Timestamp? = nil, instanceName: String? = nil, staticPeers: [String] = [], wideArea: WideAreaStatus? = nil
    ) {
        self.state = state
        self.detail = detail
        self.retryAt = retryAt
        self.instanceName = instanceName
        self.staticPeers = staticPeers
        self.wideArea = wideArea
    }
}

/// How registering in a unicast zone and browsing it goes (docs/discovery.md, "Beyond one link").
public struct WideAreaStatus: Codable, Sendable, Equatable {
    /// The zone (`handoff.example.net.`).
    public var domain: String
    /// Whether this device registers there (a key is configured), and whether its records are
    /// there now (the last write succeeded).
    public var registering: Bool
    public var registered: Bool
    /// What failed last, as a user should read it ("registering in … failed: the server refused
    /// the key …"); absent when all is well.
    public var problem: String?

    public init(domain: String, registering: Bool, registered: Bool, problem: String? = nil) {
        self.domain = domain
        self.registering = registering
        self.registered = registered
        self.problem = problem
    }
}

/// `GET /v1/peers`.
public struct PeersResponse: Codable, Sendable, Equatable {
    /// Every device of the account we have seen, reachable or not.
    public var peers: [PeerInfo]
    /// handoff devices on the network that are not ours (only counted).
    public var strangers: Int
    public var discovery: DiscoveryStatus

    public init(peers: [PeerInfo], strangers: Int, discovery: DiscoveryStatus) {
        self.peers = peers
        self.strangers = strangers
        self.discovery = discovery
    }
}
