import Dispatch
import HandoffModel
import HandoffSystem

#if canImport(Glibc)
import Glibc
#endif

/// DNS-SD through Avahi's dns_sd compat layer, shaped by what it really does (docs/platform.md):
///
/// - browse → resolve once → `DNSServiceQueryRecord` on the TXT for changes (a long-running
///   resolve delivers TXT changes late, skips some, and reorders them);
/// - browse results arrive once per interface and protocol: counted, not repeated;
/// - resolve gives no address: getaddrinfo (nss-mdns, IPv4 only as Debian sets it up) with an
///   A-record query as fallback, and an AAAA-record query always (IPv6, link-local addresses
///   with the interface they were seen on: `fe80::1%eth0`), so that an IPv6-only link works;
/// - our TXT changes go through `TXTThrottle` (≥ 1 s apart, after the register callback);
/// - when avahi goes away every ref dies silently: on -65537 everything is released, we say so,
///   retry with backoff, and register and browse again when it is back;
/// - every ref is an avahi client of its own, so what strangers' adverts may cost is bounded by
///   `DiscoveryBudget`: only instances whose TXT we are interested in (`setInterest`) are followed.
public actor DNSSDDiscovery: DiscoveryBackend {
    public static let serviceType = "_handoff._tcp"
    static let maximumRetryDelay: Duration = .seconds(30)

    private struct Known {
        var interfaces: [UInt32: Int] = [:]
        var source: DiscoverySource
        var resolveID: Int?
        /// Where browsing first saw it (the resolve asks there), and where the resolve answered.
        var firstInterface: UInt32?
        var resolvedInterface: UInt32 = 0
        var fullname: String?
        /// A look again (a TXT query) under way: the last record it reported, and whether its
        /// window is running.
        var recheckTXT: TXTRecord?
        var recheckWaiting = false
        /// The records a followed instance's TXT query reports present (a few).
        var present: [TXTRecord] = []
        var txtQueryID: Int?
        /// The AAAA query, and the A query once getaddrinfo found nothing.
        var addressQueryIDs: [Int] = []
        var host: String?
        var port: Int?
        var txt: TXTRecord?
        /// What getaddrinfo said, and what the address queries say: together, the addresses.
        var lookedUp: [String] = []
        var queried: [String] = []
        var addresses: [String] { lookedUp + queried.filter { !lookedUp.contains($0) } }
        /// The long-lived refs of a followed instance.
        var followingIDs: [Int] { (txtQueryID.map { [$0] } ?? []) + addressQueryIDs }
    }

    private struct Registration {
        var id: Int
        var name: String
        var registeredName: String?
        var port: Int
        var throttle: TXTThrottle
    }

    private var engine: DNSSDEngine?
    private var continuation: AsyncStream<DiscoveryEvent>.Continuation?
    private var browseDomains: [String] = []
    private var nextID = 1
    private var browseIDs: Set<Int> = []
    private var known: [ServiceInstance: Known] = [:]
    private var owners: [Int: ServiceInstance] = [:]
    private var registration: Registration?
    private var desired: (name: String, port: Int, txt: TXTRecord)?
    private var budget: DiscoveryBudget
    private var interest: @Sendable (ServiceInstance, TXTRecord) -> Bool = { _, _ in false }
    private var ticker: Task<Void, Never>?
    private var tickerDeadline: ContinuousClock.Instant?
    private var state = DiscoveryState.starting
    private var retryDelay: Duration = .seconds(1)
    private var pump: Task<Void, Never>?
    private var retry: Task<Void, Never>?
    private var wake: Task<Void, Never>?
    /// Short waits and lookups for one instance each (a look again's window, a host name's
    /// addresses), kept so that `stop` and avahi going away end them; each takes itself out.
    private var errands: [Int: Task<Void, Never>] = [:]
    private var nextErrand = 0

    public init() {
        budget = DiscoveryBudget()
    }

    init(limits: DiscoveryBudget.Limits) {
        budget = DiscoveryBudget(limits: limits)
    }

    public func setInterest(_ interest: @escaping @Sendable (ServiceInstance, TXTRecord) -> Bool) {
        self.interest = interest
        apply(budget.interestChanged(interest, now: .now))
    }

    /// What following costs now, for tests and `status`.
    public var followedCount: Int { budget.followed.count }

    public func start(browseDomains: [String]) -> AsyncStream<DiscoveryEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: DiscoveryEvent.self)
        self.continuation = continuation
        self.browseDomains = ["local."] + browseDomains.filter { $0 != "local." && $0 != "local" }
        let engine = DNSSDEngine()
        self.engine = engine
        pump = Task(executorPreference: ProgramExecutor.current) { [weak self] in
            for await event in engine.events { await self?.handle(event) }
        }
        setUp()
        return stream
    }

    public func publish(instanceName: String, port: Int, txt: TXTRecord) {
        desired = (instanceName, port, txt)
        guard engine != nil, isUp else { return }  // registered once avahi is back
        register()
    }

    public func withdraw() {
        desired = nil
        if let registration { engine?.send(.cancel(registration.id)) }
        registration = nil
    }

    /// Avahi browses continuously: a new name on the link is reported within a second anyway.
    public func lookFor(instanceName: String) {}

    public func stop() {
        retry?.cancel()
        wake?.cancel()
        ticker?.cancel()
        endErrands()
        engine?.shutdown()
        engine = nil
        pump?.cancel()
        continuation?.finish()
    }

    private var isUp: Bool {
        if case .unavailable = state { return false }
        return true
    }

    // MARK: Setting up and tearing down

    private func setUp() {
        guard let engine else { return }
        for domain in browseDomains {
            let id = newID()
            browseIDs.insert(id)
            engine.send(.browse(id, type: Self.serviceType, domain: domain))
        }
        if desired != nil { register() }
    }

    private func register() {
        guard let engine, let desired, let rdata = desired.txt.rdata else { return }
        if var current = registration, current.name == desired.name, current.port == desired.port {
            perform(current.throttle.want(rdata, now: .now), registration: &current)
            registration = current
            return
        }
        if let old = registration { engine.send(.cancel(old.id)) }
        let id = newID()
        registration = Registration(id: id, name: desired.name, port: desired.port, throttle: TXTThrottle(initial: rdata))
        engine.send(.register(id, name: desired.name, type: Self.serviceType, port: UInt16(desired.port), txt: rdata))
    }

    /// avahi went away: every ref is dead. Release them all, forget what we saw, and retry.
    private func daemonGone() {
        guard isUp else { return }
        engine?.send(.cancelAll)
        browseIDs = []
        owners = [:]
        registration = nil
        wake?.cancel()
        ticker?.cancel()
        endErrands()
        tickerDeadline = nil
        for instance in known.keys { continuation?.yield(.gone(instance)) }
        known = [:]
        budget = DiscoveryBudget(limits: budget.limits)
        let delay = retryDelay
        retryDelay = min(retryDelay * 2, Self.maximumRetryDelay)
        let retryAt = Timestamp.now().adding(microseconds: Int64(delay.components.seconds) * 1_000_000)
        state = .unavailable(reason: "avahi-daemon is not running", retryAt: retryAt)
        continuation?.yield(.state(state))
        retry = Task(executorPreference: ProgramExecutor.current) { [weak self] in
            try? await QuietSleep.sleep(for: delay)
            guard !Task.isCancelled else { return }
            await self?.tryAgain()
        }
    }

    private func tryAgain() {
        state = .starting
        setUp()
    }

    private func newID() -> Int {
        defer { nextID += 1 }
        return nextID
    }

    // MARK: Events

    private func handle(_ event: DNSSDEngine.Event) {

        switch event {
        case .started(let id):
            if browseIDs.contains(id), state != .running {
                state = .running
                retryDelay = .seconds(1)
                continuation?.yield(.state(.running))
            }
        case .failed(let id, let code):
            if code == DNSSDEngine.daemonGone {
                daemonGone()
            } else if let instance = owners[id] {
                // A resolve or query of one instance failed: its ref is released, and the
                // instance is tried again later (DiscoveryBudget's retry).
                release([id])
                if known[instance]?.resolveID == id {
                    known[instance]?.resolveID = nil
                    apply(budget.resolveFailed(instance, now: .now))
                } else if known[instance]?.txtQueryID == id {
                    known[instance]?.txtQueryID = nil
                    apply(budget.followFailed(instance, now: .now))
                } else {
                    known[instance]?.addressQueryIDs.removeAll { $0 == id }
                }
            } else if let registration, registration.id == id, code == -65548 {
                // Name conflict on this host: take another random name (reported by .published).
                desired?.name = InstanceNames.random()
                self.registration = nil
                register()
            }
        case .registered(let id, let name):
            guard var current = registration, current.id == id else { return }
            perform(current.throttle.didRegister(now: .now), registration: &current)
            current.registeredName = name
            registration = current
            continuation?.yield(.published(instanceName: name))
        case .browsed(_, let added, let name, _, let domain, let interface):
            browsed(ServiceInstance(name: name, domain: domain), added: added, interface: interface)
        case .resolved(let id, let fullname, let host, let port, let txt, let interface):
            resolved(id: id, fullname: fullname, host: host, port: Int(port), txt: TXTRecord(rdata: txt), interface: interface)
        case .record(let id, let added, let rdata, let interface):
            record(id: id, added: added, rdata: rdata, interface: interface)
        }
    }

    private func browsed(_ instance: ServiceInstance, added: Bool, interface: UInt32) {
        // Ourselves, under the name we asked for or the one avahi gave us.
        if let registration, instance.name == registration.name || instance.name == registration.registeredName { return }
        if added {
            let actions = budget.appeared(instance, now: .now)
            guard budget.tracks(instance) else { return }  // beyond maximumKnown: counted only
            if known[instance] == nil { known[instance] = Known(source: instance.domain == "local." ? .mdns : .wideArea) }
            known[instance]!.interfaces[interface, default: 0] += 1
            if known[instance]!.firstInterface == nil { known[instance]!.firstInterface = interface }
            apply(actions)
            return
        }
        guard var entry = known[instance] else { return }
        let left = (entry.interfaces[interface] ?? 1) - 1
        entry.interfaces[interface] = left > 0 ? left : nil
        guard entry.interfaces.isEmpty else {
            known[instance] = entry
            return
        }
        release(entry.resolveID.map { [$0] } ?? [])
        release(entry.followingIDs)
        known[instance] = nil
        apply(budget.disappeared(instance, interest: interest, now: .now))
        continuation?.yield(.gone(instance))
    }

    /// Carries out what the budget decided.
    private func apply(_ actions: [DiscoveryBudget.Action]) {

        guard let engine else { return }
        for action in actions {
            switch action {
            case .resolve(let instance):
                guard var entry = known[instance] else { continue }
                let id = newID()
                owners[id] = instance
                entry.resolveID = id
                entry.recheckTXT = nil
                entry.recheckWaiting = false
                known[instance] = entry
                if let fullname = entry.fullname {
                    // Resolved before: its record now, from one TXT query (a second resolve of
                    // the same instance can take seconds to answer).
                    engine.send(.query(id, fullname: fullname, recordType: 16, interface: entry.resolvedInterface))
                } else {
                    engine.send(
                        .resolve(id, name: instance.name, type: Self.serviceType, domain: instance.domain, interface: entry.firstInterface ?? 0)
                    )
                }
            case .cancelResolve(let instance):
                if let id = known[instance]?.resolveID {
                    release([id])
                    known[instance]?.resolveID = nil
                }
            case .follow(let instance):
                follow(instance)
            case .unfollow(let instance):
                guard var entry = known[instance] else { continue }
                release(entry.followingIDs)
                entry.txtQueryID = nil
                entry.addressQueryIDs = []
                known[instance] = entry
                continuation?.yield(.stranger(instance))
            case .endAddressQueries(let instance):
                guard var entry = known[instance] else { continue }
                release(entry.addressQueryIDs)
                entry.addressQueryIDs = []
                known[instance] = entry
            }
        }
        scheduleTick()
    }

    private func release(_ ids: [Int]) {
        for id in ids {
            engine?.send(.cancel(id))
            owners[id] = nil
        }
    }

    /// Wakes for the budget's next deadline (resolve timeouts, address queries' end).
    private func scheduleTick() {
        guard let deadline = budget.nextDeadline else {
            ticker?.cancel()
            ticker = nil
            tickerDeadline = nil
            return
        }
        if let tickerDeadline, tickerDeadline <= deadline, ticker != nil { return }
        ticker?.cancel()
        tickerDeadline = deadline
        ticker = Task(executorPreference: ProgramExecutor.current) { [weak self] in
            try? await QuietSleep.sleep(until: deadline)
            guard !Task.isCancelled else { return }
            await self?.tick()
        }
    }

    private func tick() {
        ticker = nil
        tickerDeadline = nil
        apply(budget.tick(now: .now))
    }

    private func resolved(id: Int, fullname: String, host: String, port: Int, txt: TXTRecord, interface: UInt32) {
        guard let instance = owners.removeValue(forKey: id), var entry = known[instance], entry.resolveID == id else { return }
        entry.resolveID = nil
        entry.fullname = fullname
        entry.host = host
        entry.port = port
        entry.txt = txt
        entry.resolvedInterface = interface
        known[instance] = entry
        settle(instance, txt: txt)
    }

    static let recheckWindow: Duration = .milliseconds(300)

    private func finishRecheck(_ instance: ServiceInstance, id: Int) {
        guard var entry = known[instance], entry.resolveID == id, let txt = entry.recheckTXT else { return }
        release([id])
        entry.resolveID = nil
        entry.recheckTXT = nil
        entry.recheckWaiting = false
        known[instance] = entry
        settle(instance, txt: txt)
    }

    /// What a resolve (or a look again) found decides whether the instance is followed.
    private func settle(_ instance: ServiceInstance, txt: TXTRecord) {
        known[instance]?.txt = txt

        apply(budget.resolved(instance, txt: txt, interesting: interest(instance, txt), now: .now))
        if !budget.followed.contains(instance) { continuation?.yield(.stranger(instance)) }
    }

    /// Follows an instance we are interested in: its TXT for as long as it is there, its addresses
    /// for a while (IPv6 from avahi itself: nss-mdns as Debian configures it answers IPv4 only).
    private func follow(_ instance: ServiceInstance) {
        guard let engine, var entry = known[instance], let fullname = entry.fullname, let host = entry.host else { return }
        release(entry.followingIDs)
        let interface = entry.resolvedInterface
        let query = newID()
        owners[query] = instance
        entry.txtQueryID = query
        entry.present = []
        let aaaa = newID()
        owners[aaaa] = instance
        entry.addressQueryIDs = [aaaa]
        known[instance] = entry
        engine.send(.query(query, fullname: fullname, recordType: 16, interface: interface))
        engine.send(.query(aaaa, fullname: host, recordType: 28, interface: interface))
        report(instance)
        lookUpAddresses(instance, host: host, interface: interface)
    }

    private func record(id: Int, added: Bool, rdata: [UInt8], interface: UInt32) {
        guard let instance = owners[id], var entry = known[instance] else { return }
        if id == entry.resolveID, added {
            // A look again at an instance resolved before. A new query reports Avahi's cached
            // previous record too, in either order: one that interests us settles it at once;
            // otherwise the last of what arrives within `recheckWindow` does.
            let txt = TXTRecord(rdata: rdata)
            entry.recheckTXT = txt
            known[instance] = entry
            if interest(instance, txt) {
                finishRecheck(instance, id: id)
            } else if !entry.recheckWaiting {
                known[instance]?.recheckWaiting = true
                errand { [weak self] in
                    guard (try? await QuietSleep.sleep(for: Self.recheckWindow)) != nil else { return }
                    await self?.finishRecheck(instance, id: id)
                }
            }
        } else if id == entry.txtQueryID {
            // Old values arrive later as removes (docs/platform.md), and a query that starts while Avahi
            // caches the previous record reports both as adds, in either order: the record
            // reported is the last added, and the instance stays followed while any record
            // present is one we follow.
            let txt = TXTRecord(rdata: rdata)
            guard added else {
                entry.present.removeAll { $0 == txt }
                known[instance] = entry
                return
            }
            if !entry.present.contains(txt) { entry.present.append(txt) }
            if entry.present.count > 4 { entry.present.removeFirst() }
            guard txt != entry.txt else {
                known[instance] = entry
                return
            }
            entry.txt = txt
            known[instance] = entry
            let stillOurs = entry.present.contains { interest(instance, $0) }
            let actions = budget.txtChanged(instance, txt: txt, interest: stillOurs ? { _, _ in true } : interest, now: .now)
            if actions.isEmpty { report(instance) } else { apply(actions) }
        } else if entry.addressQueryIDs.contains(id), let address = AddressText.of(rdata, interface: interface) {
            if added {
                guard !entry.queried.contains(address) else { return }
                entry.queried.append(address)
            } else {
                guard let index = entry.queried.firstIndex(of: address) else { return }
                entry.queried.remove(at: index)
            }
            known[instance] = entry
            report(instance)
        }
    }

    private func report(_ instance: ServiceInstance) {
        guard budget.followed.contains(instance), let entry = known[instance], let host = entry.host, let port = entry.port, let txt = entry.txt else { return }
        continuation?.yield(
            .seen(Sighting(instance: instance, txt: txt, host: host, port: port, addresses: entry.addresses, source: entry.source))
        )
    }

    /// getaddrinfo through nss-mdns (~1 ms right after a resolve), off the actor: it blocks, for
    /// up to 5 s when the name is missing. Without an answer, ask avahi for the A record.
    private func lookUpAddresses(_ instance: ServiceInstance, host: String, interface: UInt32) {
        errand { [weak self] in
            let addresses = await HostLookup.addresses(of: host)
            guard !Task.isCancelled else { return }
            await self?.addressesFound(instance, host: host, addresses: addresses, interface: interface)
        }
    }

    /// Runs `body` as a task this actor keeps until it ends (or `endErrands` cancels it).
    private func errand(_ body: @escaping @Sendable () async -> Void) {
        let key = nextErrand
        nextErrand += 1
        errands[key] = Task(executorPreference: ProgramExecutor.current) { [weak self] in
            await body()
            await self?.errandEnded(key)
        }
    }

    private func errandEnded(_ key: Int) { errands[key] = nil }

    private func endErrands() {
        for task in errands.values { task.cancel() }
        errands = [:]
    }

    private func addressesFound(_ instance: ServiceInstance, host: String, addresses: [String], interface: UInt32) {
        guard let engine, var entry = known[instance], entry.host == host, budget.followed.contains(instance) else { return }
        if addresses.isEmpty {
            guard !entry.addressQueryIDs.isEmpty else { return }  // their lifetime is over
            let id = newID()
            owners[id] = instance
            entry.addressQueryIDs.append(id)
            known[instance] = entry
            engine.send(.query(id, fullname: host, recordType: 1, interface: interface))
            return
        }
        entry.lookedUp = addresses
        known[instance] = entry
        report(instance)
    }

    // MARK: Throttled TXT updates

    private func perform(_ actions: [TXTThrottle.Action], registration current: inout Registration) {
        for action in actions {
            switch action {
            case .send(let rdata):
                engine?.send(.updateTXT(current.id, txt: rdata))
            case .wake(let instant):
                wake?.cancel()
                wake = Task(executorPreference: ProgramExecutor.current) { [weak self] in
                    try? await QuietSleep.sleep(until: instant)
                    guard !Task.isCancelled else { return }
                    await self?.throttleWoke()
                }
            }
        }
    }

    private func throttleWoke() {
        guard var current = registration else { return }
        perform(current.throttle.wake(now: .now), registration: &current)
        registration = current
    }
}

/// Blocking name lookups, kept off the cooperative pool — on a thread of their own, not
/// libdispatch's global queue, whose first use starts a once-a-second monitor that wakes the
/// daemon for good (docs/platform.md, "Waiting without waking").
enum HostLookup {
    static func addresses(of host: String) async -> [String] {
        await withCheckedContinuation { continuation in
            let started = BlockingThread.detach(name: "handoff-lookup") {
                continuation.resume(returning: lookUp(host))
            }
            // At the thread limit: no lookup; Avahi's own address query answers instead.
            if !started { continuation.resume(returning: []) }
        }
    }

    static func lookUp(_ host: String) -> [String] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &result) == 0, let first = result else { return [] }
        defer { freeaddrinfo(result) }
        var out: [String] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            defer { cursor = entry.pointee.ai_next }
            var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            guard getnameinfo(entry.pointee.ai_addr, entry.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST) == 0
            else { continue }
            let text = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            if !out.contains(text) { out.append(text) }
        }
        return out
    }
}

/// Address records as text a connection can be made to: `192.0.2.1`, `2001:db8::1`, and
/// link-local IPv6 with the interface it was seen on (`fe80::1%eth0`), without which it cannot
/// be reached.
enum AddressText {
    static func of(_ rdata: [UInt8], interface: UInt32) -> String? {
        switch rdata.count {
        case 4:
            return rdata.map(String.init).joined(separator: ".")
        case 16:
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            guard rdata.withUnsafeBytes({ inet_ntop(AF_INET6, $0.baseAddress, &buffer, socklen_t(buffer.count)) }) != nil else { return nil }
            let text = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            guard rdata[0] == 0xFE, rdata[1] & 0xC0 == 0x80 else { return text }
            var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
            guard interface != 0, if_indextoname(interface, &name) != nil else { return nil }
            return text + "%" + name.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        default:
            return nil
        }
    }
}
