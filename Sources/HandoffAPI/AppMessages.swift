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

    public init(appID: String, continues: [String] = []) {
        self.appID = appID
        self.continues = continues
    }

    enum CodingKeys: String, CodingKey { case appID, continues }

    /// `continues` may be left out: an app that only originates.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        appID = try c.decode(String.self, forKey: .appID)
        continues = try c.decodeIfPresent([String].self, forKey: .continues) ?? []
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
        /// The first line: the registration the app's window requests name, and its windows'
        /// state-restoration activities.
        case registered(registration: UUID, restored: [RestoredWindow])
        case unknown(name: String)

        public var name: String {
            switch self {
            case .registered: "registered"
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

    enum CodingKeys: String, CodingKey { case event, at, registration, restored }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        at = try c.decode(Timestamp.self, forKey: .at)
        let name = try c.decode(String.self, forKey: .event)
        switch name {
        case "registered":
            body = .registered(registration: try c.decode(UUID.self, forKey: .registration), restored: try c.decode([RestoredWindow].self, forKey: .restored))
        default:
            body = .unknown(name: name)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(body.name, forKey: .event)
        try c.encode(at, forKey: .at)
        switch body {
        case .registered(let registration, let restored):
            try c.encode(registration.lowercasedString, forKey: .registration)
            try c.encode(restored, forKey: .restored)
        case .unknown:
            break
        }
    }
}

/// The answer to a window request: the window, and its activity's id when it has one.
public struct WindowResponse: Codable, Sendable, Equatable {
    public var window: String
    public var activityID: UUID?

    public init(window: String, activityID: UUID? = nil) {
        self.window = window
        self.activityID = activityID
    }

    enum CodingKeys: String, CodingKey { case window, activityID }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(window, forKey: .window)
        try c.encodeIfPresent(activityID?.lowercasedString, forKey: .activityID)
    }
}
