#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffModel

/// `POST /v1/apps`: an app starts (docs/apps.md). One registration per running instance.
public struct AppRegistration: Codable, Sendable, Equatable {
    /// A reverse-DNS name, like a desktop file id: `org.example.Notes`.
    public var appID: String
    /// The activity types this app continues.
    public var continues: [String]
    /// The sites whose pages it opens (`example.com`, `*.example.org`: docs/apps.md, "Web pages
    /// into apps"): such a page continued here comes to it as `org.handoff.browsing-web`.
    public var webDomains: [String]

    public init(appID: String, continues: [String] = [], webDomains: [String] = []) {
        self.appID = appID
        self.continues = continues
        self.webDomains = webDomains
    }

    enum CodingKeys: String, CodingKey { case appID, continues, webDomains }

    /// `continues` and `webDomains` may be left out: an app that only originates.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        appID = try c.decode(String.self, forKey: .appID)
        continues = try c.decodeIfPresent([String].self, forKey: .continues) ?? []
        webDomains = try c.decodeIfPresent([String].self, forKey: .webDomains) ?? []
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(appID, forKey: .appID)
        try c.encode(continues, forKey: .continues)
        if !webDomains.isEmpty { try c.encode(webDomains, forKey: .webDomains) }
    }
}

/// A window's state-restoration activity, handed back when its app registers again.
public struct RestoredWindow: Codable, Sendable, Equatable {
    public var window: String
    public var activity: Activity

    public init(window: String, activity: Activity) {
        self.window = window
        self.activity = activity
    }
}

/// One line of `POST /v1/apps`'s NDJSON answer.
public struct AppEvent: Codable, Sendable, Equatable {
    public enum Body: Sendable, Equatable {
        /// The first line: the registration the app's window requests name, its windows'
        /// state-restoration activities, and how long it has to answer a `continue` (nil from a
        /// handoffd that does not say: 5 s).
        case registered(registration: UUID, restored: [RestoredWindow], answerWithin: Duration?)
        /// Another device's activity is being handed to this app: `continue` follows. `window`:
        /// the window that will take it, when it is known already (the activity is: a link
        /// reopened, or no advert told its type first).
        case willContinue(continuationID: UUID, type: String, peer: LocalEvent.PeerRef, window: String?)
        /// The activity: take it (answer `POST /v1/apps/REG/continuations/ID`) within the
        /// deadline, in `window` (the window showing its target) or one the app picks or opens.
        case `continue`(continuationID: UUID, activity: Activity, peer: LocalEvent.PeerRef, window: String?)
        /// A continuation this app heard `willContinue` for will not come to it: it failed
        /// (`code`, `reason` as `continueFailed` has them), or it went to another app.
        case continueFailed(continuationID: UUID, type: String, code: APIErrorCode, reason: String)
        /// (Originating) Another device is about to receive `window`'s activity, which is
        /// current and marked needsSave: update it within a second (`PUT …/windows/WIN/activity`).
        case willSave(window: String, activityID: UUID, peer: LocalEvent.PeerRef)
        /// (Originating) Another device handed `window`'s activity to an app.
        case wasContinued(window: String, activityID: UUID, peer: LocalEvent.PeerRef)
        /// (Originating) Another device asks `window`'s activity for a continuation stream: take
        /// it with `POST /v1/streams/ID` (an HTTP Upgrade, or the file socket) within 10 seconds.
        case streamRequested(window: String, activityID: UUID, streamID: UUID, peer: LocalEvent.PeerRef)
        case unknown(name: String)

        public var name: String {
            switch self {
            case .registered: "registered"
            case .willContinue: "willContinue"
            case .continue: "continue"
            case .continueFailed: "continueFailed"
            case .willSave: "willSave"
            case .wasContinued: "wasContinued"
            case .streamRequested: "streamRequested"
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

    enum CodingKeys: String, CodingKey {
        case event, at, registration, restored, answerWithinSeconds, continuationID, type, peer, activity, window, activityID, streamID, code, reason
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        at = try c.decode(Timestamp.self, forKey: .at)
        let name = try c.decode(String.self, forKey: .event)
        switch name {
        case "registered":
            body = .registered(
                registration: try c.decode(UUID.self, forKey: .registration), restored: try c.decode([RestoredWindow].self, forKey: .restored),
                answerWithin: try c.decodeIfPresent(Double.self, forKey: .answerWithinSeconds).flatMap { $0.isFinite && $0 > 0 ? .milliseconds(Int64(min($0, 86_400) * 1000)) : nil }
            )
        case "willContinue":
            body = .willContinue(
                continuationID: try c.decode(UUID.self, forKey: .continuationID), type: try c.decode(String.self, forKey: .type),
                peer: try c.decode(LocalEvent.PeerRef.self, forKey: .peer), window: try c.decodeIfPresent(String.self, forKey: .window)
            )
        case "continue":
            body = .continue(
                continuationID: try c.decode(UUID.self, forKey: .continuationID), activity: try c.decode(Activity.self, forKey: .activity),
                peer: try c.decode(LocalEvent.PeerRef.self, forKey: .peer), window: try c.decodeIfPresent(String.self, forKey: .window)
            )
        case "continueFailed":
            body = .continueFailed(
                continuationID: try c.decode(UUID.self, forKey: .continuationID), type: try c.decode(String.self, forKey: .type),
                code: try c.decode(APIErrorCode.self, forKey: .code), reason: try c.decode(String.self, forKey: .reason)
            )
        case "willSave":
            body = .willSave(
                window: try c.decode(String.self, forKey: .window), activityID: try c.decode(UUID.self, forKey: .activityID),
                peer: try c.decode(LocalEvent.PeerRef.self, forKey: .peer)
            )
        case "wasContinued":
            body = .wasContinued(
                window: try c.decode(String.self, forKey: .window), activityID: try c.decode(UUID.self, forKey: .activityID),
                peer: try c.decode(LocalEvent.PeerRef.self, forKey: .peer)
            )
        case "streamRequested":
            body = .streamRequested(
                window: try c.decode(String.self, forKey: .window), activityID: try c.decode(UUID.self, forKey: .activityID),
                streamID: try c.decode(UUID.self, forKey: .streamID), peer: try c.decode(LocalEvent.PeerRef.self, forKey: .peer)
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
        case .registered(let registration, let restored, let answerWithin):
            try c.encode(registration.lowercasedString, forKey: .registration)
            try c.encode(restored, forKey: .restored)
            try c.encodeIfPresent(answerWithin.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }, forKey: .answerWithinSeconds)
        case .willContinue(let id, let type, let peer, let window):
            try c.encode(id.lowercasedString, forKey: .continuationID)
            try c.encode(type, forKey: .type)
            try c.encode(peer, forKey: .peer)
            try c.encodeIfPresent(window, forKey: .window)
        case .continue(let id, let activity, let peer, let window):
            try c.encode(id.lowercasedString, forKey: .continuationID)
            try c.encode(activity, forKey: .activity)
            try c.encode(peer, forKey: .peer)
            try c.encodeIfPresent(window, forKey: .window)
        case .continueFailed(let id, let type, let code, let reason):
            try c.encode(id.lowercasedString, forKey: .continuationID)
            try c.encode(type, forKey: .type)
            try c.encode(code, forKey: .code)
            try c.encode(reason, forKey: .reason)
        case .willSave(let window, let activityID, let peer), .wasContinued(let window, let activityID, let peer):
            try c.encode(window, forKey: .window)
            try c.encode(activityID.lowercasedString, forKey: .activityID)
            try c.encode(peer, forKey: .peer)
        case .streamRequested(let window, let activityID, let streamID, let peer):
            try c.encode(window, forKey: .window)
            try c.encode(activityID.lowercasedString, forKey: .activityID)
            try c.encode(streamID.lowercasedString, forKey: .streamID)
            try c.encode(peer, forKey: .peer)
        case .unknown:
            break
        }
    }
}

extension AppEvent {
    /// How long a library that answers for an app (HandoffKit, handoff-desktop) lets the app's
    /// receiver take: less than handoffd gives the app (`registered`'s `answerWithin`; 5 s from a
    /// handoffd that does not say) — a second less, or a fifth when that is more (4 s of 5, 48 of
    /// 60) — so that it answers for an app that hangs before handoffd gives up on the app.
    public static func receiverDeadline(answerWithin: Duration?) -> Duration {
        let given = answerWithin ?? .seconds(5)
        return max(min(given - .seconds(1), given * 4 / 5), given / 2)
    }
}

/// The answer to a window request: the window, and its activity's id when it has one.
public struct WindowResponse: Codable, Sendable, Equatable {
    public var window: String
    public var activityID: UUID?
    /// (Setting an activity) Advice, as `CurrentActivityResponse.warnings`: a large activity.
    public var warnings: [String]

    public init(window: String, activityID: UUID? = nil, warnings: [String] = []) {
        self.window = window
        self.activityID = activityID
        self.warnings = warnings
    }

    enum CodingKeys: String, CodingKey { case window, activityID, warnings }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        window = try c.decode(String.self, forKey: .window)
        activityID = try c.decodeIfPresent(UUID.self, forKey: .activityID)
        warnings = try c.decodeIfPresent([String].self, forKey: .warnings) ?? []
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(window, forKey: .window)
        try c.encodeIfPresent(activityID?.lowercasedString, forKey: .activityID)
        if !warnings.isEmpty { try c.encode(warnings, forKey: .warnings) }
    }
}

/// `POST /v1/apps/REG/continuations/ID`: the app took the continuation (in `window`), or not
/// (`reason`: why, for the user).
public struct ContinuationAnswer: Codable, Sendable, Equatable {
    public var taken: Bool
    public var window: String?
    public var reason: String?

    public init(taken: Bool, window: String? = nil, reason: String? = nil) {
        self.taken = taken
        self.window = window
        self.reason = reason
    }
}
