import HandoffAPI
import HandoffModel
import Logging
import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Everything the daemon needs to know to start. `handoffd` fills it from flags, the environment
/// and (later) the config file; tests fill it with temp paths.
public struct DaemonConfiguration: Sendable {
    public static let defaultPeerPort = 47810

    public var socketPath: String
    public var stateDirectory: String
    public var limits: ActivityLimits
    /// The TCP port other devices connect to; 0 picks a free one (tests).
    public var peerPort: Int
    /// Where to listen for devices: every IPv4 and IPv6 address by default.
    public var peerBindAddresses: [String]
    /// How long an invite code is valid (SPEC §3: 10 minutes).
    public var inviteLifetimeSeconds: Int64 = 600
    /// Handshake budget per address, cap on unauthenticated connections, wrong-code penalty.
    public var admissionLimits = AdmissionLimits()
    /// A peer that has not completed its TLS handshake by then is disconnected.
    public var handshakeTimeoutSeconds: Double = 10

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
}

/// The daemon as a library: the services of handoffd, composed and run as one group.
/// `handoffd` runs it with signal handling; tests run it in-process on temp paths.
public final class HandoffDaemon: Sendable {
    public let configuration: DaemonConfiguration
    public let events: EventHub
    public let registry: ActivityRegistry
    let accounts: AccountStore
    let security = PeerSecurity()
    let admission: AdmissionControl
    private let logger: Logger
    private let startedAt: Timestamp
    private let ready = ReadinessSignal()
    private let group = Mutex<ServiceGroup?>(nil)
    private let boundPeerPort = Mutex<Int?>(nil)

    public init(configuration: DaemonConfiguration, logger: Logger) throws(DaemonError) {
        self.configuration = configuration
        self.logger = logger
        self.startedAt = .now()
        try PrivateFiles.ensureDirectory(configuration.stateDirectory)
        self.events = EventHub()
        self.admission = AdmissionControl(limits: configuration.admissionLimits)
        self.registry = ActivityRegistry(
            stateDirectory: configuration.stateDirectory,
            limits: configuration.limits,
            events: events,
            logger: logger
        )
        self.accounts = AccountStore(
            stateDirectory: configuration.stateDirectory,
            security: security,
            invites: InviteBook(lifetimeSeconds: configuration.inviteLifetimeSeconds),
            events: events,
            registry: registry,
            logger: logger
        )
    }

    /// The port other devices reach this one on (the configured one, or the one picked for 0).
    public var peerPort: Int { boundPeerPort.withLock { $0 } ?? configuration.peerPort }

    /// Runs until SIGTERM/SIGINT (when `handleSignals`) or `shutdown()`.
    public func run(handleSignals: Bool = true) async throws {
        let services = DaemonServices(
            registry: registry,
            events: events,
            accounts: accounts,
            security: security,
            statusProvider: { [self] in await self.status() },
            peerPort: { [self] in self.peerPort },
            daemonUID: geteuid(),
            logger: logger
        )
        // Room for the largest activity as JSON: base64 grows data by 4/3, tags add a little.
        let maximumBody = configuration.limits.maximumEncodedSize * 2 + 64 * 1024
        let apiReady = ReadinessSignal()
        let api = LocalAPIServer(
            socketPath: configuration.socketPath,
            router: LocalAPIRouter(services: services),
            maximumRequestBody: maximumBody,
            logger: logger,
            ready: apiReady
        )
        let listener = PeerListener(
            port: configuration.peerPort,
            bindAddresses: configuration.peerBindAddresses,
            store: accounts,
            security: security,
            admission: admission,
            logger: logger,
            handshakeTimeout: .milliseconds(Int64(configuration.handshakeTimeoutSeconds * 1000)),
            reportPort: { [self] port in self.boundPeerPort.withLock { $0 = port } }
        )
        let state = StateLifecycle(registry: registry, accounts: accounts, events: events)
        let serviceGroup = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [
                    .init(service: state),
                    .init(service: listener),
                    .init(service: api),
                ],
                gracefulShutdownSignals: handleSignals ? [.sigterm, .sigint] : [],
                logger: logger
            )
        )
        let readiness = Task { [ready] in
            do {
                try await apiReady.wait()
                try await listener.bound.wait()
                ready.succeed()
            } catch let e as DaemonError {
                ready.fail(e)
            } catch {}
        }
        defer { readiness.cancel() }
        group.withLock { $0 = serviceGroup }
        logger.info("handoffd starting", metadata: ["version": "\(HandoffVersion.current)", "pid": "\(getpid())"])
        do {
            try await serviceGroup.run()
        } catch let error as DaemonError {
            ready.fail(error)
            throw error
        } catch {
            ready.fail(DaemonError(.io, "handoffd failed", cause: error))
            throw error
        }
        ready.fail(DaemonError(.io, "handoffd stopped before it was ready"))
        logger.info("handoffd stopped")
    }

    /// Returns once the local API accepts connections; throws why if the daemon failed first.
    public func waitUntilReady() async throws {
        try await ready.wait()
    }

    /// Begins a graceful shutdown, as SIGTERM would.
    public func shutdown() async {
        await group.withLock { $0 }?.triggerGracefulShutdown()
    }

    public func status() async -> DaemonStatus {
        let current = await registry.currentActivity()
        return DaemonStatus(
            version: HandoffVersion.current,
            pid: getpid(),
            uid: geteuid(),
            startedAt: startedAt,
            socketPath: configuration.socketPath,
            stateDirectory: configuration.stateDirectory,
            maximumActivityBytes: configuration.limits.maximumEncodedSize,
            currentActivity: current.map(ActivitySummary.init),
            account: try? await accounts.info(),
            peerPort: peerPort
        )
    }
}

/// Starts what was restored from disk (the activity's expiry timer, the account's TLS contexts)
/// with the group, and stops the timer and the event streams on shutdown.
struct StateLifecycle: Service {
    let registry: ActivityRegistry
    let accounts: AccountStore
    let events: EventHub

    func run() async throws {
        await registry.start()
        await accounts.start()
        try? await gracefulShutdown()
        await registry.stop()
        events.finishAll()
    }
}
