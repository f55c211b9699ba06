#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffDiscovery
import HandoffModel
import HandoffSystem

#if canImport(Glibc)
import Glibc
#endif

/// Where and how to take part in DNS-SD in a unicast zone (`[wide_area]` in handoffd.toml).
public struct WideAreaConfiguration: Sendable {
    /// The zone, fully qualified and lowercased (`handoff.example.net.`).
    public var domain: String
    /// Where updates (and queries) go; nil: found from the zone (RFC 6763 §11: the SRV record
    /// `_dns-update._udp.DOMAIN`, else the primary server named by its SOA), and queries go to
    /// the system's resolvers.
    public var server: DNSServer?
    /// Signs our updates; nil: browse only.
    public var key: TSIGKey?
    /// Why there is no key although one was configured (the file is unreadable, or others can read it).
    public var keyProblem: String?
    /// A file where the names we put in the zone are kept, so that the next start deletes what a
    /// crash left there.
    public var leftoverFile: String?
    /// The addresses to register (evaluated at every write).
    public var addresses: @Sendable () -> [String]
    /// How often the zone is browsed while nothing is being looked for.
    public var browseInterval: Duration = .seconds(60)
    /// While a join looks for its inviter (our interest changes), the zone is browsed this often.
    public var lookingInterval: Duration = .seconds(1)
    /// The records' TTL, seconds; they are written again every half of it.
    public var ttl = 120
    /// How long one query or update may wait for its answer.
    public var timeout: Duration = .seconds(3)

    public init(domain: String, server: DNSServer?, key: TSIGKey?, leftoverFile: String?, addresses: @escaping @Sendable () -> [String]) {
        self.domain = domain
        self.server = server
        self.key = key
        self.leftoverFile = leftoverFile
        self.addresses = addresses
    }
}

/// DNS-SD in a unicast zone (docs/discovery.md, "Beyond one link"): our service registered there
/// by signed DNS UPDATEs (`WideAreaRegistrar`), the zone browsed by plain queries.
///
/// Browsing asks for the zone's `_handoff._tcp` PTR records once a minute while idle, at once at
/// start and when what we look for changes (an account made or joined, a join looking for its
/// inviter: then every second). What it lists goes through the same `DiscoveryBudget` as adverts
/// on the link: each new instance is resolved once (SRV, TXT, addresses), only those whose TXT
/// we are interested in are followed (resolved again at every browse), and the rest cost nothing
/// but their line in the listing. A device that appears is found by its own browse at start: it
/// dials us, so neither side waits for the other's minute.
public actor WideAreaDiscovery: DiscoveryBackend {
    private let configuration: WideAreaConfiguration
    private var continuation: AsyncStream<DiscoveryEvent>.Continuation?
    private var budget: DiscoveryBudget
    private var interest: @Sendable (ServiceInstance, TXTRecord) -> Bool = { _, _ in false }
    private var registrar: WideAreaRegistrar
    /// Where updates go, once found.
    private var updateServer: DNSServer?
    private var desired: (name: String, port: Int, txt: TXTRecord)?
    /// What the last listing held (the tracked ones), and what resolving found of each.
    private var listed: Set<ServiceInstance> = []
    private var found: [ServiceInstance: Sighting] = [:]
    private var resolveQueue: [ServiceInstance] = []
    private var nextBrowse: ContinuousClock.Instant = .now
    private var lookingUntil: ContinuousClock.Instant?
    private var browseProblem: String?
    private var browseFailures = 0
    /// The zone's server did not answer the last exchange (a browse or a write): a stop does not
    /// wait for it (`withdraw`).
    private var serverSilent = false
    /// Browses that answered: a followed device's SRV and addresses are asked again every
    /// `addressesEvery`th (or when its TXT changed); its TXT at every one.
    private var browses = 0
    static let addressesEvery = 5
    private var lastState: WideAreaState?
    private var worker: Task<Void, Never>?
    private var working = false
    private var again = false
    private var idleWaiters: [CheckedContinuation<Void, Never>] = []
    /// Withdrawals waiting: the work loop only writes until they are done (no browsing, no
    /// resolving), so that an exit is held up by one write at most.
    private var withdrawing = 0
    /// The names `wide-area-names` holds now (written only when they change).
    private var leftoverNames: [String]?
    private var ticker: Task<Void, Never>?
    private var stopped = false

    public init(configuration: WideAreaConfiguration) {
        self.init(configuration: configuration, limits: DiscoveryBudget.Limits(), timing: WideAreaRegistrar.Timing(refresh: .seconds(configuration.ttl / 2)))
    }

    init(configuration: WideAreaConfiguration, limits: DiscoveryBudget.Limits, timing: WideAreaRegistrar.Timing) {
        self.configuration = configuration
        self.budget = DiscoveryBudget(limits: limits)
        self.updateServer = configuration.server
        let leftover = configuration.leftoverFile.map(Self.readLeftover) ?? []
        self.registrar = WideAreaRegistrar(timing: timing, leftover: leftover)
    }

    public func start(browseDomains: [String]) -> AsyncStream<DiscoveryEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: DiscoveryEvent.self)
        self.continuation = continuation
        report()
        poke()
        return stream
    }

    public func setInterest(_ interest: @escaping @Sendable (ServiceInstance, TXTRecord) -> Bool) {
        self.interest = interest
        queue(budget.interestChanged(interest, now: .now))
        // Something new is looked for: browse now, and often for a while.
        let now = ContinuousClock.now
        lookingUntil = now + .seconds(10)
        nextBrowse = min(nextBrowse, now)
        poke()
    }

    /// A member restarted under a new name, and said so over its session before our next browse:
    /// browse now and every second for 10 s (its own write to the zone may be under way), until
    /// the listing has it — so `peers` says how it is found within a second, not a minute. (At
    /// most once per session and 10 s: `PeerDirectory.advertised`.)
    public func lookFor(instanceName: String) {
        guard !listed.contains(where: { $0.name == instanceName }) else { return }
        let now = ContinuousClock.now
        lookingUntil = max(lookingUntil ?? now, now + .seconds(10))
        nextBrowse = min(nextBrowse, now)
        poke()
    }

    public func publish(instanceName: String, port: Int, txt: TXTRecord) {
        desired = (instanceName, port, txt)
        poke()
    }

    /// Withdraws our records, and waits until the zone has heard it, so that an exit leaves
    /// nothing behind — at most one query's `timeout` in all (the exchange under way, then the
    /// withdrawal), and not at all when the server did not answer last. What could not be
    /// deleted is in `wide-area-names`, deleted at the next start (docs/discovery.md).
    public func withdraw() async {
        desired = nil
        guard configuration.key != nil, !stopped else { return }
        guard !serverSilent else {
            // Written when the server answers again (handoff turned off), or at the next start.
            poke()
            return
        }
        withdrawing += 1
        poke()
        if working {
            let deadline = ContinuousClock.now + configuration.timeout
            let timer = Task(executorPreference: ProgramExecutor.current) { [weak self] in
                try? await QuietSleep.sleep(until: deadline)
                guard !Task.isCancelled else { return }
                await self?.stopWaiting()
            }
            await withCheckedContinuation { idleWaiters.append($0) }
            timer.cancel()
        }
        withdrawing -= 1
        if !working { schedule() }  // browsing, left out while it waited, is due again
    }

    /// A withdrawal waited as long as it may: it goes on without the server's word.
    private func stopWaiting() {
        for waiter in idleWaiters { waiter.resume() }
        idleWaiters = []
    }

    public func stop() {
        stopped = true
        ticker?.cancel()
        worker?.cancel()
        for waiter in idleWaiters { waiter.resume() }
        idleWaiters = []
        continuation?.finish()
    }

    // MARK: The loop

    /// Something may be due: do it (once at a time; a poke during the work runs it again).
    private func poke() {
        guard !stopped else { return }
        if working {
            again = true
            return
        }
        working = true
        worker = Task(executorPreference: ProgramExecutor.current) { [weak self] in await self?.work() }
    }

    private func work() async {
        repeat {
            again = false
            await register()
            // Once the withdrawal itself went to the registrar: a round under way when it was
            // asked for wrote what was wanted before it.
            if withdrawing > 0, registrar.desired == nil { break }
            await browseIfDue()
            await resolveQueued()
            queue(budget.tick(now: .now))
            if !resolveQueue.isEmpty { again = true }
        } while again && !stopped
        working = false
        for waiter in idleWaiters { waiter.resume() }
        idleWaiters = []
        // A change that came while a withdrawal cut the loop short is looked at at once.
        if again, withdrawing > 0, !stopped {
            again = false
            poke()
            return
        }
        schedule()
    }

    private func schedule() {
        ticker?.cancel()
        guard !stopped else { return }
        // While a withdrawal waits, the loop does not browse: a browse due would wake it at once.
        guard let deadline = [registrar.nextDeadline, budget.nextDeadline, withdrawing > 0 ? nil : nextBrowse].compactMap({ $0 }).min() else { return }
        ticker = Task(executorPreference: ProgramExecutor.current) { [weak self] in
            try? await QuietSleep.sleep(until: deadline)
            guard !Task.isCancelled else { return }
            await self?.poke()
        }
    }

    // MARK: Registering

    private func register() async {
        guard let key = configuration.key else { return }
        let wanted = desired.flatMap { desired in
            desired.txt.rdata.map {
                WideAreaRegistrar.Registration(
                    instanceName: desired.name, port: desired.port, txt: $0, addresses: Array(configuration.addresses().prefix(Self.maximumAddresses))
                )
            }
        }
        // A new name is written at once; a new record under the same name after the back-off
        // and the throttle (`WideAreaRegistrar`).
        let now = ContinuousClock.now
        let browsing = now >= nextBrowse && withdrawing == 0
        await write(wanted != registrar.desired ? registrar.want(wanted, now: now) : registrar.tick(now: now, early: browsing ? registrar.timing.refresh / 2 : .zero), key: key)
    }

    /// `first`, and what the registrar wants written after it.
    private func write(_ first: WideAreaRegistrar.Write?, key: TSIGKey) async {
        var write = first
        while let current = write, !stopped {
            let failure = await send(current, key: key)
            if case .unanswered = failure { serverSilent = true } else { serverSilent = false }
            write = registrar.finished(failure, now: .now)
            report()
        }
    }

    /// One write; nil when it took effect, else why not.
    private func send(_ write: WideAreaRegistrar.Write, key: TSIGKey) async -> WideAreaRegistrar.Failure? {
        let domain = configuration.domain
        // Before the write: a crash while it is under way leaves names that may be in the zone.
        let names = write.withdraw + (write.put.map { [$0.instanceName] } ?? [])
        if let file = configuration.leftoverFile, names != leftoverNames {
            leftoverNames = names
            await UnicastDNS.thread.run { Self.writeLeftover(names, to: file) }
        }
        guard let server = await findUpdateServer() else {
            return .unanswered("registering in \(domain) failed: no server found for it (set `server` in [wide_area])")
        }
        let changes = WideAreaRegistrar.changes(write, domain: domain, ttl: configuration.ttl)
        switch await UnicastDNS.update(zone: domain, changes, at: server, key: key, timeout: configuration.timeout) {
        case .done:
            if write.put == nil, let file = configuration.leftoverFile {
                leftoverNames = []
                await UnicastDNS.thread.run { Self.writeLeftover([], to: file) }
            }
            return nil
        case .refused(let why):
            if configuration.server == nil { updateServer = nil }  // found again next time
            return .refused("registering in \(domain) failed: \(why)")
        case .failed(let why):
            if configuration.server == nil { updateServer = nil }
            return .unanswered("registering in \(domain) failed: \(why)")
        }
    }

    /// The server named for updates (RFC 6763 §11), asked of the system's resolvers.
    private func findUpdateServer() async -> DNSServer? {
        if let updateServer { return updateServer }
        let domain = configuration.domain
        var target: (host: String, port: Int)?
        if case .success(let records) = await UnicastDNS.query("_dns-update._udp.\(domain)", .srv, at: .system, timeout: configuration.timeout),
            let srv = records.first, srv.fields.count == 4, let port = UnicastDNS.number(srv.fields[2]), let host = UnicastDNS.hostName(srv.fields[3])
        {
            target = (host, port)
        } else if case .success(let records) = await UnicastDNS.query(domain, .soa, at: .system, timeout: configuration.timeout),
            let soa = records.first, let primary = soa.fields.first.flatMap(UnicastDNS.hostName)
        {
            target = (primary, 53)
        }
        guard let target else { return nil }
        for type in [UnicastDNS.RecordType.a, .aaaa] {
            if case .success(let records) = await UnicastDNS.query(target.host, type, at: .system, timeout: configuration.timeout),
                let address = records.first?.fields.first.flatMap(UnicastDNS.address)
            {
                updateServer = DNSServer(address: address, port: UInt16(clamping: target.port))
                return updateServer
            }
        }
        return nil
    }

    // MARK: Browsing

    /// The zone's own server: a caching resolver would answer from its cache for the records' TTL,
    /// and a join would not see its inviter's new TXT in time.
    private func queryServer() async -> DNSServer {
        if let server = configuration.server { return server }
        return await findUpdateServer() ?? .system
    }
    private var service: String { "\(DNSSDDiscovery.serviceType).\(configuration.domain)" }

    private func browseIfDue() async {
        let now = ContinuousClock.now
        guard now >= nextBrowse, withdrawing == 0 else { return }
        let queryServer = await queryServer()
        let looking = lookingUntil.map { now < $0 } ?? false
        nextBrowse = now + (looking ? configuration.lookingInterval : configuration.browseInterval)
        switch await UnicastDNS.query(service, .ptr, at: queryServer, timeout: configuration.timeout) {
        case .failure(let failure):
            browseFailures += 1
            // Only the server updates go to says whether a withdrawal would be heard.
            if queryServer == updateServer { serverSilent = !failure.answered }
            browseProblem = "browsing \(configuration.domain) failed: \(failure.description)"
            // Back off while the server is away: 1 s, 2 s … up to the idle interval.
            let delay = min(.seconds(1) * (1 << min(browseFailures - 1, 10)), configuration.browseInterval)
            if !looking { nextBrowse = now + delay }
            report()
        case .success(let records):
            browseFailures = 0
            if queryServer == updateServer { serverSilent = false }
            browseProblem = nil
            browses += 1
            // The zone's server answers again: a registration waiting for its back-off goes now.
            if let key = configuration.key, queryServer == updateServer {
                await write(registrar.serverAnswered(now: now), key: key)
            }
            listing(records.compactMap { $0.fields.first.flatMap(instance(named:)) })
            report()
            // Followed instances are looked at again: a TXT or an address may have changed.
            for instance in budget.followed where !resolveQueue.contains(instance) { resolveQueue.append(instance) }
        }
    }

    private func instance(named wire: [UInt8]) -> ServiceInstance? {
        Self.instance(named: wire, domain: configuration.domain)
    }

    /// `N._handoff._tcp.DOMAIN` in wire form → the instance N; nil for names elsewhere.
    package static func instance(named wire: [UInt8], domain: String) -> ServiceInstance? {
        guard let labels = UnicastDNS.labels(wire), labels.count >= 3, !labels[0].isEmpty else { return nil }
        let rest = labels.dropFirst().map { String(decoding: $0, as: UTF8.self).lowercased() + "." }.joined()
        guard rest == "\(DNSSDDiscovery.serviceType).\(domain)".lowercased() else { return nil }
        return ServiceInstance(name: String(decoding: labels[0], as: UTF8.self), domain: domain)
    }

    private func listing(_ instances: [ServiceInstance]) {
        let now = ContinuousClock.now
        let mine = Set([desired?.name].compactMap { $0 } + registrar.stale)
        let current = Set(instances.filter { !mine.contains($0.name) })
        for instance in listed.subtracting(current) {
            listed.remove(instance)
            found[instance] = nil
            resolveQueue.removeAll { $0 == instance }
            queue(budget.disappeared(instance, interest: interest, now: now))
            continuation?.yield(.gone(instance))
        }
        for instance in current.subtracting(listed) {
            let actions = budget.appeared(instance, now: now)
            guard budget.tracks(instance) else { continue }  // beyond maximumKnown: counted only
            listed.insert(instance)
            queue(actions)
        }
    }

    /// Carries out what the budget decided: resolves are queued, follows reported.
    private func queue(_ actions: [DiscoveryBudget.Action]) {
        for action in actions {
            switch action {
            case .resolve(let instance):
                if !resolveQueue.contains(instance) { resolveQueue.append(instance) }
            case .cancelResolve(let instance):
                resolveQueue.removeAll { $0 == instance }
            case .follow(let instance):
                if let sighting = found[instance] { continuation?.yield(.seen(sighting)) }
            case .unfollow(let instance):
                continuation?.yield(.stranger(instance))
            case .endAddressQueries:
                break  // addresses are asked again at every browse
            }
        }
    }

    /// Resolves a few queued instances: the loop writes our registration between rounds, so that
    /// a zone full of strangers holds up no refresh or TXT change for longer than a round.
    private func resolveQueued() async {
        var round = 0
        while !resolveQueue.isEmpty, !stopped, withdrawing == 0, round < Self.resolvesPerRound {
            round += 1
            let instance = resolveQueue.removeFirst()
            guard listed.contains(instance) else { continue }
            let followed = budget.followed.contains(instance)
            let known = followed && browses % Self.addressesEvery != 0 ? found[instance] : nil
            let result = await resolve(instance, whole: followed, known: known)
            guard listed.contains(instance) else { continue }  // gone while we asked
            let now = ContinuousClock.now
            switch result {
            case .failed:
                queue(followed ? budget.followFailed(instance, now: now) : budget.resolveFailed(instance, now: now))
            case .stranger(let txt):
                queue(budget.resolved(instance, txt: txt, interesting: false, now: now))
                continuation?.yield(.stranger(instance))
            case .found(let sighting) where followed:
                let before = found[instance]
                found[instance] = sighting
                queue(budget.txtChanged(instance, txt: sighting.txt, interest: interest, now: now))
                if budget.followed.contains(instance), before != sighting { continuation?.yield(.seen(sighting)) }
            case .found(let sighting):
                found[instance] = sighting
                queue(budget.resolved(instance, txt: sighting.txt, interesting: true, now: now))
                if !budget.followed.contains(instance) {
                    // Ours beyond the cap, or a copy of a record of ours: the budget remembers its
                    // TXT; what else it said is not kept.
                    found[instance] = nil
                    continuation?.yield(.stranger(instance))
                }
            }
        }
    }

    private enum Resolution {
        /// The TXT is not one we are interested in: nothing more was asked.
        case stranger(TXTRecord)
        case found(Sighting)
        case failed
    }

    /// The instance's TXT, then — if it interests us, or `whole` — its SRV and addresses: a
    /// stranger costs one query each time it is looked at (a join looks every second). A TXT
    /// the same as `known`'s is taken to mean the rest is too.
    private func resolve(_ instance: ServiceInstance, whole: Bool, known: Sighting? = nil) async -> Resolution {
        let name = "\(UnicastDNS.label(instance.name)).\(service)"
        let timeout = configuration.timeout
        let queryServer = await queryServer()
        guard case .success(let txts) = await UnicastDNS.query(name, .txt, at: queryServer, timeout: timeout), let rdata = txts.first,
            rdata.fields.reduce(0, { $0 + $1.count }) <= Self.maximumTXTBytes
        else { return .failed }
        let txt = TXTRecord(rdata: rdata.fields.flatMap { $0 })
        if let known, known.txt == txt { return .found(known) }
        guard whole || interest(instance, txt) else { return .stranger(txt) }
        guard case .success(let srvs) = await UnicastDNS.query(name, .srv, at: queryServer, timeout: timeout),
            let srv = srvs.first, srv.fields.count == 4, let port = UnicastDNS.number(srv.fields[2]), let host = UnicastDNS.hostName(srv.fields[3])
        else { return .failed }
        var addresses: [String] = []
        for type in [UnicastDNS.RecordType.a, .aaaa] {
            guard case .success(let records) = await UnicastDNS.query(host, type, at: queryServer, timeout: timeout) else { continue }
            addresses += records.compactMap { $0.fields.first.flatMap(UnicastDNS.address) }
        }
        guard !addresses.isEmpty else { return .failed }
        // A device registers 8 at most: more are not its.
        return .found(Sighting(instance: instance, txt: txt, host: host, port: port, addresses: Array(addresses.prefix(Self.maximumAddresses)), source: .wideArea))
    }

    static let maximumAddresses = 8
    static let resolvesPerRound = 8
    /// Well above the largest sealed advert (1300 bytes): a stranger's larger record is not kept.
    static let maximumTXTBytes = 2048

    // MARK: Saying how it goes

    private func report() {
        let state = WideAreaState(
            domain: configuration.domain, registering: configuration.key != nil, registered: registrar.written != nil && registrar.problem == nil,
            problem: configuration.keyProblem ?? registrar.problem ?? browseProblem
        )
        guard state != lastState else { return }
        lastState = state
        continuation?.yield(.wideArea(state))
    }

    // MARK: What a crash leaves behind

    private static func readLeftover(_ path: String) -> [String] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8), text.utf8.count < 4096 else { return [] }
        return text.split(separator: "\n").map(String.init).filter { !$0.isEmpty && $0.utf8.count <= 63 }
    }

    private static func writeLeftover(_ names: [String], to path: String) {
        if names.isEmpty {
            unlink(path)
            return
        }
        try? (names.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    }
}
