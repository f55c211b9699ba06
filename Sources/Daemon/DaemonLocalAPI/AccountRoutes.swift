#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonAccounts
import DaemonCore
import DaemonDiscovery
import DaemonMembership
import DaemonSessions
import HandoffAPI
import HandoffModel
import HandoffTLS
import Logging

/// The account: making, joining, leaving and recovering it, its key, and its devices.
package struct AccountRoutes: LocalRoutes {
    let accounts: AccountStore
    let sessions: MemberSessions
    let directory: PeerDirectory
    let discovery: DiscoveryService
    let peerPort: @Sendable () -> Int
    /// Off: no invite (nobody could reach this device to use it).
    let deviceSwitch: DeviceSwitch
    let logger: Logger

    package init(
        accounts: AccountStore, sessions: MemberSessions, directory: PeerDirectory, discovery: DiscoveryService, peerPort: @escaping @Sendable () -> Int,
        deviceSwitch: DeviceSwitch, logger: Logger
    ) {
        self.deviceSwitch = deviceSwitch
        self.accounts = accounts
        self.sessions = sessions
        self.directory = directory
        self.discovery = discovery
        self.peerPort = peerPort
        self.logger = logger
    }

    package var feature: String { "accounts" }
    package var handlers: [LocalAPIEndpoints.Endpoint: LocalHandler] {
        [
            .getAccount: getAccount, .createAccount: createAccount, .joinAccount: joinAccount, .invite: invite, .sync: sync, .leave: leave,
            .recoveryCode: recoveryCode, .recover: recover, .transferKey: transferKey, .acceptKey: acceptKey, .rotateKey: rotateKey, .devices: devices,
            .renameDevice: renameDevice, .removeDevice: removeDevice,
        ]
    }

    func getAccount(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        return .ok(try await accounts.info())
    }

    func createAccount(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        let create = request.body.readableBytes == 0 ? CreateAccountRequest() : try request.decoded(CreateAccountRequest.self)
        return .ok(try await accounts.create(create))
    }

    func joinAccount(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        let join = try request.decoded(JoinAccountRequest.self)
        let discovery = discovery
        return .ok(
            try await AccountJoiner.join(
                join, store: accounts, defaultPort: peerPort(), logger: logger,
                findInviter: { code in await discovery.findInviter(code: code, timeout: AccountJoiner.findInviterTimeout) }
            )
        )
    }

    /// NDJSON: the code at once, then who joined, or that it expired. Hanging up cancels the invite.
    func invite(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        guard deviceSwitch.isOn else {
            throw DaemonError(.handoffOff, "handoff is off on this device, so no other device can reach it to join; turn it on first (handoffctl config handoff on)")
        }
        let (code, expiresAt, outcomes) = try await accounts.invite()
        let invites = accounts.invites
        let identity = JoinPSK(code: code).identity
        let first = InviteUpdate(invite: .init(code: code.text, expiresAt: expiresAt, port: peerPort()))
        // However the answer ends — sent, the inviter gone, or never started — an invite nobody
        // used is forgotten with it (a used or expired one is kept: `InviteBook.cancel`).
        let release = InviteRelease(invites: invites, identity: identity)
        return .lines { writer in
            guard await writer.write(first) else { return }
            let outcome = await withTaskGroup(of: InviteBook.Outcome?.self) { group in
                group.addTask {
                    for await outcome in outcomes { return outcome }
                    return nil
                }
                group.addTask {
                    do {
                        try await invites.waitForExpiry(of: identity)
                        return .expired
                    } catch {
                        return nil
                    }
                }
                let first = await group.next() ?? nil
                group.cancelAll()
                return first
            }
            switch outcome {
            case .joined(let device): _ = await writer.write(InviteUpdate(joined: device))
            case .expired:
                invites.expire(identity)
                _ = await writer.write(InviteUpdate(expired: true))
            case nil: break
            }
            withExtendedLifetime(release) {}
        }
    }

    func sync(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        let sync = try request.decoded(SyncRequest.self)
        return .ok(
            try await AccountSync.sync(sync, store: accounts, sessions: sessions, directory: directory, defaultPort: peerPort())
        )
    }

    /// Tells the devices it has sessions with (the one holding the account key removes this
    /// one), then forgets the account: keys, certificate and state are deleted.
    func leave(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        let leave = request.body.readableBytes == 0 ? LeaveRequest() : try request.decoded(LeaveRequest.self)
        let account = try await accounts.info()
        var (told, removed) = ([String](), false)
        // A device that holds the key only until another took it over (`account recover` there)
        // is removed there, as a member is.
        let heldElsewhere = account.keyHolder.map { $0 != account.deviceID } ?? false
        if account.removal == nil, !account.isAdmin || heldElsewhere {
            (told, removed) = await AccountRequests.askToBeRemoved(store: accounts, sessions: sessions)
        }
        let name = try await accounts.forget(force: leave.force)
        await sessions.dropAll()
        return .ok(LeaveResponse(accountName: name, told: told, removedByKeyHolder: removed, wasRemoved: account.removal != nil))
    }

    /// A new recovery code, whose envelope the other devices get with the signed state at once.
    func recoveryCode(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        let (code, info) = try await accounts.makeRecoveryCode()
        await sessions.stateChanged()
        return .ok(RecoveryCodeResponse(code: code.text, account: info))
    }

    /// The account key restored here; the other devices learn who holds it now.
    func recover(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        let recover = try request.decoded(RecoverRequest.self)
        let code: RecoveryCode
        do {
            code = try RecoveryCode(parsing: recover.code)
        } catch {
            throw DaemonError(.invalidCode, error.describe(as: "recovery code"))
        }
        let info = try await accounts.recover(code)
        await sessions.stateChanged()
        return .ok(info)
    }

    /// NDJSON: the offer once the device heard it, then the account once that device holds the
    /// key, or that the offer expired. Hanging up before it was accepted withdraws it.
    func transferKey(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        let transfer = try request.decoded(KeyTransferRequest.self)
        if transfer.cancel == true {
            let info = try await accounts.cancelHandover()
            return .lines { writer in _ = await writer.write(KeyTransferUpdate(cancelled: info)) }
        }
        let (offer, id, done) = try await KeyTransferFlow.offer(transfer, store: accounts, sessions: sessions, directory: directory, defaultPort: peerPort())
        let withdraw = KeyOfferRelease(store: accounts, sessions: sessions, offerID: id, device: offer.deviceID)
        let (accounts, sessions) = (accounts, sessions)
        return .lines { writer in
            guard await writer.write(KeyTransferUpdate(offered: offer)) else { return }
            // Until the offer expires, and a moment more for a key accepted just before.
            let wait = Duration.microseconds(max(0, offer.expiresAt.microsecondsSinceEpoch - Timestamp.now().microsecondsSinceEpoch)) + .seconds(10)
            if let info = await done.value(within: wait) {
                _ = await writer.write(KeyTransferUpdate(transferred: info))
            } else if case .unconfirmed(let device) = await accounts.keyTransferOutcome(of: id) {
                _ = await writer.write(KeyTransferUpdate(unconfirmed: device))
            } else {
                // Not in this task: it is cancelled when the asker hangs up, and the device
                // offered the key must still hear that the offer is gone.
                sessions.spawn { await KeyTransferFlow.withdraw(id, from: offer.deviceID, store: accounts, sessions: sessions) }
                _ = await writer.write(KeyTransferUpdate(expired: true))
            }
            withExtendedLifetime(withdraw) {}
        }
    }

    /// Takes the key another device offered this one; the other devices learn who holds it.
    func acceptKey(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        .ok(try await KeyTransferFlow.accept(store: accounts, sessions: sessions, directory: directory, defaultPort: peerPort()))
    }

    /// A new account key; the devices with a session learn it at once, and ask for new
    /// certificates.
    func rotateKey(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        let info = try await accounts.rotateKey()
        await sessions.stateChanged()
        return .ok(info)
    }

    /// On the device holding the account key: any device. Elsewhere: this one, signed there.
    func renameDevice(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        let rename = try request.decoded(RenameDeviceRequest.self)
        if await accounts.isAdmin {
            let renamed = try await accounts.rename(rename.device, to: rename.name)
            await sessions.stateChanged()
            return .ok(renamed)
        }
        let me = try await accounts.info()
        if let removal = me.removal { throw DaemonError.removed(removal) }
        if let device = rename.device, device.lowercased() != me.deviceName.lowercased(), !me.deviceID.text.hasPrefix(device.lowercased()) {
            throw DaemonError(.notAccountAdmin, "only the device holding the account key renames other devices; run it there, or rename this one (handoffctl devices rename NEWNAME)")
        }
        let name = try AccountStore.validName(rename.name, what: "device name")
        return .ok(try await AccountRequests.askToBeRenamed(name, store: accounts, sessions: sessions))
    }

    func devices(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        return .ok(try await accounts.devices())
    }

    func removeDevice(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        let id = String(request.path.dropFirst(LocalAPIRoute.devices.count + 1))
        let removed = try await accounts.revoke(PathSegment.unescape(id))
        // Close its sessions now, and tell every connected device at once.
        await sessions.stateChanged()
        return .ok(removed)
    }
}

/// Withdraws a key offer when the answer that waits on it lets go (an accepted one stays until
/// the other device says it holds the key).
private final class KeyOfferRelease: Sendable {
    let store: AccountStore
    let sessions: MemberSessions
    let offerID: UUID
    let device: DeviceID

    init(store: AccountStore, sessions: MemberSessions, offerID: UUID, device: DeviceID) {
        self.store = store
        self.sessions = sessions
        self.offerID = offerID
        self.device = device
    }

    deinit {
        let (store, sessions, id, device) = (store, sessions, offerID, device)
        sessions.spawn { await KeyTransferFlow.withdraw(id, from: device, store: store, sessions: sessions) }
    }
}

/// Cancels an invite when the answer that waits on it lets go.
private final class InviteRelease: Sendable {
    let invites: InviteBook
    let identity: [UInt8]

    init(invites: InviteBook, identity: [UInt8]) {
        self.invites = invites
        self.identity = identity
    }

    deinit { invites.cancel(identity) }
}
