#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonAccounts
import DaemonCore
import DaemonDiscovery
import HandoffAPI
import HandoffModel
import HandoffPeer
import HandoffSystem
import HandoffTLS
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// An open, authenticated session with another device of the account.
package final class MemberSession: Sendable {
    package let peerID: DeviceID
    package let peerName: String
    let initiatedByUs: Bool
    let remote: String
    private let outbound: NIOAsyncChannelOutboundWriter<PeerMessage>
    private let channel: any Channel
    private let pending = Mutex<[UInt32: Once<Result<PeerMessage, any Error>>]>([:])
    private let nextID = Mutex<UInt32>(1)

    /// How long a request waits for its answer unless it says otherwise.
    private let requestTimeout: Duration

    init(
        peerID: DeviceID, peerName: String, initiatedByUs: Bool, remote: String, outbound: NIOAsyncChannelOutboundWriter<PeerMessage>, channel: any Channel,
        requestTimeout: Duration
    ) {
        self.requestTimeout = requestTimeout
        self.peerID = peerID
        self.peerName = peerName
        self.initiatedByUs = initiatedByUs
        self.remote = remote
        self.outbound = outbound
        self.channel = channel
    }

    var isOpen: Bool { channel.isActive }

    /// Returns once the connection has closed (ended by either side, replaced, or at shutdown).
    func closed() async {
        try? await channel.closeFuture.get()
    }

    package func send(_ message: PeerMessage) async throws {
        try await outbound.write(message)
    }

    /// Sends a request built around a fresh id and waits (at most `timeout`, else the daemon's
    /// `Deadlines.peerRequest`) for its answer.
    package func request(_ make: (UInt32) -> PeerMessage, timeout: Duration? = nil) async throws -> PeerMessage {
        let timeout = timeout ?? requestTimeout
        let id = nextID.withLock { n in
            defer { n &+= 1 }
            return n
        }
        let message = make(id)
        let answer = Once<Result<PeerMessage, any Error>>()
        pending.withLock { $0[id] = answer }
        defer { pending.withLock { _ = $0.removeValue(forKey: id) } }
        // The time allowed covers the write: a peer that stops reading fills the connection. A
        // timer of the session's event loop, not a sleeping task: arming and cancelling it wakes
        // no other thread (a request is on the path of every `continue`).
        let timer = channel.eventLoop.scheduleTask(in: TimeAmount(timeout)) { answer.settle(.failure(PeerRequestTimeout())) }
        defer { timer.cancel() }
        let outbound = self.outbound
        // Left unawaited, the write is cancelled when this returns (an answer, or the timer).
        async let _ = { do { try await outbound.write(message) } catch { answer.settle(.failure(error)) } }()
        guard let result = await answer.valueUnlessCancelled() else {
            throw CancellationError()
        }
        return try result.get()
    }

    /// Delivers an answer (or a failure) to whoever waits for request `id`; later ones are ignored.
    func settle(_ id: UInt32, _ result: Result<PeerMessage, any Error>) {
        pending.withLock { $0.removeValue(forKey: id) }?.settle(result)
    }

    func failAll(_ error: any Error) {
        let waiting = pending.withLock { p -> [Once<Result<PeerMessage, any Error>>] in
            defer { p.removeAll() }
            return Array(p.values)
        }
        waiting.forEach { $0.settle(.failure(error)) }
    }

    func close() {
        channel.close(promise: nil)
    }
}

package struct PeerRequestTimeout: Error, CustomStringConvertible {
    package init() {}
    package var description: String { "the other device did not answer in time" }
}

/// The sessions with the account's other devices (the fast path): at most one per device. They
/// carry activity notices both ways as changes happen, answer `continue`, and spread account
/// state. When a session ends, the device shows as unreachable at once; TCP keepalive notices a
/// silent peer without waking us (docs/discovery.md).
package actor MemberSessions {
    private var slots = SessionSlots<MemberSession>()
    private var sessions: [DeviceID: MemberSession] { slots.sessions }
    private var dials = DialPlan()
    /// When dialling a device last failed at every address (cleared once a session is up).
    private var dialFailedAt: [DeviceID: Timestamp] = [:]
    /// The dials under way, by address (`connect`).
    private var dialling: [String: Once<Result<MemberSession, DaemonError>>] = [:]
    let store: AccountStore
    let security: PeerSecurity
    let directory: PeerDirectory
    /// What each feature answers on the sessions.
    let handlers: PeerMessageHandlers
    /// What the waits between dials are measured by.
    let clock: any DaemonClock
    /// How long the other devices have to answer.
    let deadlines: Deadlines
    /// Off: no device is dialled unless the user continues from it.
    /// Handoff on this device (`DeviceSwitch`): while off, no device is dialled and no session
    /// another device started is kept.
    private var handoffOn: Bool
    /// The notice sequence of the last switch applied: changes reach the actor as separate
    /// tasks, in any order, and only the newest counts.
    private var switchSequence: UInt64 = 0
    let logger: Logger
    /// Background work (dials, sessions we started) runs in the service's task group.
    private let jobs: AsyncStream<@Sendable () async -> Void>.Continuation
    let jobStream: AsyncStream<@Sendable () async -> Void>

    package init(
        store: AccountStore, security: PeerSecurity, directory: PeerDirectory, handlers: PeerMessageHandlers, handoffOn: Bool = true,
        clock: any DaemonClock = SystemDaemonClock(), deadlines: Deadlines = Deadlines(), logger: Logger
    ) {
        self.handoffOn = handoffOn
        self.clock = clock
        self.deadlines = deadlines
        self.store = store
        self.security = security
        self.directory = directory
        self.handlers = handlers
        self.logger = logger
        (jobStream, jobs) = AsyncStream.makeStream(of: (@Sendable () async -> Void).self)
    }

    package nonisolated func spawn(_ job: @escaping @Sendable () async -> Void) {
        jobs.yield(job)
    }

    /// The session with `id`, unless its connection is already closing (the loser of two crossed
    /// dials stays listed until its task ends).
    func session(for id: DeviceID) -> MemberSession? { sessions[id].flatMap { $0.isOpen ? $0 : nil } }
    var connectedIDs: [DeviceID] { Array(sessions.keys) }
    /// Open sessions the other device dialled.
    package var inboundCount: Int { sessions.values.filter { !$0.initiatedByUs && $0.isOpen }.count }

    // MARK: Registering sessions

    /// One session per device. When two race (both sides dialled), both ends keep the one
    /// dialled by the device with the smaller id; a newer session in the same direction replaces
    /// an older one (a reconnection).
    private func register(_ session: MemberSession) -> Bool {
        // Handoff off here: a session the other device started (admitted just before the switch)
        // is not kept. Ours are what the user asked for (continue).
        guard handoffOn || session.initiatedByUs else { return false }
        let me = security.contexts?.deviceID
        switch slots.up(session, peer: session.peerID, dialledByUs: session.initiatedByUs, me: me) {
        case .refuse: return false
        case .keepClosing(let replaced): replaced.close()
        case .keep: break
        }
        dials.connected(session.peerID)
        dialFailedAt[session.peerID] = nil
        return true
    }

    private func unregister(_ session: MemberSession) {
        slots.down(session, peer: session.peerID)
    }

    /// Sends `message` to every session (activity notices, a newer account state); returns to
    /// how many.
    @discardableResult
    package func broadcast(_ message: PeerMessage, except left: Set<DeviceID> = []) -> Int {
        var told = 0
        for session in sessions.values where !left.contains(session.peerID) {
            let s = session
            spawn { try? await s.send(message) }
            // A session closing (the loser of two crossed dials) is not a device told.
            if s.isOpen { told += 1 }
        }
        return told
    }

    /// Tells every session of this device's activity: the notice, then its target, in order.
    package func tell(_ notice: ActivityNotice) {
        let messages = PeerMessage.telling(notice)
        for session in sessions.values {
            let s = session
            spawn { for message in messages { try? await s.send(message) } }
        }
    }

    /// Ends the sessions of devices that have been removed from the account, telling each first.
    func dropRevoked(_ revoked: Set<DeviceID>) async {
        for id in sessions.keys where revoked.contains(id) {
            guard let session = slots.remove(id) else { continue }
            if let notice = await store.removalNotice(for: id) { try? await session.send(.removed(notice)) }
            session.close()
            await directory.forget(id)
        }
    }

    /// Ends every session: this device left its account, or was removed from it.
    package func dropAll() async {
        for session in slots.removeAll() {
            session.close()
            await directory.forget(session.peerID)
        }
    }

    /// Handoff was switched on or off here; `notice` says what this device now tells.
    /// Off: the devices with a session hear that there is nothing to continue here, then every
    /// session ends and none is dialled until it is on again (what is known of them stays).
    /// On: they hear of the activity, and every device seen gets a session again.
    package func switched(on: Bool, notice: ActivityNotice) async {
        guard notice.sequence > switchSequence else { return }
        switchSequence = notice.sequence
        handoffOn = on
        guard on else {
            // Each device with a session hears that there is nothing here, each within a peer's
            // answer time: one that stops reading holds up neither the others nor the switch.
            let (open, limit) = (sessions.values.filter(\.isOpen), deadlines.peerRequest)
            await withTaskGroup(of: Void.self) { group in
                for session in open {
                    group.addTask {
                        await withTaskGroup(of: Void.self) { one in
                            one.addTask { try? await session.send(.activityNotice(notice)) }
                            one.addTask { try? await QuietSleep.sleep(for: limit) }
                            await one.next()
                            one.cancelAll()
                        }
                    }
                }
            }
            // Switched on again while the notice went out: the sessions stay.
            guard switchSequence == notice.sequence else { return }
            for session in slots.removeAll() { session.close() }
            return
        }
        tell(notice)
        for id in await directory.sightedIDs { consider(id, fresh: true) }
    }

    // MARK: Serving a session (either side)

    /// Runs an established session until it ends. Called inside the connection's
    /// `executeThenClose`, after the greeting.
    nonisolated func serve(
        _ greeting: MemberGreeting.Outcome,
        connection: PeerConnection,
        initiatedByUs: Bool,
        messages: inout NIOAsyncChannelInboundStream<PeerMessage>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<PeerMessage>,
        established: (@Sendable (MemberSession) -> Void)? = nil
    ) async {
        let session = MemberSession(
            peerID: greeting.peer.deviceID, peerName: greeting.peer.deviceName, initiatedByUs: initiatedByUs, remote: connection.remote,
            outbound: outbound, channel: connection.channel.channel, requestTimeout: deadlines.peerRequest
        )
        guard await register(session) else {
            logger.debug("dropped a duplicate session", metadata: ["peer": "\(session.peerID.short)"])
            return
        }
        // A removal applied while this session was being greeted found no slot to sweep (the
        // handshake was done before it): the session must not outlive it.
        guard await store.allowsSession(with: session.peerID) else {
            logger.info("dropped a session of a removed device", metadata: ["peer": "\(session.peerID.short)"])
            await unregister(session)
            session.close()
            return
        }
        if greeting.learnedNewerState { await stateChanged() }
        // This device's state changed while the two greeted: its broadcast found no session with
        // that device yet (or only the loser of two crossed dials), so this one says it now.
        if await store.stateRank > greeting.peerHas, let (signed, secret) = await store.stateToShare(with: session.peerID) {
            try? await session.send(.accountState(signed, accountSecret: secret ?? []))
        }
        established?(session)
        await directory.sessionUp(session.peerID, name: session.peerName, address: connection.remote, local: connection.local, theirClock: greeting.peer.clock)
        logger.info("device connected", metadata: ["peer": "\(session.peerID.short)", "remote": "\(connection.remote)", "dialled": "\(initiatedByUs)"])
        do {
            try await handlers.opened(PeerTalk(session: session, sessions: self))
            while let message = try await messages.next() {
                try await handle(message, on: session)
            }
        } catch {
            logger.debug("session ended", metadata: ["peer": "\(session.peerID.short)", "error": "\(error)"])
        }
        session.failAll(PeerSessionError.closed)
        await unregister(session)
        await directory.sessionDown(session.peerID)
        logger.info("device disconnected", metadata: ["peer": "\(session.peerID.short)"])
        await sessionEnded(session.peerID)
    }

    /// Carries one message to whoever answers it: an answer to the one who asked, anything else
    /// to the feature that registered its kind (`PeerMessageHandlers`).
    private nonisolated func handle(_ message: PeerMessage, on session: MemberSession) async throws {
        if case .failure(let failure) = message { throw PeerSessionError.peerFailed(failure) }
        if let request = message.answeredRequest { return session.settle(request, .success(message)) }
        guard let kind = message.kind else {
            return logger.debug("skipped a message of unknown type", metadata: ["peer": "\(session.peerID.short)", "type": "\(message.kindName)"])
        }
        guard let handler = handlers.handler(for: kind) else {
            try await session.send(.failure(PeerFailure(.unexpectedMessage, "unexpected \(message.kindName)")))
            throw PeerSessionError.unexpected(message.kindName)
        }
        try await handler.handle(message, PeerTalk(session: session, sessions: self))
    }

    /// After the account state changed here (a removal, a rename, a newer state learned): tell
    /// and drop removed devices, show the names it gives, and pass the news on.
    package func stateChanged() async {
        // One snapshot: a removal saved meanwhile brings its own call; until then the devices it
        // removes get this (older) state, which they had.
        guard let (state, signed, secret) = await store.stateWithSecret() else { return }
        let revoked = Set(state.revoked.map(\.id))
        await dropRevoked(revoked)
        await directory.rename(from: state)
        broadcast(.accountState(signed, accountSecret: secret), except: revoked)
    }

    /// `account leave` on a device without the account key: asks every device it has a session
    /// with to remove it; the one holding the key does. The names that answered, and whether the
    /// key holder's answer lists this device as removed.
    package func askToBeRemoved() async -> (told: [String], removed: Bool) {
        guard let me = await store.hello()?.deviceID else { return ([], false) }
        let open = sessions.values.filter(\.isOpen)
        let timeout = deadlines.membershipRequest
        return await withTaskGroup(of: (String, Bool)?.self) { group in
            for session in open {
                group.addTask {
                    guard case .accountStateReply(_, let signed, _)? = try? await session.request({ .leaving(requestID: $0) }, timeout: timeout) else {
                        return nil
                    }
                    return (session.peerName, (try? AccountState(decoding: signed.stateBytes))?.isRevoked(me) ?? false)
                }
            }
            var told: [String] = []
            var removed = false
            for await answer in group {
                guard let (name, listed) = answer else { continue }
                told.append(name)
                removed = removed || listed
            }
            return (told.sorted(), removed)
        }
    }

    /// `devices rename NAME` on a device without the account key: the device holding it signs
    /// the new name; whoever answers sends the state it has, which this device adopts.
    package func askToBeRenamed(_ name: String) async throws(DaemonError) -> DeviceInfo {
        guard let me = await store.hello()?.deviceID else { throw .noAccount }
        let open = sessions.values.filter(\.isOpen)
        var reached: [String] = []
        for session in open {
            guard case .accountStateReply(_, let signed, let secret)? = try? await session.request({ .renameRequest(requestID: $0, name: name) }, timeout: deadlines.membershipRequest)
            else { continue }
            reached.append(session.peerName)
            if await store.adopt(signed, accountSecret: secret) == .updated { await stateChanged() }
            if let mine = await store.currentState?.device(me), mine.name == name {
                return DeviceInfo(id: me, name: name, addedAt: mine.addedAt, isThisDevice: true)
            }
        }
        let tried = reached.isEmpty ? "no other device is reachable now" : "\(reached.joined(separator: ", ")) answered but \(reached.count == 1 ? "does" : "do") not hold it, or refused the name"
        throw DaemonError(
            .unreachable,
            "names in the account are signed by the device holding the account key, and \(tried); try again when it is reachable, or rename this one there (handoffctl devices rename THIS-DEVICE \(name))"
        )
    }

    /// The state as it is here; its secret only to a device that is still a member.

    // MARK: Dialling

    /// Connects to `address`, greets, and keeps the session running in the background; returns
    /// once it is established.
    ///
    /// The whole connection — dial included — runs as one background job, so that a channel is
    /// never left open without an owner (if the job never runs, no channel was made).
    /// When this device last failed to reach `id` at any of its addresses (nil once it did).
    func lastDialFailure(_ id: DeviceID) -> Timestamp? { dialFailedAt[id] }

    /// `addressee`: only this offer (`PeerDialer.helloAttempts`, as addressed only), not what the
    /// directory says of `expected`.
    func connect(
        _ address: PeerAddress, expecting expected: DeviceID? = nil, addressee only: HelloAddressee? = nil,
        connectTimeout: TimeAmount = PeerDialer.connectTimeout
    ) async throws(DaemonError) -> MemberSession {
        guard let contexts = security.contexts else {
            throw .noAccount
        }
        // One dial at a time to an address: a second caller (`sync HOST:PORT` while the dial at
        // start is under way) takes the session that one makes, rather than replacing it.
        if let under = dialling[address.description] {
            let outcome = await under.valueUnlessCancelled()
            if case .success(let session)? = outcome, session.isOpen, expected == nil || session.peerID == expected { return session }
            if Task.isCancelled { throw DaemonError(.unreachable, "handoffd is stopping") }
        }
        let outcome = Once<Result<MemberSession, DaemonError>>()
        dialling[address.description] = outcome
        defer { if dialling[address.description] === outcome { dialling[address.description] = nil } }
        spawn { [self] in
            do {
                var addressee = only ?? .anyone
                if only == nil, let expected { addressee = await self.directory.addressee(expected) }
                let (connection, peer) = try await PeerDialer.connect(
                    address, context: contexts.client, expectedPeer: expected, addressee: addressee, asAddressedOnly: only != nil,
                    connectTimeout: connectTimeout
                )
                guard case .member(let peerID) = peer else {
                    await connection.discard()
                    outcome.settle(.failure(DaemonError(.refused, "\(address) is not a device of this account")))
                    return
                }
                // One session per device: reached by its address while a session with it is
                // open (`continue HOST:PORT`), the open one serves, and this connection goes
                // before its greeting (the other side never registers it).
                if let open = await self.session(for: peerID) {
                    await connection.discard()
                    outcome.settle(.success(open))
                    return
                }
                try await connection.channel.executeThenClose { inbound, outbound in
                    var messages = inbound.makeAsyncIterator()
                    let greeting = try await MemberGreeting.asClient(peerID: peerID, connection: connection, inbound: &messages, outbound: outbound, store: store)
                    await self.serve(greeting, connection: connection, initiatedByUs: true, messages: &messages, outbound: outbound) { session in
                        outcome.settle(.success(session))
                    }
                }
            } catch PeerSessionError.removed(let notice) {
                // The other device says this one was removed: kept if the account signed it.
                if await self.store.learnRemoval(notice) { await self.dropAll() }
                let info = await self.store.removalInfo
                outcome.settle(
                    .failure(info.map(DaemonError.removed) ?? DaemonError(.revoked, "\(address) says this device was removed from the account"))
                )
            } catch {
                outcome.settle(.failure(PeerDialer.describe(error, address: address)))
            }
            outcome.settle(.failure(DaemonError(.unreachable, "\(address) closed the connection")))
        }
        // If shutdown begins first, the job may never run: cancellation must end this wait.
        return try await withTaskCancellationHandler {
            await outcome.value
        } onCancel: {
            outcome.settle(.failure(DaemonError(.unreachable, "handoffd is stopping")))
        }.get()
    }

    /// A member was seen on the network (`fresh`: an advert new to us), or its session ended:
    /// make sure there is a session. When to dial is `DialPlan`'s answer: at once, unless dials
    /// failed since anything new was heard of it.
    package func consider(_ id: DeviceID, fresh: Bool = false) {
        guard handoffOn, sessions[id] == nil, let me = security.contexts?.deviceID, id != me else { return }
        guard case .dial(let delay, let ticket) = dials.want(id, fresh: fresh) else { return }
        spawn { [self] in
            if delay > .zero { try? await self.clock.sleep(for: delay) }
            await self.dialIfDue(id, ticket: ticket)
        }
    }

    private func dialIfDue(_ id: DeviceID, ticket: Int) async {
        guard dials.due(id, ticket: ticket) else { return }
        guard handoffOn, sessions[id] == nil, await directory.isSighted(id) else {
            dials.skipped(id)
            return
        }
        for target in await directory.dialTargets(id) {
            // A session may have come the other way (a crossed dial) while this one tried.
            if sessions[id] != nil {
                dials.connected(id)
                return
            }
            do {
                let session = try await connect(target, expecting: id)
                dials.connected(id)
                closeIfOff(session)
                return
            } catch {
                logger.debug("cannot reach a device", metadata: ["peer": "\(id.short)", "address": "\(target)", "error": "\(error)"])
            }
        }
        if sessions[id] != nil {
            dials.connected(id)
            return
        }
        // Not reachable (or not resolved yet): try again later while it stays seen.
        dials.failed(id)
        dialFailedAt[id] = .now()
        if await directory.isSighted(id) { consider(id) }
    }

    /// At start: each device is dialled at once where this one last reached it, addressed to the
    /// advert it had then — before discovery has answered (docs/discovery.md, "First contact").
    /// Gone from there, or restarted since (a new advert name): discovery finds it as ever.
    package func dialRemembered() async {
        await store.started.value
        let members = Set((try? store.requireMembershipNow())?.state.devices.map(\.id) ?? [])
        var wanted: [(DeviceID, PeerAddress, HelloAddressee, ticket: Int)] = []
        for (id, address, addressee) in await directory.rememberedDials(members: members, here: LocalAddresses.current()) {
            guard handoffOn, sessions[id] == nil, id != security.contexts?.deviceID, case .dial(_, let ticket) = dials.want(id, fresh: true) else { continue }
            wanted.append((id, address, addressee, ticket))
        }
        let (done, toDial) = (directory.rememberedDialsDone, wanted)
        spawn { [self] in
            await withDiscardingTaskGroup { group in
                for (id, address, addressee, ticket) in toDial { group.addTask { await self.dialRemembered(id, at: address, addressee, ticket: ticket) } }
            }
            done.settle(())
        }
    }

    private func dialRemembered(_ id: DeviceID, at address: PeerAddress, _ addressee: HelloAddressee, ticket: Int) async {
        guard dials.due(id, ticket: ticket) else { return }
        // A LAN host answers a connection at once: one that does not is not there any more.
        if let session = try? await connect(address, expecting: id, addressee: addressee, connectTimeout: .seconds(1)) { closeIfOff(session) }
        guard sessions[id] == nil else { return dials.connected(id) }
        // Nothing is held against the device (no backoff): it was only not found there.
        dials.skipped(id)
        if await directory.isSighted(id) { consider(id, fresh: true) }
    }

    /// A session ended; if the device is still seen, try again (it may have restarted).
    func sessionEnded(_ id: DeviceID) async {
        if await directory.isSighted(id) { consider(id) }
    }

    /// Handoff was switched off while `session` was dialled on our own account (not for the user):
    /// it ends.
    private func closeIfOff(_ session: MemberSession) {
        guard !handoffOn, sessions[session.peerID] === session else { return }
        _ = slots.remove(session.peerID)
        session.close()
    }

    /// Keeps a session with a configured static peer, reconnecting with backoff; `whenOn` returns
    /// once handoff is on on this device (at once while it is).
    nonisolated func maintainStatic(_ address: PeerAddress, whenOn: @escaping @Sendable () async -> Void) {
        spawn { [self] in
            var delay: Duration = .seconds(1)
            while !Task.isCancelled {
                await whenOn()
                guard !Task.isCancelled else { return }
                do {
                    let session = try await self.connect(address)
                    await self.closeIfOff(session)
                    await self.directory.staticPeer(session.peerID, name: session.peerName, address: address.description)
                    delay = .seconds(1)
                    await self.waitUntilClosed(session)
                } catch {
                    logger.debug("static peer unreachable", metadata: ["address": "\(address)", "error": "\(error)"])
                }
                try? await self.clock.sleep(for: delay)
                delay = min(delay * 2, .seconds(60))
            }
        }
    }

    /// Waits for the session's connection to close, not polling: a replaced session is closed
    /// by `register`, and shutdown closes them all (or cancels the wait).
    private func waitUntilClosed(_ session: MemberSession) async {
        await withTaskCancellationHandler {
            await session.closed()
        } onCancel: {
            session.close()
        }
    }
}

/// This device's IP addresses now, without zones (`PeerDirectory.rememberedDials`).
enum LocalAddresses {
    static func current() -> Set<String> {
        Set(((try? System.enumerateDevices()) ?? []).compactMap { $0.address?.ipAddress }.map(PeerDirectory.withoutZone))
    }
}

/// `MemberSessions` runs its background work (dials, sessions it started) inside the daemon's
/// service group, and ends it all on shutdown.
package struct MemberSessionsService: Service {
    let sessions: MemberSessions
    let staticPeers: [PeerAddress]
    /// Static peers are dialled only while handoff is on here.
    let deviceSwitch: DeviceSwitch

    package init(sessions: MemberSessions, staticPeers: [PeerAddress], deviceSwitch: DeviceSwitch) {
        self.sessions = sessions
        self.staticPeers = staticPeers
        self.deviceSwitch = deviceSwitch
    }

    package func run() async throws {
        let deviceSwitch = self.deviceSwitch
        for peer in staticPeers { sessions.maintainStatic(peer) { await deviceSwitch.waitUntilOn() } }
        await sessions.dialRemembered()
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                // This device's advert changed (it started, or renamed): the open sessions hear it.
                group.addTask {
                    for await own in sessions.directory.ownAdverts {
                        if let port = UInt16(exactly: own.port) { _ = await sessions.broadcast(.advertName(instanceName: own.instanceName, port: port)) }
                    }
                }
                for await job in sessions.jobStream {
                    group.addTask { await job() }
                }
            }
        }
    }
}
