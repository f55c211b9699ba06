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
import DaemonMembership
import DaemonStreams
import HandoffAPI
import HandoffDiscovery
import HandoffModel
import HandoffSystem
import HandoffWideArea
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The daemon as a library: the services of handoffd, composed and run as one group.
/// `handoffd` runs it with signal handling; tests run it in-process on temp paths.
public final class HandoffDaemon: Sendable {
    public let configuration: DaemonConfiguration
    public let events: EventHub
    public let registry: ActivityRegistry
    /// Registered apps and their windows (docs/apps.md).
    let apps: AppRegistry
    let offers: OfferFinder
    let accounts: AccountStore
    let invites: InviteBook
    let security = PeerSecurity()
    let admission: AdmissionControl
    let presence = Presence()
    /// The handoff switch (`PUT /v1/settings`), kept in the state directory.
    let deviceSwitch: DeviceSwitch
    /// The peer messages each feature answers (tests add their own).
    let peerMessages: PeerMessageHandlers
    let directory: PeerDirectory
    let sessions: MemberSessions
    let discovery: DiscoveryService
    let attachments: Attachments
    let book: StreamBook
    let launcher: Launcher
    let resuming: ResumingStreams
    let originating: OriginatingStreams
    let documents: DocumentShelf
    let clipboard: SharedClipboard
    /// The recent activities this device saw.
    let history: HistoryStore
    let deletions: SavedDeletions
    /// Where a continued activity goes here (for `continue`, and what offers say).
    let handover: Handover
    /// The user's home, as the daemon runs (`~/` in `[documents] folders`).
    private let home: String
    private let staticPeers: [PeerAddress]
    private let logger: Logger
    private let startedAt: Timestamp
    private let ready = ReadinessSignal()
    private let group = Mutex<ServiceGroup?>(nil)
    /// Which feature answers each local-API endpoint, once `run` has built the router.
    private let routeOwners = Mutex<[LocalAPIEndpoints.Endpoint: [String]]>([:])
    package var localRouteOwners: [LocalAPIEndpoints.Endpoint: [String]] { routeOwners.withLock { $0 } }
    /// Why `firstUse` could not be done: the daemon stops, and says so (`run` throws it).
    private let firstUseFailure = Mutex<DaemonError?>(nil)
    let listener: PeerListener
    /// What systemd's STATUS line sums up changed where no local event says so (`EventRoute`).
    private let statusChanges: AsyncStream<Void>

    public init(configuration: DaemonConfiguration, logger: Logger) throws(DaemonError) {
        self.configuration = configuration
        self.logger = logger
        self.startedAt = .now()
        try PrivateFiles.ensureDirectory(configuration.stateDirectory)
        // The socket's directory too, before any service opens anything: one another user made
        // (anyone can in /tmp) is refused before the port is up.
        try PrivateFiles.ensureDirectory(PrivateFiles.parentDirectory(of: configuration.socketPath))
        var statics: [PeerAddress] = []
        for text in configuration.staticPeers {
            do {
                statics.append(try PeerAddress(parsing: text, defaultPort: DaemonConfiguration.defaultPeerPort))
            } catch {
                throw DaemonError(.configuration, "static peer \(text): \(error.message)")
            }
        }
        self.staticPeers = statics
        let events = EventHub()
        self.events = events
        // Features announce into the route before the ones it reaches exist (it is pointed at
        // them below); nothing announces before the daemon runs.
        let route = EventRoute()
        self.statusChanges = route.statusChanges
        self.admission = AdmissionControl(limits: configuration.admissionLimits, clock: configuration.clock)
        let deviceSwitch = DeviceSwitch(
            stateDirectory: configuration.stateDirectory, allowed: configuration.settings.handoffAllowed, clipboardAllowed: configuration.settings.clipboardAllowed,
            announce: route.announce, logger: logger
        )
        self.deviceSwitch = deviceSwitch
        _ = presence.share(deviceSwitch.isOn)
        admission.open(deviceSwitch.isOn)
        let registry = ActivityRegistry(
            stateDirectory: configuration.stateDirectory,
            limits: configuration.limits,
            events: events,
            announce: route.announce,
            clock: configuration.clock,
            logger: logger
        )
        self.registry = registry
        let attachments = Attachments(events: events)
        self.attachments = attachments
        let restorations = RestorationStore(stateDirectory: configuration.stateDirectory, limits: configuration.limits, logger: logger)
        self.apps = AppRegistry(
            registry: registry,
            restoration: restorations,
            attachments: attachments,
            limits: configuration.limits,
            answerDeadline: configuration.deadlines.appAnswer,
            logger: logger
        )
        let invites = InviteBook(lifetimeSeconds: configuration.inviteLifetimeSeconds, clock: configuration.clock, announce: route.announce)
        self.invites = invites
        let accounts = AccountStore(
            stateDirectory: configuration.stateDirectory,
            security: security,
            invites: invites,
            events: events,
            registry: registry,
            announce: route.announce,
            logger: logger
        )
        self.accounts = accounts
        let history = HistoryStore(
            stateDirectory: configuration.stateDirectory, limits: configuration.settings.history, events: events,
            me: { accounts.deviceNow.map { LocalEvent.PeerRef(id: $0.id, name: $0.name) } }, logger: logger
        )
        self.history = history
        let directory = PeerDirectory(events: events, dialMemory: DialMemory(path: configuration.stateDirectory + "/dialled"))
        self.directory = directory
        let book = StreamBook(events: events)
        self.book = book
        self.launcher = try Self.makeLauncher(configuration, logger: logger)
        let environment = configuration.handlerEnvironment ?? ProcessInfo.processInfo.environment
        let home = HandoffPaths.homeDirectory(environment: environment)
        self.home = home
        let globs = MIMEGlobs(dataDirectories: HandlerCatalog.dataDirectories(environment: environment))
        let documents = DocumentShelf(registry: registry, settings: configuration.settings.documents(home: home), globs: globs, logger: logger)
        self.documents = documents
        let resuming = ResumingStreams(book: book, security: security, directory: directory, logger: logger)
        self.resuming = resuming
        let handover = Handover(
            apps: apps, launcher: launcher,
            documents: DocumentReceiver(
                settings: { documents.current }, globs: globs, directory: HandoffPaths.received(environment: environment), resuming: resuming, logger: logger
            )
        )
        self.handover = handover
        self.offers = OfferFinder(
            directory: directory, handover: handover,
            policy: NotificationPolicy(enabled: configuration.notifications, mutedTypes: Set(configuration.mutedNotificationTypes)),
            deviceSwitch: deviceSwitch
        )
        let answerer = ActivityAnswerer(
            registry: registry, presence: presence, attachments: attachments, announce: route.announce, saveWindow: configuration.saveWindow
        )
        // Who answers which peer message on the sessions: each feature its own.
        let peerMessages = PeerMessageHandlers()
        peerMessages.register(ActivityMessages(directory: directory, answerer: answerer))
        peerMessages.register(AccountMessages(store: accounts, logger: logger))
        peerMessages.register(KeyTransferMessages(store: accounts, logger: logger))
        peerMessages.register(CertificateRenewal(store: accounts, logger: logger))
        self.peerMessages = peerMessages
        let sessions = MemberSessions(
            store: accounts, security: security, directory: directory, handlers: peerMessages, handoffOn: deviceSwitch.isOn,
            clock: configuration.clock, deadlines: configuration.deadlines, logger: logger
        )
        self.sessions = sessions
        let deletions = SavedDeletions(history: history, restorations: restorations, registry: registry, sessions: sessions, clock: configuration.clock, logger: logger)
        peerMessages.register(deletions)
        self.deletions = deletions
        let clipboard = SharedClipboard(
            enabled: deviceSwitch.settings.clipboard, settings: configuration.settings.clipboard, clock: configuration.clock, events: events, sessions: sessions,
            resuming: resuming, logger: logger
        )
        peerMessages.register(ClipboardMessages(clipboard: clipboard))
        self.clipboard = clipboard
        self.originating = OriginatingStreams(
            book: book, registry: registry, attachments: attachments, store: accounts, sources: OriginatingStreams.Sources(files: documents, clipboard: clipboard),
            deadlines: configuration.deadlines, logger: logger
        )
        let listener = PeerListener(
            port: configuration.peerPort,
            bindAddresses: configuration.peerBindAddresses,
            store: accounts,
            security: security,
            admission: admission,
            sessions: sessions,
            streams: originating,
            logger: logger,
            handshakeTimeout: .milliseconds(Int64(configuration.handshakeTimeoutSeconds * 1000)),
            configFile: configuration.configFile
        )
        self.listener = listener
        let configuredPort = configuration.peerPort
        // The link's discovery, and a unicast zone's beside it when `[wide_area]` names one.
        let backend: any DiscoveryBackend =
            configuration.settings.wideArea(home: home, stateDirectory: configuration.stateDirectory).map { wideArea in
                var wideArea = wideArea
                if let addresses = configuration.wideAreaAddresses { wideArea.addresses = addresses }
                return CombinedDiscovery(local: configuration.discovery, wideArea: WideAreaDiscovery(configuration: wideArea))
            } ?? configuration.discovery
        self.discovery = DiscoveryService(
            backend: backend,
            browseDomains: configuration.browseDomains,
            staticPeers: configuration.staticPeers,
            store: accounts,
            directory: directory,
            notice: presence.notice,
            announce: route.announce,
            port: { listener.boundPort.value ?? configuredPort },
            deviceSwitch: deviceSwitch,
            logger: logger
        )
        route.connect(
            EventRoute.Features(
                events: events, attachments: attachments, book: book, presence: presence, sessions: sessions, discovery: discovery, admission: admission,
                accounts: accounts, history: history, clipboard: clipboard
            )
        )
    }

    private static func makeLauncher(_ configuration: DaemonConfiguration, logger: Logger) throws(DaemonError) -> Launcher {
        let (configured, browser) = try parseHandlers(configuration.handlers, browser: configuration.browser)
        let environment = configuration.handlerEnvironment ?? ProcessInfo.processInfo.environment
        let socketDirectory = configuration.socketPath.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        return Launcher(
            catalog: HandlerCatalog(configured: configured, dataDirectories: HandlerCatalog.dataDirectories(environment: environment)),
            browser: browser,
            webDomainsOff: Set(configuration.settings.webDomainsOff.compactMap(WebDomainClaim.init)),
            directory: (socketDirectory.isEmpty ? "." : socketDirectory) + "/continuations",
            socketPath: configuration.socketPath,
            environment: environment,
            logger: logger
        )
    }

    private static func parseHandlers(_ handlers: [String: String], browser text: String) throws(DaemonError) -> ([String: ExecLine], ExecLine) {
        var configured: [String: ExecLine] = [:]
        for (type, line) in handlers {
            do {
                configured[type] = try ExecLine(parsing: line)
            } catch {
                throw DaemonError(.configuration, "the handler for \(type) (\(line)): \(error.description)")
            }
        }
        do {
            return (configured, try ExecLine(parsing: text))
        } catch {
            throw DaemonError(.configuration, "the browser command (\(text)): \(error.description)")
        }
    }

    /// Applies what a reloaded configuration (SIGHUP) can change while running — the handlers,
    /// the browser, the web domains turned off, notifications, documents, history, the switches
    /// (`handoff`, `[clipboard] enabled`) and the clipboard's limits — and returns the names of
    /// the settings that only a restart applies (`DaemonSettings.keys` says which).
    public func reload(_ settings: DaemonSettings) throws(DaemonError) -> [String] {
        let (configured, browser) = try Self.parseHandlers(settings.handlers, browser: settings.browser)
        launcher.replace(configured: configured, browser: browser, webDomainsOff: Set(settings.webDomainsOff.compactMap(WebDomainClaim.init)))
        offers.replace(policy: NotificationPolicy(enabled: settings.notifications, mutedTypes: Set(settings.mutedNotificationTypes)))
        documents.replace(settings.documents(home: home))
        history.change(to: settings.history)
        deviceSwitch.allow(settings.handoffAllowed, clipboard: settings.clipboardAllowed)
        clipboard.replace(settings.clipboard)
        let needRestart = settings.restartNeeded(from: configuration.settings)
        logger.notice("configuration reloaded", metadata: ["handlers": "\(configured.count)", "restart-needed-for": "\(needRestart.joined(separator: ","))"])
        return needRestart
    }

    /// Process-wide, so for `handoffd` to call once at start, before any channel exists (not for
    /// apps embedding the daemon):
    /// - bulk buffers up to 1 MiB come from the heap, and up to 8 MiB of freed heap is kept,
    ///   instead of mapping, faulting in and unmapping every stream read's buffer;
    /// - all of the daemon's sockets share one NIO event loop, so a continuation stream's two
    ///   connections (the app's and the other device's) are always on the same thread and a splice
    ///   hands bytes over without waking another thread. The daemon's work is I/O that one loop
    ///   carries easily; the loops' cross-thread wake-ups cost more than they gave.
    /// Measured by bench/streams: 606 → 812 MB/s median for the first; for the second 812 → 874–1089
    /// (six invocations) and the daemons' CPU per GiB ≈ 2.2 → 1.5 s. RSS growth stays within a few MB.
    public static func tuneProcessForStreams() {
        LinuxCalls.keepBulkBuffers(mmapThreshold: 1 << 20, trimThreshold: 8 << 20)
        NIOSingletons.groupLoopCountSuggestion = 1
    }

    /// The port other devices reach this one on (the configured one, or the one picked for 0).
    public var peerPort: Int { listener.boundPort.value ?? configuration.peerPort }

    /// Runs every service until SIGTERM or SIGINT (with `handleSignals`) or `shutdown()`. With
    /// `onHangup`, SIGHUP calls it (`HangupService`).
    public func run(handleSignals: Bool = true, onHangup: (@Sendable () -> Void)? = nil) async throws {
        // Before any peer can use up our descriptors: a timer armed at the limit would never fire.
        // Its millisecond passes while the services are built below.
        async let prepared: Void = QuietSleep.prepare()
        let daemonUID = geteuid()
        let peerPort: @Sendable () -> Int = { [self] in self.peerPort }
        let fetch = ActivityFetch(directory: directory, sessions: sessions, peerPort: peerPort, maximumActivityBytes: configuration.limits.maximumEncodedSize)
        let continueFlow = ContinueFlow(accounts: accounts, fetch: fetch, book: book, handover: handover, events: events)
        // The local API's rooms: each feature's routes (LocalRoutes).
        let router = LocalAPIRouter(
            streams: StreamRoutes(book: book, resuming: resuming, originating: originating, clipboard: clipboard, daemonUID: daemonUID),
            features: [
                DeviceRoutes(deviceSwitch: deviceSwitch, status: { [self] webDomains in await self.status(webDomains: webDomains) }),
                ActivityRoutes(registry: registry, events: events, attachments: attachments, documents: documents),
                AppRoutes(apps: apps),
                AccountRoutes(
                    accounts: accounts, sessions: sessions, directory: directory, discovery: discovery, peerPort: peerPort, deviceSwitch: deviceSwitch,
                    logger: logger
                ),
                PeerRoutes(
                    directory: directory, discovery: discovery, continueFlow: continueFlow, offers: offers,
                    links: ActivityLinks(accounts: accounts, registry: registry, history: history, fetch: fetch, continueFlow: continueFlow)
                ),
                HistoryRoutes(history: history, deletions: deletions),
                ClipboardRoutes(clipboard: clipboard),
            ],
            daemonUID: daemonUID,
            logger: logger
        )
        guard router.faults.isEmpty else {
            throw DaemonError(.internalError, "the local API's routes are built wrong: \(router.faults.joined(separator: "; "))")
        }
        routeOwners.withLock { $0 = router.owners }
        // Room for the largest activity as JSON: base64 grows data by 4/3, tags add a little.
        let maximumBody = configuration.limits.maximumEncodedSize * 2 + 64 * 1024
        let apiReady = ReadinessSignal()
        let api = LocalAPIServer(
            socketPath: configuration.socketPath,
            router: router,
            maximumRequestBody: maximumBody,
            deadlines: configuration.deadlines,
            maximumConnections: configuration.localConnections,
            burstEnded: configuration.localBurstEnded,
            logger: logger,
            ready: apiReady
        )
        let state = StateLifecycle(registry: registry, accounts: accounts, events: events, attachments: attachments, notifier: configuration.notifier)
        let hangup = onHangup.map { HangupService(reload: $0) }
        await prepared
        let serviceGroup = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [
                    .init(service: state),
                    .init(service: history),
                    .init(service: MemberSessionsService(sessions: sessions, staticPeers: staticPeers, deviceSwitch: deviceSwitch)),
                    .init(service: listener),
                    .init(service: discovery),
                    .init(service: api),
                ] + (hangup.map { [.init(service: $0)] } ?? []),
                gracefulShutdownSignals: handleSignals ? [.sigterm, .sigint] : [],
                logger: logger
            )
        )
        group.withLock { $0 = serviceGroup }
        logger.info("handoffd starting", metadata: ["version": "\(HandoffVersion.current)", "pid": "\(getpid())"])
        // Beside the services: telling who waits (and systemd) that the daemon is ready, then
        // supervising it for systemd. Both end with the services.
        try await withThrowingDiscardingTaskGroup { tasks in
            tasks.addTask { [ready, discovery, self] in
                do {
                    try await apiReady.wait()
                    try await listener.bound.wait()
                    try await discovery.ready.wait()
                    try await hangup?.trapping.wait()
                    let firstUse = await self.applyFirstUse()
                    // Stopped meanwhile (SIGTERM during a first join): that is no failure of the join.
                    guard !Task.isCancelled else { return }
                    if let failure = firstUse {
                        // A daemon asked to join that could not is no use without an account: it
                        // stops and says why, rather than running on with none.
                        self.firstUseFailure.withLock { $0 = failure }
                        ready.fail(failure)
                        await self.shutdown()
                        return
                    }
                    ready.succeed()
                    self.configuration.notifier.ready(status: await self.statusLine())
                } catch let e as DaemonError {
                    ready.fail(e)
                } catch {}
            }
            tasks.addTask { [ready, self] in
                guard (try? await ready.wait()) != nil else { return }
                await self.superviseForSystemd()
            }
            do {
                try await serviceGroup.run()
            } catch let error as DaemonError {
                ready.fail(error)
                throw error
            } catch {
                ready.fail(DaemonError(.io, "handoffd failed", cause: error))
                throw error
            }
            tasks.cancelAll()
        }
        if let failure = firstUseFailure.withLock({ $0 }) { throw failure }
        ready.fail(DaemonError(.io, "handoffd stopped before it was ready"))
        logger.info("handoffd stopped")
    }

    /// Under systemd: `WATCHDOG=1` every half `WatchdogSec` while the actors and an event loop
    /// answer (a wedged daemon gets restarted), and `STATUS=` whenever the summary changes. The
    /// summary is looked at when a local event says something changed (a peer, the current
    /// activity), when the route says discovery or the account changed, and at each watchdog
    /// ping — never on a timer of its own, so that an idle daemon wakes only for the watchdog
    /// (docs/benchmarks.md, idle).
    private func superviseForSystemd() async {
        let notifier = configuration.notifier
        guard notifier.isActive else { return }
        let last = Mutex(await statusLine())
        let update: @Sendable () async -> Void = { [self] in
            let line = await statusLine()
            guard last.withLock({ l in defer { l = line }; return l != line }) else { return }
            notifier.status(line)
        }
        await withDiscardingTaskGroup { group in
            group.addTask { [events] in
                // A subscriber that falls behind is dropped by the hub: subscribe again.
                while !Task.isCancelled {
                    for await _ in events.subscribe() { await update() }
                }
            }
            group.addTask { [statusChanges] in
                for await _ in statusChanges { await update() }
            }
            if let interval = notifier.watchdogInterval {
                group.addTask {
                    while !Task.isCancelled {
                        try? await QuietSleep.sleep(for: interval / 2)
                        if (try? await MultiThreadedEventLoopGroup.singleton.next().submit({}).get()) != nil { notifier.watchdog() }
                        await update()
                    }
                }
            }
        }
    }

    /// One line for `systemctl status`: no titles or other content, only the state.
    func statusLine() async -> String {
        let s = await status()
        let discovery: String
        switch s.discovery.state {
        case .off: discovery = "no account yet"
        case .starting: discovery = "discovery starting"
        case .running: discovery = "discovery running"
        case .unavailable: discovery = "avahi-daemon unreachable (retrying)"
        }
        let peers = s.reachablePeers == 1 ? "1 device reachable" : "\(s.reachablePeers) devices reachable"
        return "port \(s.peerPort); \(discovery); \(peers); \(s.currentActivity == nil ? "no current activity" : "an activity is current")"
    }

    /// `make run`'s first use: an account is created (or joined) if there is none. Returns why
    /// that failed, if it did.
    private func applyFirstUse() async -> DaemonError? {
        guard await !accounts.isMember else {
            if case .join = configuration.firstUse { logger.notice("this device already belongs to an account; --join is ignored (handoffctl account leave first)") }
            return nil
        }
        switch configuration.firstUse {
        case .nothing:
            return nil
        case .createAccount:
            do {
                let info = try await accounts.create(CreateAccountRequest())
                logger.notice("created an account on first use", metadata: ["account": "\(info.accountID.short)"])
                return nil
            } catch {
                return DaemonError(.firstUse, "cannot create an account: \(error.message)")
            }
        case .join(let code, let peer):
            let discovery = self.discovery
            logger.notice("looking for the device inviting with the code, to join its account (up to 30 s)")
            do {
                let info = try await AccountJoiner.join(
                    JoinAccountRequest(code: code, peer: peer), store: accounts, defaultPort: peerPort, logger: logger,
                    // A daemon that just started browses from nothing: give the network longer
                    // than `account join` does (it says what it is doing meanwhile).
                    findInviter: { code in await discovery.findInviter(code: code, timeout: .seconds(30)) }
                )
                logger.notice("joined an account", metadata: ["account": "\(info.accountID.short)"])
                return nil
            } catch {
                return DaemonError(
                    .firstUse,
                    "cannot join the account: \(error.message). Get a new code (handoffctl account invite, on the device that has the account) and start again with it (make run JOIN=CODE)"
                )
            }
        }
    }

    /// Returns once the local API and the peer port accept connections and discovery has
    /// started (or found Avahi missing); throws why if the daemon failed first.
    public func waitUntilReady() async throws {
        try await ready.wait()
    }

    /// Begins a graceful shutdown, as SIGTERM would.
    public func shutdown() async {
        await group.withLock { $0 }?.triggerGracefulShutdown()
    }

    /// What `GET /v1/status` answers; `webDomains`: also the claims of web domains, which reads
    /// every app's `.desktop` file (only `doctor` asks).
    public func status(webDomains: Bool = false) async -> DaemonStatus {
        let current = await registry.currentActivity()
        let claims = webDomains ? await apps.webDomainClaims(off: launcher.webDomainsOff) + launcher.webDomainClaims : []
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
            peerPort: peerPort,
            discovery: discovery.status,
            reachablePeers: await directory.reachableCount,
            strangers: await directory.strangers,
            inboundPeers: await sessions.inboundCount,
            browser: launcher.browserStatus,
            configFile: configuration.configFile,
            settings: deviceSwitch.settings,
            invitingNearby: discovery.invitingNearby,
            webDomains: claims.isEmpty ? nil : claims,
            followsDocuments: documents.current.follow
        )
    }
}
