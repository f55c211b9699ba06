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
        /// (Resuming) `continue` fetched an activity and is about to hand it to an app. Exactly
        /// one `continued` or `continueFailed` with the same continuation id follows.
        case willContinue(continuationID: UUID, type: String, peer: PeerRef)
        case continued(continuationID: UUID, activity: Activity, peer: PeerRef, delivered: DeliveryOutcome)
        case continueFailed(continuationID: UUID, type: String, peer: PeerRef, code: APIErrorCode, reason: String)
        /// (Originating) another device asked for the activity, which is marked needsSave: the
        /// app that made it current should update it now.
        case willSave(activityID: UUID, peer: PeerRef)
        /// (Originating) another device handed the activity to an app.
        case wasContinued(activityID: UUID, peer: PeerRef)
        /// A continuation stream opened, or ended (completed or failed), on either side.
        case streamChanged(StreamInfo)
        /// What `GET /v1/status` says of the device changed: its account (created, joined, left),
        /// its settings (`PUT /v1/settings`), or how many devices nearby are inviting.
        case statusChanged
        /// A copy here or on another device, a copy withdrawn or run out, or the clipboard
        /// turned on or off (docs/clipboard.md).
        case clipboardChanged(ClipboardState)
        /// (This device's copy) another device pastes form `type` of copy `copyID`, for watchers:
        /// the agent holding the copy is asked on its own holder stream (`ClipboardHolderEvent`)
        /// and takes stream `streamID` with the bytes.
        case clipboardStreamRequested(streamID: UUID, copyID: UUID, type: String, peer: PeerRef)
        case unknown(name: String)

        public var name: String {
            switch self {
            case .currentActivityChanged: "currentActivityChanged"
            case .currentActivityResigned: "currentActivityResigned"
            case .peerChanged: "peerChanged"
            case .peerGone: "peerGone"
            case .willContinue: "willContinue"
            case .continued: "continued"
            case .continueFailed: "continueFailed"
            case .willSave: "willSave"
            case .wasContinued: "wasContinued"
            case .streamChanged: "streamChanged"
            case .statusChanged: "statusChanged"
            case .clipboardChanged: "clipboardChanged"
            case .clipboardStreamRequested: "clipboardStreamRequested"
            case .unknown(let name): name
            }
        }
    }

    /// Another device, as events name it.
    public struct PeerRef: Codable, Sendable, Equatable {
        public var id: DeviceID
        public var name: String

        public init(id: DeviceID, name: String) {
            self.id = id
            self.name = name
        }
    }

    public var at: Timestamp
    public var body: Body

    public init(at: Timestamp, _ body: Body) {
        self.at = at
        self.body = body
    }

    enum CodingKeys: String, CodingKey {
        case event, at, activity, activityID, reason, peer, peerID, continuationID, type, delivered, code, stream, clipboard, streamID, copyID
    }

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
        case "willContinue":
            body = .willContinue(
                continuationID: try c.decode(UUID.self, forKey: .continuationID), type: try c.decode(String.self, forKey: .type),
                peer: try c.decode(PeerRef.self, forKey: .peer)
            )
        case "continued":
            body = .continued(
                continuationID: try c.decode(UUID.self, forKey: .continuationID), activity: try c.decode(Activity.self, forKey: .activity),
                peer: try c.decode(PeerRef.self, forKey: .peer), delivered: try c.decode(DeliveryOutcome.self, forKey: .delivered)
            )
        case "continueFailed":
            body = .continueFailed(
                continuationID: try c.decode(UUID.self, forKey: .continuationID), type: try c.decode(String.self, forKey: .type),
                peer: try c.decode(PeerRef.self, forKey: .peer), code: try c.decode(APIErrorCode.self, forKey: .code),
                reason: try c.decode(String.self, forKey: .reason)
            )
        case "willSave":
            body = .willSave(activityID: try c.decode(UUID.self, forKey: .activityID), peer: try c.decode(PeerRef.self, forKey: .peer))
        case "wasContinued":
            body = .wasContinued(activityID: try c.decode(UUID.self, forKey: .activityID), peer: try c.decode(PeerRef.self, forKey: .peer))
        case "streamChanged":
            body = .streamChanged(try c.decode(StreamInfo.self, forKey: .stream))
        case "statusChanged":
            body = .statusChanged
        case "clipboardChanged":
            body = .clipboardChanged(try c.decode(ClipboardState.self, forKey: .clipboard))
        case "clipboardStreamRequested":
            body = .clipboardStreamRequested(
                streamID: try c.decode(UUID.self, forKey: .streamID), copyID: try c.decode(UUID.self, forKey: .copyID),
                type: try c.decode(String.self, forKey: .type), peer: try c.decode(PeerRef.self, forKey: .peer)
            )
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
        case .willContinue(let continuation, let type, let peer):
            try c.encode(continuation.lowercasedString, forKey: .continuationID)
            try c.encode(type, forKey: .type)
            try c.encode(peer, forKey: .peer)
        case .continued(let continuation, let activity, let peer, let delivered):
            try c.encode(continuation.lowercasedString, forKey: .continuationID)
            try c.encode(activity, forKey: .activity)
            try c.encode(peer, forKey: .peer)
            try c.encode(delivered, forKey: .delivered)
        case .continueFailed(let continuation, let type, let peer, let code, let reason):
            try c.encode(continuation.lowercasedString, forKey: .continuationID)
            try c.encode(type, forKey: .type)
            try c.encode(peer, forKey: .peer)
            try c.encode(code, forKey: .code)
            try c.encode(reason, forKey: .reason)
        case .willSave(let id, let peer), .wasContinued(let id, let peer):
            try c.encode(id.lowercasedString, forKey: .activityID)
            try c.encode(peer, forKey: .peer)
        case .streamChanged(let info):
            try c.encode(info, forKey: .stream)
        case .clipboardChanged(let state):
            try c.encode(state, forKey: .clipboard)
        case .clipboardStreamRequested(let stream, let copy, let type, let peer):
            try c.encode(stream.lowercasedString, forKey: .streamID)
            try c.encode(copy.lowercasedString, forKey: .copyID)
            try c.encode(type, forKey: .type)
            try c.encode(peer, forKey: .peer)
        case .statusChanged, .unknown:
            break
        }
    }
}
