import HandoffModel

/// One advertised service instance, as browsing names it.
public struct ServiceInstance: Hashable, Sendable, CustomStringConvertible {
    public var name: String
    public var domain: String

    public init(name: String, domain: String) {
        self.name = name
        self.domain = domain
    }

    public var description: String { "\(name).\(domain)" }
}

/// How a device was found.
public enum DiscoverySource: String, Codable, Sendable, CaseIterable {
    case mdns
    case wideArea = "wide-area"
    case staticPeer = "static"
}

/// A service instance with what we know of it now. Reported again whenever its TXT changes.
public struct Sighting: Sendable, Equatable {
    public var instance: ServiceInstance
    public var txt: TXTRecord
    public var host: String
    public var port: Int
    /// IPv4/IPv6 addresses of `host`, when resolved.
    public var addresses: [String]
    public var source: DiscoverySource

    public init(instance: ServiceInstance, txt: TXTRecord, host: String, port: Int, addresses: [String], source: DiscoverySource) {
        self.instance = instance
        self.txt = txt
        self.host = host
        self.port = port
        self.addresses = addresses
        self.source = source
    }
}

public enum DiscoveryState: Sendable, Equatable {
    case starting
    /// Advertising and browsing.
    case running
    /// The mDNS daemon is not there; we retry at `retryAt`.
    case unavailable(reason: String, retryAt: Timestamp)
}

public enum DiscoveryEvent: Sendable, Equatable {
    case state(DiscoveryState)
    /// Our registration took effect under this name (the mDNS daemon may rename on conflict).
    case published(instanceName: String)
    /// An instance we are interested in (`setInterest`), reported again whenever its TXT changes.
    case seen(Sighting)
    /// A handoff service we are not interested in: counted, not followed (until it goes, or our
    /// interest changes).
    case stranger(ServiceInstance)
    case gone(ServiceInstance)
    /// How registering in and browsing a unicast zone goes (`WideAreaDiscovery`).
    case wideArea(WideAreaState)
}

/// Registering in a unicast zone and browsing it, as `status` and `doctor` tell it.
public struct WideAreaState: Sendable, Equatable {
    public var domain: String
    /// Whether we register there (a TSIG key is configured), and whether our records are there now.
    public var registering: Bool
    public var registered: Bool
    /// What failed last (registering, then browsing), as a user should read it; nil when all is well.
    public var problem: String?

    public init(domain: String, registering: Bool, registered: Bool, problem: String?) {
        self.domain = domain
        self.registering = registering
        self.registered = registered
        self.problem = problem
    }
}

/// DNS-SD as the daemon needs it: advertise one service, browse for others, follow their TXT.
/// `DNSSDDiscovery` is the real thing (Avahi); `InMemoryDiscovery` connects daemons in one process.
public protocol DiscoveryBackend: Sendable {
    /// Starts browsing `local.` and `browseDomains`; events arrive until `stop()`.
    func start(browseDomains: [String]) async -> AsyncStream<DiscoveryEvent>
    /// Which TXT records are worth following (ours, or a wanted join tag's): only those are
    /// reported as `.seen` and cost long-lived queries; the others are `.stranger`. Nothing is
    /// followed until this is called; instances seen before are looked at again with it.
    func setInterest(_ interest: @escaping @Sendable (ServiceInstance, TXTRecord) -> Bool) async
    /// Advertises our service as `instanceName` with `txt`. Same name: the TXT is updated (as fast
    /// as the backend safely can); a new name: the old registration is withdrawn first.
    func publish(instanceName: String, port: Int, txt: TXTRecord) async
    /// Stops advertising (browsing goes on).
    func withdraw() async
    func stop() async
    /// A member said over its session that it advertises as `instanceName` (`advertName`), and
    /// no advert of that name has been seen here: look for it now, rather than at the next
    /// browse. (Avahi finds a new name on the link by itself within a second.)
    func lookFor(instanceName: String) async
}
