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
    case seen(Sighting)
    case gone(ServiceInstance)
}

/// DNS-SD as the daemon needs it: advertise one service, browse for others, follow their TXT.
/// `DNSSDDiscovery` is the real thing (Avahi); `InMemoryDiscovery` connects daemons in one process.
public protocol DiscoveryBackend: Sendable {
    /// Starts browsing `local.` and `browseDomains`; events arrive until `stop()`.
    func start(browseDomains: [String]) async -> AsyncStream<DiscoveryEvent>
    /// Advertises our service as `instanceName` with `txt`. Same name: the TXT is updated (as fast
    /// as the backend safely can); a new name: the old registration is withdrawn first.
    func publish(instanceName: String, port: Int, txt: TXTRecord) async
    /// Stops advertising (browsing goes on).
    func withdraw() async
    func stop() async
}
