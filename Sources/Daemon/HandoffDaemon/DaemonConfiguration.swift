#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonAccounts
import DaemonApps
import DaemonClipboard
import DaemonContinue
import DaemonCore
import DaemonDiscovery
import DaemonDocuments
import DaemonHistory
import DaemonSessions
import DaemonLocalAPI
import DaemonStreams
import HandoffAPI
import HandoffDiscovery
import HandoffModel
import HandoffSystem
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Everything the daemon needs to know to start. `handoffd` fills it from flags, the configuration
/// files and the environment; tests fill it with temp paths.
public struct DaemonConfiguration: Sendable {
    public static let defaultPeerPort = PeerAddress.defaultPeerPort

    public var socketPath: String
    public var stateDirectory: String
    /// What handoffd.toml and the flags say (`DaemonSettings`): kept as they are, and read below
    /// under the names the services use, so that no setting is copied by hand.
    public var settings = DaemonSettings()
    public var limits: ActivityLimits {
        get { ActivityLimits(maximumEncodedSize: settings.maxActivityBytes) }
        set { settings.maxActivityBytes = newValue.maximumEncodedSize }
    }
    /// The TCP port other devices connect to; 0 picks a free one (tests).
    public var peerPort: Int {
        get { settings.port }
        set { settings.port = newValue }
    }
    /// Where to listen for devices: every IPv4 and IPv6 address by default.
    public var peerBindAddresses: [String] {
        get { settings.listen }
        set { settings.listen = newValue }
    }
    /// How long an invite code is valid (docs/security.md: 10 minutes).
    public var inviteLifetimeSeconds: Int64 = 600
    /// The time of day invites run out by (tests move a manual one).
    package var clock: any DaemonClock = SystemDaemonClock()
    /// Handshake budget per address, cap on unauthenticated connections, wrong-code penalty.
    public var admissionLimits = AdmissionLimits()
    /// A peer that has not completed its TLS handshake by then is disconnected.
    public var handshakeTimeoutSeconds: Double = 10
    /// DNS-SD: Avahi normally; tests connect in-process daemons through an in-memory network.
    public var discovery: any DiscoveryBackend = DNSSDDiscovery()
    /// The addresses registered in `[wide_area]`'s zone; nil: this host's routable ones (tests on
    /// loopback give 127.0.0.1).
    public var wideAreaAddresses: (@Sendable () -> [String])?
    /// Wide-area DNS-SD domains browsed besides `local.`.
    public var browseDomains: [String] {
        get { settings.browseDomains }
        set { settings.browseDomains = newValue }
    }
    /// `host:port` of devices to keep a session with when multicast does not reach them.
    public var staticPeers: [String] {
        get { settings.peers }
        set { settings.peers = newValue }
    }
    /// On start, when this device has no account yet: create one, or join with a code.
    public var firstUse: FirstUse = .nothing
    /// Activity type → command line (`.desktop` Exec syntax), ahead of installed `.desktop` files.
    public var handlers: [String: String] {
        get { settings.handlers }
        set { settings.handlers = newValue }
    }
    /// What opens a continued activity's web page when no app handles its type.
    public var browser: String {
        get { settings.browser }
        set { settings.browser = newValue }
    }
    /// Whether the desktop shows the other devices' activities as notifications, and the types
    /// it never shows (handoffd.toml `[notifications]`; `GET /v1/offers` says so per offer).
    public var notifications: Bool {
        get { settings.notifications }
        set { settings.notifications = newValue }
    }
    public var mutedNotificationTypes: [String] {
        get { settings.mutedNotificationTypes }
        set { settings.mutedNotificationTypes = newValue }
    }
    /// The environment handlers and the browser start with (and where `.desktop` files are looked
    /// for); nil means handoffd's own.
    public var handlerEnvironment: [String: String]? = nil
    /// systemd's notification socket and watchdog (`handoffd` reads them from its environment).
    public var notifier = SystemdNotifier(socketPath: nil)
    /// The configuration file the settings came from, if any: messages name it.
    public var configFile: String?
    /// How long an attached app asked to save (needsSave) has before the last state is sent
    /// (docs/local-api.md, "The originating app: attach": 1 s).
    public var saveWindow: Duration = ActivityAnswer.saveWindow
    /// How long running apps and other devices have to answer.
    public var deadlines = Deadlines()
    /// How many local-API connections may be open at once (`LocalAPIServer.maximumConnections`).
    public var localConnections = LocalAPIServer.maximumConnections
    /// What gives back the memory a burst of local connections took; nil: malloc_trim (tests
    /// count the calls).
    public var localBurstEnded: (@Sendable () -> Void)? = nil

    public enum FirstUse: Sendable {
        case nothing
        case createAccount
        case join(code: String, peer: String?)
    }

    public init(
        socketPath: String = HandoffPaths.defaultSocketPath(),
        stateDirectory: String = HandoffPaths.stateDirectory(),
        limits: ActivityLimits = ActivityLimits(),
        peerPort: Int = DaemonConfiguration.defaultPeerPort,
        peerBindAddresses: [String] = ["0.0.0.0", "::"]
    ) {
        self.socketPath = socketPath
        self.stateDirectory = stateDirectory
        self.limits = limits
        self.peerPort = peerPort
        self.peerBindAddresses = peerBindAddresses
    }

    /// handoffd's: the settings as read from the files and flags, on these paths.
    public init(settings: DaemonSettings, socketPath: String, stateDirectory: String) {
        self.socketPath = socketPath
        self.stateDirectory = stateDirectory
        self.settings = settings
    }
}
