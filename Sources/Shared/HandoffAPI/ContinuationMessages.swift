#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffModel

/// `POST /v1/continue`.
public struct ContinueRequest: Codable, Sendable, Equatable {
    public enum Delivery: String, Codable, Sendable {
        /// Only return the activity: the caller takes it from here (`handoffctl continue --json`,
        /// `--stream-to`, an app continuing for itself).
        case returnToCaller
        /// Hand it to the app registered for its type, else its web page to the browser
        /// (`handoffctl continue`).
        case dispatch
    }

    /// A device name, a unique start of its id, or `host:port`.
    public var peer: String
    public var delivery: Delivery
    /// The caller's graphical session for the app that is started (`DISPLAY`, `WAYLAND_DISPLAY`,
    /// `DBUS_SESSION_BUS_ADDRESS`…): a daemon started before the session does not know it. Only
    /// the names in `SessionEnvironment.names` are used.
    public var environment: [String: String]
    /// Only this activity (the one a notification offered): if the device has moved on to
    /// another, the continuation fails with `activity_changed` instead of taking that one.
    public var activityID: UUID?

    public init(peer: String, delivery: Delivery = .returnToCaller, environment: [String: String] = [:], activityID: UUID? = nil) {
        self.peer = peer
        self.delivery = delivery
        self.environment = environment
        self.activityID = activityID
    }

    enum CodingKeys: String, CodingKey { case peer, delivery, environment, activityID }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        peer = try c.decode(String.self, forKey: .peer)
        delivery = try c.decodeIfPresent(Delivery.self, forKey: .delivery) ?? .returnToCaller
        environment = try c.decodeIfPresent([String: String].self, forKey: .environment) ?? [:]
        activityID = try c.decodeIfPresent(UUID.self, forKey: .activityID)
    }
}

/// The variables of a desktop session that a started app needs, and nothing else: a request
/// cannot set PATH, LD_PRELOAD or the like for the programs the daemon starts.
public enum SessionEnvironment {
    public static let names: Set<String> = [
        "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS", "XDG_CURRENT_DESKTOP", "XDG_SESSION_TYPE",
        "XDG_SESSION_DESKTOP", "DESKTOP_SESSION", "XDG_ACTIVATION_TOKEN", "DESKTOP_STARTUP_ID", "LANG", "LANGUAGE", "LC_ALL",
    ]

    /// The session variables of `environment`.
    public static func pick(_ environment: [String: String]) -> [String: String] {
        environment.filter { names.contains($0.key) }
    }
}

public struct ContinueResponse: Codable, Sendable, Equatable {
    public var peerID: DeviceID
    public var peerName: String
    public var activity: Activity
    /// Names this continuation on this device: its handler gets it as `HANDOFF_CONTINUATION_ID`,
    /// and continuation streams are opened with it.
    public var continuationID: UUID
    /// Where the activity went (with `delivery: dispatch`).
    public var delivered: DeliveryOutcome?

    public init(peerID: DeviceID, peerName: String, activity: Activity, continuationID: UUID, delivered: DeliveryOutcome? = nil) {
        self.peerID = peerID
        self.peerName = peerName
        self.activity = activity
        self.continuationID = continuationID
        self.delivered = delivered
    }
}

/// The app (or browser) a continuation was handed to.
public struct DeliveryOutcome: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable {
        /// An app registered for the activity's type.
        case handler
        /// The browser, with the activity's web page.
        case browser
        /// The caller took the activity itself.
        case caller
        /// A running app registered for its type took it (docs/apps.md): `handler` is its app
        /// id, `window` the window that took it.
        case app
    }

    public var kind: Kind
    /// The `.desktop` file id (`org.example.Editor.desktop`), or `config` for a handler set in
    /// handoffd.toml, or the browser command.
    public var handler: String
    /// The program started and its arguments.
    public var command: [String]
    /// The activity as JSON, for the handler (`HANDOFF_ACTIVITY_FILE`).
    public var activityFile: String?
    /// The web page given to the browser.
    public var url: String?
    public var pid: Int32?
    /// (`app`) The window that took it, if the app said.
    public var window: String?
    /// (A document) The file opened: the same document here, or the copy that came.
    public var document: String?

    public init(
        kind: Kind, handler: String, command: [String], activityFile: String? = nil, url: String? = nil, pid: Int32? = nil, window: String? = nil,
        document: String? = nil
    ) {
        self.kind = kind
        self.handler = handler
        self.command = command
        self.activityFile = activityFile
        self.url = url
        self.pid = pid
        self.window = window
        self.document = document
    }
}

/// What a started handler finds in its environment (docs/local-api.md, "Continuations").
public enum HandlerEnvironment {
    /// Path of the activity as JSON (the local API's format), readable only by the user.
    public static let activityFile = "HANDOFF_ACTIVITY_FILE"
    /// Open continuation streams with it: `POST /v1/continuations/ID/streams`.
    public static let continuationID = "HANDOFF_CONTINUATION_ID"
    public static let activityType = "HANDOFF_ACTIVITY_TYPE"
    /// The device the activity came from.
    public static let peerID = "HANDOFF_PEER_ID"
    public static let peerName = "HANDOFF_PEER_NAME"
    /// The local API's socket.
    public static let socket = "HANDOFF_SOCKET"
    /// The browser command the user gave handoffd (handoffd.toml's `browser`, default
    /// `xdg-open`), as written there: for handlers that open web pages themselves.
    public static let browser = "HANDOFF_BROWSER"
}
