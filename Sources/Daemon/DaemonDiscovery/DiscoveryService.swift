import DaemonAccounts
import DaemonCore
import HandoffAPI
import HandoffDiscovery
import HandoffModel
import HandoffPeer
import HandoffSystem
import HandoffTLS
import Logging
import ServiceLifecycle
import Synchronization

/// Advertising and browsing (docs/discovery.md).
///
/// We advertise `_handoff._tcp` under a random instance name with a sealed TXT record; both the
/// name and the tag's salt are new at every start and every day. What we browse is opened with the
/// account's keys: our devices go to the directory (and get a session), anything else is only
/// counted. Nothing is dialled on the strength of an advert that does not open.
package final class DiscoveryService: Service {
    static let rotationInterval: Duration = .seconds(24 * 3600)

    private let backend: any DiscoveryBackend
    private let browseDomains: [String]
    private let staticPeers: [String]
    private let store: AccountStore
    private let directory: PeerDirectory
    /// Tells the other features of members seen (`.memberSighted`).
    private let announce: Announce
    private let port: @Sendable () -> Int
    /// Off: nothing is advertised (browsing goes on).
    private let deviceSwitch: DeviceSwitch
    private let logger: Logger

    private struct Identity {
        var instanceName = InstanceNames.random()
        var salt = Crypto.randomBytes(8)
    }

    private struct State {
        var backend: DiscoveryState = .starting
        var wideArea: WideAreaState?
        var identity = Identity()
        var publishedName: String?
        var advertising = false
        /// The services discovery follows (ours, and while joining the inviter's): joiners look for
        /// an inviter's join tag here.
        var sightings: [ServiceInstance: Sighting] = [:]
        /// The join tags `account join`s look for now (one each).
        var wantedJoinTags: [[UInt8]] = []
        /// The join tags each followed service has shown, newest last (a few). A TXT query that
        /// starts while Avahi still holds a service's previous record reports both, in any
        /// order, so the record a service shows last is not always its newest.
        var joinTags: [ServiceInstance: [[UInt8]]] = [:]
        /// The account's advert keys as discovery last heard of them, and from which update.
        var interestKeys: [AdvertKeys] = []
        var interestUpdates = 0
        var interestKeysFrom = 0
        /// Who we advertise as: a new device (created, joined, left) gets a new instance name.
        var deviceID: DeviceID?
        /// What the advert says of the current activity (`advertise`).
        var notice: ActivityNotice
        /// How many services showing a join tag were last reported (`invitingNearby`).
        var invitingReported = 0

        /// Services whose record shows a join tag now, while this device has no account: each
        /// is a device inviting, which this one could join. (With an account, only the inviters
        /// `account join` looks for are followed: not counted.)
        var inviting: Int {
            guard interestKeys.isEmpty else { return 0 }
            return sightings.values.filter { AdvertSeal.joinTag(of: $0.txt) != nil }.count
        }
    }

    private let state: Mutex<State>
    private let triggers: AsyncStream<Void>.Continuation
    private let triggerStream: AsyncStream<Void>
    /// Account changes, looked at one after another (`accountChanged`).
    private let accountChanges: AsyncStream<Void>.Continuation
    private let accountChangeStream: AsyncStream<Void>
    package let ready = ReadinessSignal()

    /// `notice`: what to advertise until `advertise` says otherwise.
    package init(
        backend: any DiscoveryBackend, browseDomains: [String], staticPeers: [String], store: AccountStore, directory: PeerDirectory,
        notice: ActivityNotice, announce: @escaping Announce, port: @escaping @Sendable () -> Int, deviceSwitch: DeviceSwitch, logger: Logger
    ) {
        self.deviceSwitch = deviceSwitch
        self.backend = backend
        self.browseDomains = browseDomains
        self.staticPeers = staticPeers
        self.store = store
        self.directory = directory
        self.announce = announce
        self.port = port
        self.logger = logger
        self.state = Mutex(State(notice: notice))
        (triggerStream, triggers) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        (accountChangeStream, accountChanges) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Our advert should change: publish again soon.
    private func republish() {
        triggers.yield()
    }

    /// The current activity changed, or handoff was switched on or off here (off: the advert is
    /// withdrawn): the advert says so as soon as Avahi allows.
    package func advertise(_ notice: ActivityNotice) {
        state.withLock { $0.notice = notice }
        republish()
    }

    /// An invite opened or closed: the advert carries the newest open one's join tag, read
    /// when it is sealed (so that changes crossing each other cannot leave an old one).
    package func invitesChanged() {
        republish()
    }

    /// The account changed (created, joined, newer state, new secret): what we saw may read
    /// differently now — a stranger may turn out to be ours, or ours a stranger. Looked at by
    /// `run` (changes that come while it looks are looked at once more, together).
    package func accountChanged() {
        accountChanges.yield()
    }

    private func reexamine() async {
        let me = await store.hello()?.deviceID
        state.withLock { s in
            // Nothing should link the advert of the device we were to the one we are now.
            if s.deviceID != me { s.identity = Identity() }
            s.deviceID = me
        }
        republish()
        await updateInterest()
        let seen = state.withLock { Array($0.sightings.values) }
        for sighting in seen { await examine(sighting) }
    }

    /// Tells discovery what to follow: records sealed with our account's keys (current or previous
    /// secret; a record that only copies our tag is not followed), and while a join looks for its
    /// inviter, records with its join tag (discovery looks at every record again when the
    /// interest changes: the inviter's gained its tag after it was first seen).
    ///
    /// The predicate reads the keys and the joins as they are when it runs, so that two updates
    /// that overtake each other cannot leave an older interest in place.
    private func updateInterest() async {
        // Updates may overtake each other across the await: the keys read by the one that
        // started last win.
        let update = state.withLock { s -> Int in
            s.interestUpdates += 1
            return s.interestUpdates
        }
        let keys = await store.advertKeys
        state.withLock { s in
            guard update > s.interestKeysFrom else { return }
            s.interestKeys = keys
            s.interestKeysFrom = update
        }
        await backend.setInterest { [self] instance, txt in
            let (wanted, keys) = state.withLock { ($0.wantedJoinTags, $0.interestKeys) }
            if let tag = AdvertSeal.joinTag(of: txt), wanted.contains(tag) { return true }
            // Without an account, every handoff service is followed (within the budget's cap):
            // its record gains a join tag when its device invites, which this one may join.
            if keys.isEmpty { return AdvertSeal.isHandoff(txt) }
            return AdvertSeal.open(txt, keys: keys, instanceName: instance.name) != nil
        }
        reportInviting()
    }

    /// Devices nearby inviting now (counted while this device has no account).
    package var invitingNearby: Int { state.withLock { $0.inviting } }

    /// Announces a change of `invitingNearby`.
    private func reportInviting() {
        let changed = state.withLock { s -> Bool in
            let now = s.inviting
            defer { s.invitingReported = now }
            return now != s.invitingReported
        }
        if changed { announce(.invitingNearbyChanged) }
    }

    package var status: DiscoveryStatus {
        let on = deviceSwitch.isOn
        return state.withLock { s in
            let browsingOnly = on ? "browsing only: no account to advertise yet" : "browsing only: handoff is off on this device"
            let (name, detail, retryAt): (DiscoveryStatus.State, String?, Timestamp?) =
                switch s.backend {
                case .starting: (.starting, nil, nil)
                case .running: (.running, s.advertising ? nil : browsingOnly, nil)
                case .unavailable(let reason, let at): (.unavailable, reason, at)
                }
            let wideArea = s.wideArea.map { WideAreaStatus(domain: $0.domain, registering: $0.registering, registered: $0.registered, problem: $0.problem) }
            return DiscoveryStatus(state: name, detail: detail, retryAt: retryAt, instanceName: s.publishedName, staticPeers: staticPeers, wideArea: wideArea)
        }
    }

    /// How long discovery waits for the dials at start (`PeerDirectory.rememberedDialsDone`): one
    /// that succeeds takes ~10 ms; one still under way after this is likely to fail.
    static let headStart: Duration = .milliseconds(50)

    package func run() async throws {
        _ = await directory.rememberedDialsDone.value(within: Self.headStart)
        let events = await backend.start(browseDomains: browseDomains)
        let me = await store.hello()?.deviceID
        state.withLock { $0.deviceID = me }
        await updateInterest()
        republish()
        // On shutdown: stop the loops, withdraw the advert (peers see a goodbye), stop browsing.
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask {
                    for await event in events { await self.handle(event) }
                }
                group.addTask {
                    for await _ in self.triggerStream { await self.publish() }
                }
                group.addTask {
                    for await _ in self.accountChangeStream { await self.reexamine() }
                }
                group.addTask { [directory = self.directory, backend = self.backend] in
                    for await name in directory.soughtAdverts { await backend.lookFor(instanceName: name) }
                }
                group.addTask {
                    while !Task.isCancelled {
                        try? await QuietSleep.sleep(for: Self.rotationInterval)
                        guard !Task.isCancelled else { return }
                        self.state.withLock { $0.identity = Identity() }
                        await self.publish()
                    }
                }
            }
        }
        await backend.withdraw()
        await backend.stop()
    }

    // MARK: Publishing

    private func publish() async {
        guard deviceSwitch.isOn, let hello = await store.hello(), let keys = await store.advertKeys.first, !(await store.isRevokedSelf) else {
            state.withLock { $0.advertising = false }
            await directory.advertising(nil)
            await backend.withdraw()
            return
        }
        let (notice, identity) = state.withLock { ($0.notice, $0.identity) }
        let joinTag = store.invites.newestPending().map { AdvertSeal.joinTag(code: $0) }
        let advert = Advert(deviceID: hello.deviceID, sequence: notice.sequence, activity: notice.activity)
        do {
            let txt = try AdvertSeal.txt(advert, keys: keys, salt: identity.salt, instanceName: identity.instanceName, joinTag: joinTag)
            state.withLock { $0.advertising = true }
            // Members that see this advert address their hellos to it: answered from now on.
            store.security.hellos.advertising(as: identity.instanceName)
            await directory.advertising(PeerDirectory.OwnAdvert(instanceName: identity.instanceName, port: port()))
            await backend.publish(instanceName: identity.instanceName, port: port(), txt: txt)
        } catch {
            logger.error("the advert does not fit in a TXT record", metadata: ["bytes": "\(AdvertSeal.maximumTXTBytes)"])
        }
    }

    // MARK: Browsing

    private func handle(_ event: DiscoveryEvent) async {
        switch event {
        case .state(let s):
            let wasUnavailable = state.withLock { st -> Bool in
                defer { st.backend = s }
                if case .unavailable = st.backend { return true }
                return false
            }
            announce(.discoveryStateChanged)
            switch s {
            case .running:
                ready.succeed()
                if wasUnavailable { logger.notice("avahi is back; advertising and browsing again") }
            case .unavailable(let reason, let retryAt):
                ready.succeed()  // the daemon runs without it, and says so
                logger.warning("discovery unavailable", metadata: ["reason": "\(reason)", "retry": "\(retryAt)"])
            case .starting:
                break
            }
        case .published(let name):
            // Avahi may have renamed us (a name conflict): the seal names the instance, so it is
            // sealed again under the name others see.
            let renamed = state.withLock { s -> Bool in
                s.publishedName = name
                guard s.identity.instanceName != name else { return false }
                s.identity.instanceName = name
                return true
            }
            store.security.hellos.advertising(as: name)
            if renamed { republish() }
            logger.debug("advertising", metadata: ["instance": "\(name)"])
        case .seen(let sighting):
            state.withLock { s in
                s.sightings[sighting.instance] = sighting
                if let tag = AdvertSeal.joinTag(of: sighting.txt), s.joinTags[sighting.instance]?.contains(tag) != true {
                    s.joinTags[sighting.instance, default: []].append(tag)
                    if s.joinTags[sighting.instance]!.count > 4 { s.joinTags[sighting.instance]!.removeFirst() }
                }
            }
            reportInviting()
            await examine(sighting)
        case .stranger(let instance):
            state.withLock { s in
                s.sightings[instance] = nil
                s.joinTags[instance] = nil
            }
            reportInviting()
            await directory.stranger(instance)
        case .wideArea(let wideArea):
            let was = state.withLock { s in
                defer { s.wideArea = wideArea }
                return s.wideArea
            }
            announce(.discoveryStateChanged)
            if let problem = wideArea.problem, problem != was?.problem {
                logger.warning("wide-area discovery failed", metadata: ["domain": "\(wideArea.domain)", "reason": "\(problem)"])
            } else if wideArea.problem == nil, was?.problem != nil {
                logger.notice("wide-area discovery works again", metadata: ["domain": "\(wideArea.domain)"])
            }
        case .gone(let instance):
            state.withLock { s in
                s.sightings[instance] = nil
                s.joinTags[instance] = nil
            }
            reportInviting()
            await directory.lost(instance)
        }
    }

    private func examine(_ sighting: Sighting) async {
        guard AdvertSeal.isHandoff(sighting.txt) else {
            await directory.stranger(sighting.instance)
            return
        }
        let keys = await store.advertKeys
        guard let advert = AdvertSeal.open(sighting.txt, keys: keys, instanceName: sighting.instance.name) else {
            await directory.stranger(sighting.instance)
            return
        }
        guard let me = await store.hello()?.deviceID, advert.deviceID != me, !(await store.isRevokedSelf) else { return }
        guard let state = await store.currentState, !state.isRevoked(advert.deviceID) else {
            await directory.stranger(sighting.instance)
            return
        }
        // Sealed with our key but not in our list yet: a device that joined after our last
        // exchange. Its session (TLS-verified) will bring us the newer account state.
        let name = state.device(advert.deviceID)?.name ?? advert.deviceID.short
        let fresh = await directory.sighted(advert, name: name, sighting: sighting)
        announce(.memberSighted(advert.deviceID, fresh: fresh))
    }

    /// For `account join` without `--peer`: the addresses of the device advertising `code`'s join
    /// tag (IPv4 first), waiting up to `timeout` for it to appear; none if it does not.
    package func findInviter(code: InviteCode, timeout: Duration) async -> [PeerAddress] {
        let wanted = AdvertSeal.joinTag(code: code)
        state.withLock { $0.wantedJoinTags.append(wanted) }
        await updateInterest()
        let found = await lookForInviter(wanted, timeout: timeout)
        state.withLock { s in
            if let index = s.wantedJoinTags.firstIndex(of: wanted) { s.wantedJoinTags.remove(at: index) }
        }
        await updateInterest()
        return found
    }

    private func lookForInviter(_ wanted: [UInt8], timeout: Duration) async -> [PeerAddress] {
        let deadline = ContinuousClock.now + timeout
        var lookedAgain = ContinuousClock.now
        while ContinuousClock.now < deadline {
            // Records not followed are not watched: the inviter's may gain its tag after discovery
            // last looked (an invite made a moment ago), so every second it looks again.
            if ContinuousClock.now - lookedAgain >= .seconds(1) {
                lookedAgain = ContinuousClock.now
                await updateInterest()
            }
            // Seen on the link, if it is: its addresses there lead here.
            let match = state.withLock { s in
                s.sightings.values.filter { s.joinTags[$0.instance]?.contains(wanted) == true && !$0.addresses.isEmpty }
                    .min { ($0.source == .wideArea ? 1 : 0) < ($1.source == .wideArea ? 1 : 0) }
            }
            if let match, !match.addresses.isEmpty {
                return match.addresses.sorted { !$0.contains(":") && $1.contains(":") }.map { PeerAddress(host: $0, port: match.port) }
            }
            // Cancelled (the join gave up, or shutdown): the sleep would no longer wait.
            guard (try? await QuietSleep.sleep(for: .milliseconds(100))) != nil else { break }
        }
        // What was seen instead, for whoever reads the log to find out why.
        let (seen, tagged, addressed) = state.withLock { s in
            let tagged = s.sightings.values.filter { s.joinTags[$0.instance]?.contains(wanted) == true }
            return (s.sightings.count, tagged.count, tagged.filter { !$0.addresses.isEmpty }.count)
        }
        logger.notice(
            "no device seen inviting with the code", metadata: ["services": "\(seen)", "with-its-tag": "\(tagged)", "with-an-address": "\(addressed)", "state": "\(status.state.rawValue)"]
        )
        return []
    }
}
