#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffModel

/// One line of the `GET /v1/events` NDJSON stream: `{"event":"…","at":"…", …}`.
///
/// Clients must ignore events they do not know: a newer daemon may send more kinds, and an older
/// client decodes those as `.unknown` instead of failing.
public struct LocalEvent: Codable, Sendable, Equatable {
    public enum ResignReason: String, Codable, Sendable {
        /// An app or `handoffctl resign-current` withdrew it.
        case resigned
        /// Its expiration date passed.
        case expired
    }

    public enum Body: Sendable, Equatable {
        /// A new current activity, or the current one updated.
        case currentActivityChanged(Activity)
        case currentActivityResigned(activityID: UUID, reason: ResignReason)
        /// A device of the account appeared, changed (activity, reachability) or was found anew.
        case peerChanged(PeerInfo)
        /// A device is no longer seen at all (it withdrew its advert and its session ended).
        case peerGone(DeviceID)
        case unknown(name: String)

        public var name: String {
            switch self {
            case .currentActivityChanged: "currentActivityChanged"
            case .currentActivityResigned: "currentActivityResigned"
            case .peerChanged: "peerChanged"
            case .peerGone: "peerGone"
            case .unknown(let name): name
            }
        }
    }

    public var at: Timestamp
    public var body: Body

    public init(at: Timestamp, _ body: Body) {
        self.at = at
        self.body = body
    }

    enum CodingKeys: String, CodingKey { case event, at, activity, activityID, reason, peer, peerID }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        at = try c.decode(Timestamp.self, forKey: .at)
        let name = try c.decode(String.self, forKey: .event)
        switch name {
        case "currentActivityChanged":
            body = .currentActivityChanged(try c.decode(Activity.self, forKey: .activity))
        case "currentActivityResigned":
            body = .currentActivityResigned(
                activityID: try c.decode(UUID.self, forKey: .activityID),
                reason: try c.decode(ResignReason.self, forKey: .reason)
            )
        case "peerChanged":
            body = .peerChanged(try c.decode(PeerInfo.self, forKey: .peer))
        case "peerGone":
            body = .peerGone(try c.decode(DeviceID.self, forKey: .peerID))
        default:
            body = .unknown(name: name)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(body.name, forKey: .event)
        try c.encode(at, forKey: .at)
        switch body {
        case .currentActivityChanged(let activity):
            try c.encode(activity, forKey: .activity)
        case .currentActivityResigned(let id, let reason):
            try c.encode(id.lowercasedString, forKey: .activityID)
            try c.encode(reason, forKey: .reason)
        case .peerChanged(let peer):
            try c.encode(peer, forKey: .peer)
        case .peerGone(let id):
            try c.encode(id, forKey: .peerID)
        case .unknown:
            break
        }
    }
}
