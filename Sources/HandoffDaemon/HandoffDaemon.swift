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
    public var socketPath: String
    public var stateDirectory: String
    public var limits: ActivityLimits

    public init(
        socketPath: String = HandoffPaths.defaultSocketPath(),
        stateDirectory: String = HandoffPaths.stateDirectory(),
        limits: ActivityLimits = ActivityLimits()
    ) {
        self.socketPath = socketPath
        self.stateDirectory = stateDirectory
        self.limits = limits
    }
}

/// The daemon as a library: the services of handoffd, composed and run as one group.
/// `handoffd` runs it with signal handling; tests run it in-process on temp paths.
public final class HandoffDaemon: Sendable {
    public let configuration: DaemonConfiguration
    public let events: EventHub
    public let registry: ActivityRegistry
    private let logger: Logger
    private let startedAt: Timestamp
    private let ready = ReadinessSignal()
    private let group = Mutex<ServiceGroup?>(nil)

    public init(configuration: DaemonConfiguration, logger: Logger) throws(DaemonError) {
        self.configuration = configuration
        self.logger = logger
        self.startedAt = .now()
        try PrivateFiles.ensureDirectory(configuration.stateDirectory)
        self.events = EventHub()
        self.registry = ActivityRegistry(
            stateDirectory: configuration.stateDirectory,
            limits: configuration.limits,
            events: events,
            logger: logger
        )
    }

    /// Runs until SIGTERM/SIGINT (when `handleSignals`) or `shutdown()`.
    public func run(handleSignals: Bool = true) async throws {
        let router = LocalAPIRouter(
            registry: registry,
            events: events,
            statusProvider: { [self] in await self.status() },
            daemonUID: geteuid(),
            logger: logger
        )
        // Room for the largest activity as JSON: base64 grows data by 4/3, tags add a little.
        let maximumBody = configuration.limits.maximumEncodedSize * 2 + 64 * 1024
        let api = LocalAPIServer(
            socketPath: configuration.socketPath,
            router: router,
            maximumRequestBody: maximumBody,
            logger: logger,
            ready: ready
        )
        let lifecycle = RegistryLifecycle(registry: registry, events: events)
        let serviceGroup = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [
                    .init(service: lifecycle),
                    .init(service: api),
                ],
                gracefulShutdownSignals: handleSignals ? [.sigterm, .sigint] : [],
                logger: logger
            )
        )
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
            currentActivity: current.map(ActivitySummary.init)
        )
    }
}

/// Starts the registry's expiry timer with the group and stops it, and the event streams, on shutdown.
struct RegistryLifecycle: Service {
    let registry: ActivityRegistry
    let events: EventHub

    func run() async throws {
        await registry.start()
        try? await gracefulShutdown()
        await registry.stop()
        events.finishAll()
    }
}
