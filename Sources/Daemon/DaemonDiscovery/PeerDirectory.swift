#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonCore
import HandoffAPI
import HandoffDiscovery
import HandoffModel
import HandoffPeer
import HandoffTLS

/// Everything we know about the account's other devices, merged from their sealed adverts
/// (DNS-SD), their sessions (the fast path) and the static peers of the configuration. This is
/// what `handoffctl peers` shows, and where `continue` finds a device's addresses.
///
/// A device's activity is the one with the highest sequence number, whichever way it came:
/// adverts can arrive late and out of order (docs/platform.md), notices arrive at once.
package actor PeerDirectory {
    struct Sighted {
        var source: DiscoverySource
        /// The SRV target (`alpha.local.`): resolved afresh at each dial, so a changed address
        /// is followed without anyone restarting.
        var host: String
        var port: Int
        var addresses: [String]
        var at: Timestamp
    }

    struct Entry {
        var id: DeviceID
        var name: String
        var sightings: [ServiceInstance: Sighted] = [:]
        var staticAddresses: Set<String> = []
        var sequence: UInt64 = 0
        var activity: ActivitySummary?
        var sessions = 0
        /// The peer's IP on the open session: where it really is now.
        var sessionAddress: String?
        /// This device's own IP on that session.
        var sessionLocal: String?
        /// When the device last said its advert's name (`advertName`) on this session: taken at
        /// once on a new session, then at most every `advertNameInterval`.
        var advertToldAt: Timestamp?
        var lastSeen: Timestamp?
        var lastAdvert: Timestamp?
        var unreachableSince: Timestamp?
        var clockOffsetSeconds: Double?

        var isKnownSomehow: Bool { !sightings.isEmpty || sessions > 0 || !staticAddresses.isEmpty }

        func info(now: Timestamp) -> PeerInfo {
            var via = Set(sightings.values.map(\.source.rawValue))
            if !staticAddresses.isEmpty { via.insert(DiscoverySource.staticPeer.rawValue) }
            var addresses: [String] = []
            let advertisedPort = sightings.values.first?.port ?? PeerAddress.defaultPeerPort
            if sessions > 0, let live = sessionAddress {
                // Where it is now; cached resolutions may be stale after it moved.
                addresses.append(PeerAddress(host: live, port: advertisedPort).description)
            } else {
                for s in sightings.values {
                    for a in s.addresses {
                        let text = PeerAddress(host: a, port: s.port).description
                        if !addresses.contains(text) { addresses.append(text) }
                    }
                }
            }
            addresses += staticAddresses.sorted().filter { !addresses.contains($0) }
            let current = activity.flatMap { a -> ActivitySummary? in
                if let expiry = a.expirationDate, expiry <= now { return nil }
                return a
            }
            return PeerInfo(
                id: id, name: name, reachable: sessions > 0, foundVia: via.sorted(), addresses: addresses, activity: current,
                lastSeen: lastSeen, lastAdvert: lastAdvert, unreachableSince: sessions > 0 ? nil : unreachableSince,
                clockOffsetSeconds: clockOffsetSeconds
            )
        }
    }

    private var entries: [DeviceID: Entry] = [:]
    private var owners: [ServiceInstance: DeviceID] = [:]
    private var strangerInstances: Set<ServiceInstance> = []
    private let events: EventHub

    /// Where devices were last reached (`DialMemory`).
    private let dialMemory: DialMemory

    /// This device's own advert, as `DiscoveryService` publishes it: told to each device when a
    /// session opens (`advertName`), before the advert itself may have reached it.
    package struct OwnAdvert: Sendable, Equatable {
        package var instanceName: String
        package var port: Int
    }
    package private(set) var ownAdvert: OwnAdvert?
    /// Each new `ownAdvert`, for the sessions already open (`MemberSessionsService` tells them).
    package nonisolated let ownAdverts: AsyncStream<OwnAdvert>
    private let ownAdvertChanges: AsyncStream<OwnAdvert>.Continuation

    /// Settled once the dials at start (`DialMemory`) are done: discovery waits for them, briefly
    /// (`DiscoveryService.headStart`), so that Avahi's clients and D-Bus do not take the two
    /// cores from the one handshake likely to succeed (docs/discovery.md, "First contact").
    package nonisolated let rememberedDialsDone = Once<Void>()

    /// Advert names members said over their sessions that no sighting has: discovery looks for
    /// them at once (`DiscoveryBackend.lookFor`), so that a device restarted under a new name is
    /// shown found by its advert within a second, not at the next browse of a zone.
    package nonisolated let soughtAdverts: AsyncStream<String>
    private let soughtAdvert: AsyncStream<String>.Continuation

    package init(events: EventHub, dialMemory: DialMemory = DialMemory(path: nil)) {
        self.dialMemory = dialMemory
        (ownAdverts, ownAdvertChanges) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
        (soughtAdverts, soughtAdvert) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(8))
        self.events = events
    }

    // MARK: What discovery reports

    /// A sealed advert of one of our devices. Returns whether it is new to us — an instance not
    /// seen before, or seen at other addresses — rather than the same advert with another
    /// activity (`DialPlan` dials a device at once when it is).
    @discardableResult
    func sighted(_ advert: Advert, name: String, sighting: Sighting, now: Timestamp = .now()) -> Bool {
        strangerInstances.remove(sighting.instance)
        var fresh = false
        if let previous = owners[sighting.instance], previous != advert.deviceID {
            update(previous) { $0.sightings[sighting.instance] = nil }
        }
        owners[sighting.instance] = advert.deviceID
        update(advert.deviceID, name: name) { e in
            // An advert is new when its instance appears or its sequence grows; the same one
            // reported again with addresses found later says nothing about the device now.
            if e.sightings[sighting.instance] == nil || advert.sequence > e.sequence {
                e.lastAdvert = now
                e.lastSeen = now
            }
            fresh = Self.isFresh(sighting, after: e.sightings[sighting.instance])
            e.sightings[sighting.instance] = Sighted(
                source: sighting.source, host: sighting.host, port: sighting.port, addresses: sighting.addresses, at: now
            )
            Self.apply(sequence: advert.sequence, activity: advert.activity, to: &e)
        }
        rememberWhereReached(advert.deviceID)
        return fresh
    }

    /// `advert` with port 0 (published before the listener had its port) counts as none.
    package func advertising(_ advert: OwnAdvert?) {
        let advert = advert.flatMap { (1...65535).contains($0.port) ? $0 : nil }
        guard advert != ownAdvert else { return }
        ownAdvert = advert
        if let advert { ownAdvertChanges.yield(advert) }
    }

    /// What a device said of its advert over its session (`advertName`): where, and as what, to
    /// dial it at the next start — news the advert itself brings only after Avahi probed it (~1 s).
    /// The first on a session at once, then at most every `advertNameInterval`: each change
    /// rewrites `dialled`, and a device says it once per session and when its advert's name
    /// changes (daily).
    package func advertised(_ id: DeviceID, instanceName: String, port: Int, now: Timestamp = .now()) {
        guard var e = entries[id], e.sessions > 0 else { return }
        if let told = e.advertToldAt, now.microsecondsSinceEpoch - told.microsecondsSinceEpoch < Self.advertNameInterval { return }
        e.advertToldAt = now
        entries[id] = e
        remember(e, instanceName: instanceName, port: port)
        if !e.sightings.keys.contains(where: { $0.name == instanceName }) { soughtAdvert.yield(instanceName) }
    }

    /// 10 s, in microseconds.
    static let advertNameInterval: Int64 = 10_000_000

    /// Where a device is reached now — its session's address, at the port and under the name of
    /// its newest advert, whichever side dialled — is kept for the next start (`DialMemory`);
    /// a device without an advert (a static peer) is not.
    private func rememberWhereReached(_ id: DeviceID) {
        guard let e = entries[id], let (instance, newest) = e.sightings.max(by: { $0.value.at < $1.value.at }) else { return }
        remember(e, instanceName: instance.name, port: newest.port)
    }

    /// The device of `e`, at its open session's address, as `instanceName` at `port`; nothing
    /// without an open session.
    private func remember(_ e: Entry, instanceName: String, port: Int) {
        guard e.sessions > 0, let host = e.sessionAddress, let via = e.sessionLocal else { return }
        dialMemory.remember(DialMemory.Entry(device: e.id, host: host, port: port, instance: instanceName, via: via))
    }

    /// Whether a sighting tells us something new about where the device is: a new instance, a
    /// new host or port, or an address we did not have. Addresses reported in another order, or
    /// one fewer, are not news (a dial tries them all anyway).
    static func isFresh(_ sighting: Sighting, after before: Sighted?) -> Bool {
        guard let before else { return true }
        return before.host != sighting.host || before.port != sighting.port || !Set(sighting.addresses).isSubset(of: before.addresses)
    }

    /// A handoff service that is not ours: counted, never shown, never contacted.
    func stranger(_ instance: ServiceInstance) {
        if let owner = owners.removeValue(forKey: instance) {
            update(owner) { $0.sightings[instance] = nil }
        }
        strangerInstances.insert(instance)
    }

    func lost(_ instance: ServiceInstance) {
        strangerInstances.remove(instance)
        guard let owner = owners.removeValue(forKey: instance) else { return }
        update(owner) { $0.sightings[instance] = nil }
    }

    // MARK: What sessions report

    package func sessionUp(_ id: DeviceID, name: String, address: String?, local: String? = nil, theirClock: Timestamp? = nil, now: Timestamp = .now()) {
        update(id, name: name) { e in
            e.sessions += 1
            if let theirClock { e.clockOffsetSeconds = Double(theirClock.microsecondsSinceEpoch - now.microsecondsSinceEpoch) / 1_000_000 }
            if let address, address != "unknown" { e.sessionAddress = address }
            e.sessionLocal = local
            // A new session (the device may have restarted under a new name): its word is taken at once.
            e.advertToldAt = nil
            e.lastSeen = now
            e.unreachableSince = nil
        }
        rememberWhereReached(id)
    }

    package func sessionDown(_ id: DeviceID, now: Timestamp = .now()) {
        update(id) { e in
            e.sessions = max(0, e.sessions - 1)
            if e.sessions == 0 { e.unreachableSince = now }
        }
    }

    package func notice(_ id: DeviceID, _ notice: ActivityNotice, now: Timestamp = .now()) {
        update(id) { e in
            e.lastSeen = now
            Self.apply(sequence: notice.sequence, activity: notice.activity, to: &e)
        }
    }

    /// The target of the activity `id` announced with `sequence` (`activityTarget`), if that is
    /// still the one it has.
    package func target(_ id: DeviceID, sequence: UInt64, _ target: String?) {
        guard let entry = entries[id], entry.sequence == sequence, entry.activity != nil else { return }
        entries[id]?.activity?.targetContentIdentifier = target
        entries[id]?.activity?.targetKnown = true
    }

    package func staticPeer(_ id: DeviceID, name: String, address: String) {
        update(id, name: name) { $0.staticAddresses.insert(address) }
    }

    /// The names a (newer) account state gives the devices.
    package func rename(from state: AccountState) {
        for device in state.devices where entries[device.id] != nil && entries[device.id]?.name != device.name {
            update(device.id, name: device.name) { _ in }
        }
    }

    /// A device was removed from the account: it disappears.
    package func forget(_ id: DeviceID) {
        dialMemory.forget(id)
        guard entries.removeValue(forKey: id) != nil else { return }
        owners = owners.filter { $0.value != id }
        events.publish(LocalEvent(at: .now(), .peerGone(id)))
    }

    private static func apply(sequence: UInt64, activity: ActivitySummary?, to e: inout Entry) {
        guard sequence > e.sequence else { return }  // an older announcement, arriving late
        e.sequence = sequence
        e.activity = activity
    }

    /// Applies `change` and tells subscribers if what `peers` would show changed.
    private func update(_ id: DeviceID, name: String? = nil, _ change: (inout Entry) -> Void) {
        let now = Timestamp.now()
        let existed = entries[id] != nil
        var entry = entries[id] ?? Entry(id: id, name: name ?? id.short)
        let before = existed ? entry.info(now: now) : nil
        if let name { entry.name = name }
        change(&entry)
        guard entry.isKnownSomehow else {
            entries[id] = nil
            if existed { events.publish(LocalEvent(at: now, .peerGone(id))) }
            return
        }
        entries[id] = entry
        let after = entry.info(now: now)
        if before != after { events.publish(LocalEvent(at: now, .peerChanged(after))) }
    }

    // MARK: Reading

    package func all(now: Timestamp = .now()) -> [PeerInfo] {
        entries.values.map { $0.info(now: now) }.sorted { $0.name == $1.name ? $0.id < $1.id : $0.name < $1.name }
    }

    package var strangers: Int { strangerInstances.count }
    package var reachableCount: Int { entries.values.filter { $0.sessions > 0 }.count }

    package func info(_ id: DeviceID) -> PeerInfo? { entries[id]?.info(now: .now()) }

    /// Where to dial `id`: each advert's host name (looked up now; not a zone's), its addresses
    /// as last resolved (IPv4 before IPv6), the link's adverts before a zone's, newest first;
    /// then static ones; last, the address of its open session (at its advertised port, else
    /// the default one): a device that dialled us before its advert was resolved here — or whose
    /// advert does not reach this link — can still be dialled for a stream.
    package func dialTargets(_ id: DeviceID) -> [PeerAddress] {
        guard let e = entries[id] else { return [] }
        var out: [PeerAddress] = []
        // The link's adverts first: a zone lists every network of a device (a VPN's, a
        // container bridge's), and most of those do not lead here.
        for s in e.sightings.values.sorted(by: { ($0.source == .wideArea ? 1 : 0, $1.at) < ($1.source == .wideArea ? 1 : 0, $0.at) }) {
            let name = PeerAddress(host: s.host.hasSuffix(".") ? String(s.host.dropLast()) : s.host, port: s.port)
            // A zone's host names were resolved at the zone's server, and are again at every
            // browse: the system's resolver may not reach that server, and would hold the dial
            // for its whole timeout (5 s) before the addresses are tried.
            if s.source != .wideArea, !name.host.isEmpty, !out.contains(name) { out.append(name) }
            for a in s.addresses.sorted(by: { !$0.contains(":") && $1.contains(":") }) {
                let target = PeerAddress(host: a, port: s.port)
                if !out.contains(target) { out.append(target) }
            }
        }
        for text in e.staticAddresses.sorted() {
            if let target = try? PeerAddress(parsing: text, defaultPort: PeerAddress.defaultPeerPort), !out.contains(target) {
                out.append(target)
            }
        }
        if e.sessions > 0, let live = e.sessionAddress {
            let port = e.sightings.values.max(by: { $0.at < $1.at })?.port ?? PeerAddress.defaultPeerPort
            let target = PeerAddress(host: live, port: port)
            if !out.contains(target) { out.append(target) }
        }
        return out
    }

    /// Whom to address a hello to `id` (`HelloAddressee`): the advert of it seen last, else the
    /// device.
    package func addressee(_ id: DeviceID) -> HelloAddressee {
        guard let newest = entries[id]?.sightings.max(by: { $0.value.at < $1.value.at }) else { return .device(id) }
        return .advert(id, instanceName: newest.key.name)
    }

    /// Where to dial each of `members` at start, and how to address it, as it was reached last —
    /// only from a network this device is on again (one of its addresses now, `here`, is the one
    /// it had then). What is remembered of other devices is forgotten.
    package func rememberedDials(members: Set<DeviceID>, here: Set<String>) -> [(id: DeviceID, address: PeerAddress, addressee: HelloAddressee)] {
        dialMemory.keep(only: members)
        return dialMemory.all.filter { here.contains(Self.withoutZone($0.via)) }.map {
            ($0.device, PeerAddress(host: $0.host, port: $0.port), .advert($0.device, instanceName: $0.instance))
        }
    }

    /// `fe80::1%eth0` → `fe80::1`: an interface's address is listed without its zone.
    package static func withoutZone(_ address: String) -> String {
        address.firstIndex(of: "%").map { String(address[..<$0]) } ?? address
    }

    package func isSighted(_ id: DeviceID) -> Bool { !(entries[id]?.sightings.isEmpty ?? true) }
    /// The devices whose adverts are seen now.
    package var sightedIDs: [DeviceID] { entries.filter { !$0.value.sightings.isEmpty }.map(\.key) }
}
