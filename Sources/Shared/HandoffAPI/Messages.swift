#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffModel

/// `PUT /v1/activity/current`: the activity content, flat, as an app would describe it.
/// Without `id` it starts a new activity; with the id of the current one it updates it in place
/// (same id and type, new `updatedAt`), which is how an app keeps its NSUserActivity fresh.
public struct PutCurrentActivityRequest: Codable, Sendable, Equatable {
    public var id: UUID?
    public var content: ActivityContent

    public init(id: UUID? = nil, content: ActivityContent) {
        self.id = id
        self.content = content
    }

    enum CodingKeys: String, CodingKey { case id }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decodeIfPresent(UUID.self, forKey: .id)
        content = try ActivityContent(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        try content.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(id?.lowercasedString, forKey: .id)
    }
}

/// The body of `PUT /v1/activity/current/document`: a file becomes the current activity, as a
/// document (docs/apps.md, "Documents from any app"). handoffd reads the rest from the file.
public struct DocumentRequest: Codable, Sendable, Equatable {
    /// An absolute path.
    public var path: String
    /// The desktop file id of the app that opened it, if known (`org.gnome.TextEditor.desktop`).
    public var app: String?
    /// Its MIME type, if the caller knows it (the recently-used list records it); else handoffd
    /// guesses from the name (shared-mime-info).
    public var mimeType: String?
    /// Taken from the desktop's recently-used list (`handoff-desktop`): only offered when the
    /// user turned that on (`[documents] follow`).
    public var recentlyUsed: Bool?

    public init(path: String, app: String? = nil, mimeType: String? = nil, recentlyUsed: Bool? = nil) {
        self.path = path
        self.app = app
        self.mimeType = mimeType
        self.recentlyUsed = recentlyUsed
    }
}

/// Answer to `PUT` and `GET /v1/activity/current`.
public struct CurrentActivityResponse: Codable, Sendable, Equatable {
    public var activity: Activity
    /// The encoded size, so a client can see how close it is to the cap.
    public var encodedSize: Int
    /// Advice that did not stop the request, e.g. "larger than 3 KiB".
    public var warnings: [String]

    public init(activity: Activity, encodedSize: Int, warnings: [String] = []) {
        self.activity = activity
        self.encodedSize = encodedSize
        self.warnings = warnings
    }
}

/// Answer to `DELETE /v1/activity/current`.
public struct ResignResponse: Codable, Sendable, Equatable {
    /// The activity that was withdrawn; absent when there was none (resigning is idempotent).
    public var resigned: Activity?

    public init(resigned: Activity?) {
        self.resigned = resigned
    }
}

/// `GET /v1/status`.
public struct DaemonStatus: Codable, Sendable, Equatable {
    public var version: String
    public var pid: Int32
    public var uid: UInt32
    public var startedAt: Timestamp
    public var socketPath: String
    public var stateDirectory: String
    public var maximumActivityBytes: Int
    public var currentActivity: ActivitySummary?
    /// This device's account, when it has one.
    public var account: AccountInfo?
    /// The TCP port other devices connect to.
    public var peerPort: Int
    public var discovery: DiscoveryStatus
    /// Devices of the account with an open session.
    public var reachablePeers: Int
    /// handoff devices on the network that are not ours.
    public var strangers: Int
    /// Devices with a session that they dialled: proof that this device's port lets them in.
    public var inboundPeers: Int?
    /// What opens continued web pages here, and whether it is installed (`doctor`).
    public var browser: BrowserStatus?
    /// The configuration file handoffd read (nil: none, defaults only), for messages that say
    /// where to change a setting.
    public var configFile: String?
    /// The device-wide switch and what else `PUT /v1/settings` changes.
    public var settings: DeviceSettings?
    /// Devices on the network that are inviting a device to their account now — counted only
    /// while this device has no account (it could join one of them: `account join CODE`).
    public var invitingNearby: Int?
    /// The sites apps here claim (docs/apps.md, "Web pages into apps"), for `doctor`.
    public var webDomains: [WebDomainClaimStatus]?
    /// `[documents] follow`: the desktop agent makes documents from the recently-used list
    /// current (docs/apps.md, "Documents from any app"). Absent from a daemon that predates it.
    public var followsDocuments: Bool?

    public init(
        version: String,
        pid: Int32,
        uid: UInt32,
        startedAt: Timestamp,
        socketPath: String,
        stateDirectory: String,
        maximumActivityBytes: Int,
        currentActivity: ActivitySummary?,
        account: AccountInfo?,
        peerPort: Int,
        discovery: DiscoveryStatus,
        reachablePeers: Int,
        strangers: Int,
        inboundPeers: Int? = nil,
        browser: BrowserStatus? = nil,
        configFile: String? = nil,
        settings: DeviceSettings? = nil,
        invitingNearby: Int? = nil,
        webDomains: [WebDomainClaimStatus]? = nil,
        followsDocuments: Bool? = nil
    ) {
        self.webDomains = webDomains
        self.followsDocuments = followsDocuments
        self.settings = settings
        self.invitingNearby = invitingNearby
        self.inboundPeers = inboundPeers
        self.browser = browser
        self.configFile = configFile
        self.account = account
        self.peerPort = peerPort
        self.discovery = discovery
        self.reachablePeers = reachablePeers
        self.strangers = strangers
        self.version = version
        self.pid = pid
        self.uid = uid
        self.startedAt = startedAt
        self.socketPath = socketPath
        self.stateDirectory = stateDirectory
        self.maximumActivityBytes = maximumActivityBytes
        self.currentActivity = currentActivity
    }
}

/// A site an app here claims: its pages continued here open in that app.
public struct WebDomainClaimStatus: Codable, Sendable, Equatable {
    /// As the app claims it: `example.com`, `*.example.org`.
    public var domain: String
    /// The `.desktop` file id of an installed app, or the id a running app registered with.
    public var app: String
    public var running: Bool
    /// False when the user turned it off (handoffd.toml `[web_domains] off`) or it claims
    /// nothing (`*.com`, not a host name).
    public var on: Bool
    /// Why it is off.
    public var reason: String?

    /// `claim` of `app`, on unless the user turned it off (`off`, handoffd.toml `[web_domains]`).
    public init(_ claim: WebDomainClaim, app: String, running: Bool, off: Set<WebDomainClaim>) {
        let isOff = claim.isTurnedOff(by: off)
        self.init(domain: claim.description, app: app, running: running, on: !isOff, reason: isOff ? "turned off in handoffd.toml" : nil)
    }

    public init(domain: String, app: String, running: Bool, on: Bool, reason: String? = nil) {
        self.domain = domain
        self.app = app
        self.running = running
        self.on = on
        self.reason = reason
    }
}

/// The browser command of handoffd's configuration (`browser =`, default `xdg-open`).
public struct BrowserStatus: Codable, Sendable, Equatable {
    /// The program the command starts.
    public var program: String
    /// Whether it is found, as handoffd starts it (in its PATH, or at its path).
    public var found: Bool

    public init(program: String, found: Bool) {
        self.program = program
        self.found = found
    }
}
