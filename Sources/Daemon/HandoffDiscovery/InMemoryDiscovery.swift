import HandoffModel

/// Instance names: random, so that nothing in our records names the host, and new at every
/// rotation, so that nothing stays the same across one.
public enum InstanceNames {
    static let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567")

    public static func random() -> String {
        String((0..<16).map { _ in alphabet[Int.random(in: 0..<alphabet.count)] })
    }
}

/// A "network" inside one process: every `InMemoryDiscovery` joined to it sees the others'
/// adverts at once, as if on one link. Lets tests run several daemons in-process with discovery.
public actor DiscoveryNetwork {
    struct Member {
        var continuation: AsyncStream<DiscoveryEvent>.Continuation
        var advert: Sighting?
        var interest: @Sendable (ServiceInstance, TXTRecord) -> Bool = { _, _ in false }

        /// What the real backend reports of `advert` given this member's interest.
        func tell(_ advert: Sighting) {
            continuation.yield(interest(advert.instance, advert.txt) ? .seen(advert) : .stranger(advert.instance))
        }
    }

    private var members: [ObjectIdentifier: Member] = [:]

    public init() {}

    func join(_ id: ObjectIdentifier, continuation: AsyncStream<DiscoveryEvent>.Continuation) {
        members[id] = Member(continuation: continuation, advert: nil)
        continuation.yield(.state(.running))
        for (other, member) in members where other != id {
            if let advert = member.advert { members[id]?.tell(advert) }
        }
    }

    func setInterest(_ id: ObjectIdentifier, _ interest: @escaping @Sendable (ServiceInstance, TXTRecord) -> Bool) {
        members[id]?.interest = interest
        guard let member = members[id] else { return }
        for (other, m) in members where other != id {
            if let advert = m.advert { member.tell(advert) }
        }
    }

    func leave(_ id: ObjectIdentifier) {
        set(id, advert: nil)
        members[id]?.continuation.finish()
        members[id] = nil
    }

    func set(_ id: ObjectIdentifier, advert: Sighting?) {
        guard var member = members[id] else { return }
        let previous = member.advert
        member.advert = advert
        members[id] = member
        if let advert { member.continuation.yield(.published(instanceName: advert.instance.name)) }
        for (other, m) in members where other != id {
            if let previous, previous.instance != advert?.instance { m.continuation.yield(.gone(previous.instance)) }
            if let advert { m.tell(advert) }
        }
    }
}

/// The in-process backend: adverts reach the other members of its `DiscoveryNetwork` at once
/// (no 1 s TXT limit here; that is Avahi's). Addresses are loopback.
public final class InMemoryDiscovery: DiscoveryBackend {
    private let network: DiscoveryNetwork

    public init(network: DiscoveryNetwork) {
        self.network = network
    }

    public func start(browseDomains: [String]) async -> AsyncStream<DiscoveryEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: DiscoveryEvent.self)
        await network.join(ObjectIdentifier(self), continuation: continuation)
        return stream
    }

    public func setInterest(_ interest: @escaping @Sendable (ServiceInstance, TXTRecord) -> Bool) async {
        await network.setInterest(ObjectIdentifier(self), interest)
    }

    public func publish(instanceName: String, port: Int, txt: TXTRecord) async {
        let sighting = Sighting(
            instance: ServiceInstance(name: instanceName, domain: "local."), txt: txt, host: "localhost.", port: port,
            addresses: ["127.0.0.1"], source: .mdns
        )
        await network.set(ObjectIdentifier(self), advert: sighting)
    }

    public func withdraw() async {
        await network.set(ObjectIdentifier(self), advert: nil)
    }

    public func stop() async {
        await network.leave(ObjectIdentifier(self))
    }

    /// The network reports every advert as it changes: nothing to look for.
    public func lookFor(instanceName: String) async {}
}
