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

/// The sessions with the account's other devices (the fast path): at most one per device. They
/// carry activity notices both ways as changes happen, answer `continue`, and spread account
/// state. When a session ends, the device shows as unreachable at once; TCP keepalive notices a
/// silent peer without waking us (docs/discovery.md).
package actor MemberSessions {
    var slots = SessionSlots<MemberSession>()
    var sessions: [DeviceID: MemberSession] { slots.sessions }
    var dials = DialPlan()
    /// When dialling a device last failed at every address (cleared once a session is up).
    var dialFailedAt: [DeviceID: Timestamp] = [:]
    /// The dials under way, by address (`connect`).
    var dialling: [String: Once<Result<MemberSession, DaemonError>>] = [:]
    let store: AccountStore
    let security: PeerSecurity
    let directory: PeerDirectory
    /// What each feature answers on the sessions.
    let handlers: PeerMessageHandlers
    /// What the waits between dials are measured by.
    let clock: any DaemonClock
    /// How long the other devices have to answer.
    package let deadlines: Deadlines
    /// Off: no device is dialled unless the user continues from it.
    /// Handoff on this device (`DeviceSwitch`): while off, no device is dialled and no session
    /// another device started is kept.
    var handoffOn: Bool
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
    package func session(for id: DeviceID) -> MemberSession? { sessions[id].flatMap { $0.isOpen ? $0 : nil } }
    var connectedIDs: [DeviceID] { Array(sessions.keys) }
    /// Every session whose connection is open.
    package var openSessions: [MemberSession] { sessions.values.filter(\.isOpen) }
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
}
