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

// Dialling: who is dialled when, and keeping static peers and remembered dials up.
extension MemberSessions {
    /// When this device last failed to reach `id` at any of its addresses (nil once it did).
    func lastDialFailure(_ id: DeviceID) -> Timestamp? { dialFailedAt[id] }

    /// Connects to `address`, greets, and keeps the session running in the background; returns
    /// once it is established.
    ///
    /// The whole connection — dial included — runs as one background job, so that a channel is
    /// never left open without an owner (if the job never runs, no channel was made).
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
