#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonCore
import HandoffAPI
import HandoffModel
import HandoffPeer
import HandoffSystem
import HandoffTLS
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The TLS contexts of the current account, read synchronously by the listener and the dialer.
package final class PeerSecurity: Sendable {
    package init() {}

    package struct Contexts: Sendable {
        package let server: TLSContext
        package let client: TLSContext
        /// For continuation streams (their own ALPN).
        package let streamClient: TLSContext
        let trust: TrustPolicy
        package let deviceID: DeviceID
        /// This device's certificate (DER), as the contexts present it.
        let certificate: [UInt8]
    }

    private let current = Mutex<Contexts?>(nil)
    /// Outlives the contexts: the names we advertise under do not change with the account.
    package let hellos = MemberHelloGuard()

    package var contexts: Contexts? { current.withLock { $0 } }
    func set(_ contexts: Contexts?) { current.withLock { $0 = contexts } }
}

/// This device's account (docs/security.md): its keys and certificate, the account root, the signed
/// account state, invitations, and revocations. Every change is saved to the one account file
/// (atomically, 0600) before it takes effect.
package actor AccountStore {
    static let fileName = "account"
    static let deviceCertificateDays: Int64 = 3 * 365
    static let rootCertificateDays: Int64 = 20 * 365

    let path: String
    let logger: Logger
    package nonisolated let security: PeerSecurity
    package nonisolated let invites: InviteBook
    private let events: EventHub
    let registry: ActivityRegistry
    /// Set only by `install` (saved first), at start, and when the account is forgotten.
    var material: AccountMaterial? {
        didSet { published.withLock { $0 = material } }
    }
    /// `material` as last set, for readers that must not wait for the disk thread this actor
    /// runs on (`requireMembershipNow`).
    private nonisolated let published = Mutex<AccountMaterial?>(nil)
    /// The account key offered to another device, or by another device to this one.
    var transfers = KeyTransfers()

    /// Every change is saved with fsync before it takes effect: the actor runs on the disk
    /// thread, so a slow disk never holds up the event loop serving peers and apps.
    package nonisolated var unownedExecutor: UnownedSerialExecutor { DiskThread.shared.asUnownedSerialExecutor() }
    /// Tells the other features when the account changes (`.accountChanged`).
    let announce: Announce

    /// Certificates are valid from this long before they are made: devices' clocks disagree, and
    /// a wall clock may be set back (an NTP step, a dead RTC battery) — a device whose clock runs
    /// up to two days behind still accepts a certificate made a moment ago.
    static let clockSlackSeconds: Int64 = 2 * 86_400

    package init(
        stateDirectory: String, security: PeerSecurity, invites: InviteBook, events: EventHub, registry: ActivityRegistry,
        announce: @escaping Announce = { _ in }, logger: Logger
    ) {
        self.path = stateDirectory + "/" + AccountStore.fileName
        self.announce = announce
        self.logger = logger
        self.security = security
        self.invites = invites
        self.events = events
        self.registry = registry
        self.material = AccountStore.load(path: path, logger: logger)
        published.withLock { [material] in $0 = material }
        if let material {
            logger.info(
                "account loaded",
                metadata: ["account": "\(material.state.accountID.short)", "device": "\(material.deviceID.short)", "version": "\(material.state.version)"]
            )
        }
    }

    private static func load(path: String, logger: Logger) -> AccountMaterial? {
        do {
            guard let bytes = try PrivateFiles.read(path, maximumSize: 4 * 1024 * 1024) else { return nil }
            return try AccountMaterial(fileBytes: bytes)
        } catch {
            let aside = PrivateFiles.quarantine(path)
            logger.error("the account file is unreadable; moved it aside and started without an account", metadata: ["path": "\(aside)", "error": "\(error)"])
            return nil
        }
    }

    /// Settled once `start` is done: the saved account, if any, can connect.
    package let started = Once<Void>()

    /// Builds the TLS contexts for what was loaded. Called once the daemon runs.
    package func start() async {
        defer { started.settle(()) }
        guard let material else { return }
        do {
            try await install(material, saving: false)
        } catch {
            logger.error("cannot set up TLS for the saved account", metadata: ["error": "\(error)"])
        }
    }

    // MARK: Reading

    package func info(now: Timestamp = .now()) throws(DaemonError) -> AccountInfo {
        var info = try requireAccount().info
        info.keyOffer = transfers.incomingOffer(now: now)?.from
        info.keyOfferedTo = info.keyHandedTo == nil ? transfers.outgoingOffer(now: now)?.to : nil
        return info
    }

    package func devices() throws(DaemonError) -> DevicesResponse {
        let m = try requireAccount()
        return DevicesResponse(
            stateVersion: m.state.version,
            devices: m.state.devices.map { DeviceInfo(id: $0.id, name: $0.name, addedAt: $0.addedAt, isThisDevice: $0.id == m.deviceID) },
            revoked: m.state.revoked
        )
    }

    package func hello() -> PeerHello? {
        guard let m = material else { return nil }
        return PeerHello(
            deviceID: m.deviceID, deviceName: m.deviceName, accountStateVersion: m.state.version, clock: .now(),
            // Only once rotated: a hello with it is one older versions refuse (trailing bytes).
            keyRotations: m.chain.links.isEmpty ? nil : UInt64(m.chain.links.count)
        )
    }

    /// A device of the account as events name it (its id's start when the state does not list it).
    package func peerRef(_ id: DeviceID) -> LocalEvent.PeerRef {
        LocalEvent.PeerRef(id: id, name: material?.state.devices.first { $0.id == id }?.name ?? id.short)
    }

    var signedState: SignedAccountState? { material?.signedState }
    package var currentState: AccountState? { material?.state }
    /// This device was removed from its account (it learned so from another device).
    package var isRevokedSelf: Bool { material?.isRevoked ?? false }
    package var isAdmin: Bool { material?.isAdmin ?? false }

    /// A member session with `peer` may run: this device is still a member and `peer` was not
    /// removed. Asked once a session holds its slot: a removal saved before that is seen here, one
    /// saved after sweeps the slot and finds it.
    package func allowsSession(with peer: DeviceID) -> Bool {
        guard let m = material, !m.isRevoked else { return false }
        return !m.state.isRevoked(peer)
    }
    package var removalInfo: RemovalInfo? { material?.removalInfo }

    /// What `peer`, behind, should get: the signed state, and the secret that goes with it only
    /// while a session with it may run: asked and answered
    /// in one step, so that a device removed while its session greets (before its slot is
    /// checked), or one that asked to leave, learns it is out but never gets the secret its
    /// removal made.
    package func stateToShare(with peer: DeviceID) -> (SignedAccountState, secret: [UInt8]?)? {
        guard let m = material else { return nil }
        return (m.signedState, allowsSession(with: peer) ? m.accountSecret : nil)
    }

    /// The state, as signed, and its secret, in one step (for telling every session of a change).
    package func stateWithSecret() -> (state: AccountState, signed: SignedAccountState, secret: [UInt8])? {
        guard let m = material else { return nil }
        return (m.state, m.signedState, m.accountSecret)
    }

    /// The keys for adverts: the current secret's, and the previous one's so that a device that
    /// has not heard of the latest removal is still recognised (and then told).
    package var advertKeys: [AdvertKeys] {
        guard let m = material else { return [] }
        return m.accountSecrets.map(AdvertKeys.init(accountSecret:))
    }
    package var stateVersion: UInt64 { material?.state.version ?? 0 }
    /// Where this device's state stands among the account's (`AccountStateRank`).
    package var stateRank: AccountStateRank {
        AccountStateRank(rotations: UInt64(material?.chain.links.count ?? 0), version: material?.state.version ?? 0)
    }

    /// A link to `activity`, current on `device` (docs/apps.md, "Links"): sealed with the
    /// current secret.
    package func link(to activity: Activity, on device: DeviceID) throws(DaemonError) -> (link: String, target: LinkTarget) {
        let m = try requireMembership()
        let target = LinkTarget(account: m.state.accountID, device: device, activity: activity)
        return (LinkSeal.seal(target, accountSecret: m.accountSecret), target)
    }

    /// What `link` names, if this account's devices made it.
    package func openLink(_ link: String) throws(DaemonError) -> LinkTarget {
        let m = try requireMembership()
        guard let target = LinkSeal.open(String(link.filter { !$0.isWhitespace }), accountSecrets: m.accountSecrets),
            target.account == m.state.accountID
        else {
            throw DaemonError(
                .invalidLink,
                "that is not a link of this account's devices (links start with \(LinkSeal.prefix); one made before two device removals no longer opens)"
            )
        }
        return target
    }

    /// The account key, to sign with: none while it is being handed to another device
    /// (`KeyTransfers`, `AccountMaterial.handover`), so that the two never sign diverging states.
    func signingKey(_ m: AccountMaterial) -> SigningKey? {
        transfers.isHandingOver || m.handover != nil ? nil : m.rootKey
    }

    /// The account key to sign with, or `refusal` — or, while the key is being handed over,
    /// what to do about that.
    func signingKey(_ m: AccountMaterial, or refusal: DaemonError) throws(DaemonError) -> SigningKey {
        if let key = signingKey(m) { return key }
        if m.rootKey != nil, let to = m.handover?.to ?? transfers.outgoing?.to.deviceID {
            let name = m.state.device(to)?.name ?? to.short
            let from = (m.handover.map { min($0.at, .now()) } ?? .now()).adding(seconds: KeyTransfers.receiptWindowSeconds)
            throw DaemonError(
                .notAccountAdmin,
                "the account key was handed to \(name), which has not said yet that it stored it; until it does this device signs nothing (from \(from.rfc3339), handoffctl account sync \(name) settles it; if \(name) is gone: handoffctl account transfer-key --cancel)"
            )
        }
        throw refusal
    }

    private func requireAccount() throws(DaemonError) -> AccountMaterial {
        guard let material else {
            throw .noAccount
        }
        return material
    }

    /// The account, for what only a member may do: a removed device is told at once (exit 32),
    /// with who removed it and how to rejoin, instead of trying the network.
    package func requireMembership() throws(DaemonError) -> AccountMaterial {
        try Self.membership(material)
    }

    /// As `requireMembership`, without a hop to the disk thread and back (two thread wake-ups):
    /// `continue` asks it first (docs/benchmarks.md, "Starting handoffctl").
    package nonisolated func requireMembershipNow() throws(DaemonError) -> AccountMaterial {
        try Self.membership(published.withLock { $0 })
    }

    /// This device's id and name (nil without an account), without a hop to the disk thread.
    package nonisolated var deviceNow: (id: DeviceID, name: String)? {
        published.withLock { m in m.map { ($0.deviceID, $0.deviceName) } }
    }

    private static func membership(_ material: AccountMaterial?) throws(DaemonError) -> AccountMaterial {
        guard let material else { throw .noAccount }
        if let removal = material.removalInfo {
            throw .removed(removal)
        }
        return material
    }

    /// The signed notice to give `id`, a device the account removed (nil if it is not, or the
    /// removal predates signed notices).
    package func removalNotice(for id: DeviceID) -> RemovalNotice? {
        guard let notice = material?.state.notice(for: id), !notice.signature.isEmpty else { return nil }
        return notice
    }

    // MARK: Creating and joining

    package func create(_ request: CreateAccountRequest, now: Timestamp = .now()) async throws(DaemonError) -> AccountInfo {
        guard material == nil else {
            throw .alreadyMember
        }
        let accountName = try Self.validName(request.name ?? Self.defaultAccountName(), what: "account name")
        let deviceName = try Self.validName(request.deviceName ?? Self.hostName(), what: "device name")
        do {
            let rootKey = try SigningKey.generate()
            let root = try Certificate.makeAccountRoot(
                key: rootKey, notBefore: now.adding(seconds: -Self.clockSlackSeconds), notAfter: now.adding(seconds: 86_400 * Self.rootCertificateDays)
            )
            let chain = try RootChain(first: root)
            let deviceKey = try SigningKey.generate()
            let certificate = try Certificate.issueDevice(
                publicKey: deviceKey.publicKey, root: root, rootKey: rootKey,
                notBefore: now.adding(seconds: -Self.clockSlackSeconds), notAfter: now.adding(seconds: 86_400 * Self.deviceCertificateDays)
            )
            let state = AccountState(
                accountID: rootKey.id, name: accountName, version: 1, issuedAt: now,
                devices: [.init(id: deviceKey.id, name: deviceName, addedAt: now)], revoked: [], keyHolder: deviceKey.id
            )
            let material = AccountMaterial(
                deviceName: deviceName,
                identity: try DeviceIdentity(key: deviceKey, certificate: certificate),
                chain: chain,
                rootKey: rootKey,
                accountSecret: Crypto.randomBytes(32),
                signedState: try AccountMaterial.sign(state, with: rootKey, chain: chain),
                state: state
            )
            try await install(material, saving: true)
            logger.info("account created", metadata: ["account": "\(state.accountID.short)", "device": "\(deviceKey.id.short)"])
            return material.info
        } catch let e as DaemonError {
            throw e
        } catch {
            throw DaemonError(.internalError, "cannot create the account: \(error)")
        }
    }

    /// Keeps what a join brought back (see `AccountJoiner`).
    package func completeJoin(_ material: AccountMaterial) async throws(DaemonError) -> AccountInfo {
        guard self.material == nil else {
            throw DaemonError(.accountExists, "this device joined an account meanwhile (handoffctl account show)")
        }
        try await install(material, saving: true)
        logger.info("joined account", metadata: ["account": "\(material.state.accountID.short)", "device": "\(material.deviceID.short)"])
        return material.info
    }

    package var isMember: Bool { material != nil }

    // MARK: Inviting

    package func invite() throws(DaemonError) -> (code: InviteCode, expiresAt: Timestamp, outcome: AsyncStream<InviteBook.Outcome>) {
        let m = try requireAccount()
        _ = try signingKey(m, or: DaemonError(.notAccountAdmin, "only the device holding the account key can invite; run handoffctl account invite there"))
        return invites.create()
    }

    /// A joiner proved its code and asks for a certificate.
    package func handleJoin(pskIdentity: [UInt8], request: JoinRequest, now: Timestamp = .now()) async -> PeerMessage {
        guard let m = material, let rootKey = signingKey(m) else {
            return .joinRefused(JoinRefusal(.internalError, "this device cannot invite (it does not hold the account key)"))
        }
        switch invites.claim(pskIdentity) {
        case .granted: break
        case .alreadyUsed:
            return .joinRefused(JoinRefusal(.alreadyUsed, "this invite code was already used; ask for a new one (handoffctl account invite)"))
        case .expired:
            let at = invites.expiry(of: pskIdentity).map { " at \($0.rfc3339)" } ?? ""
            return .joinRefused(JoinRefusal(.expired, "this invite code expired\(at); ask for a new one (handoffctl account invite)"))
        case .unknown:
            return .joinRefused(JoinRefusal(.invalidRequest, "no such invite"))
        }
        guard request.publicKey.count == 32, let name = try? Self.validName(request.deviceName, what: "device name") else {
            return .joinRefused(JoinRefusal(.invalidRequest, "the join request is malformed"))
        }
        let deviceID = DeviceID(digest: Crypto.sha256(request.publicKey))
        guard !m.state.isRevoked(deviceID), deviceID != m.deviceID else {
            return .joinRefused(JoinRefusal(.invalidRequest, "that device key cannot join this account"))
        }
        do {
            let certificate = try Certificate.issueDevice(
                publicKey: request.publicKey, root: m.root, rootKey: rootKey,
                notBefore: now.adding(seconds: -Self.clockSlackSeconds), notAfter: now.adding(seconds: 86_400 * Self.deviceCertificateDays)
            )
            var next = m
            next.state = m.state.adding(.init(id: deviceID, name: name, addedAt: now), at: now)
            next.signedState = try AccountMaterial.sign(next.state, with: rootKey, chain: next.chain)
            try await install(next, saving: true)
            let device = DeviceInfo(id: deviceID, name: name, addedAt: now, isThisDevice: false)
            invites.complete(pskIdentity, joined: device)
            logger.info("device joined", metadata: ["device": "\(deviceID.short)", "version": "\(next.state.version)"])
            return .joinAccepted(
                JoinAccepted(deviceCertificate: certificate.der, rootCertificate: m.chain.first.der, accountState: next.signedState, accountSecret: m.accountSecret)
            )
        } catch {
            logger.error("cannot admit a joining device", metadata: ["error": "\(error)"])
            return .joinRefused(JoinRefusal(.internalError, "the inviting device failed to add this one; try again"))
        }
    }

    // MARK: Revoking and learning

    /// Removes a device (id or unique prefix) from the account for good.
    package func revoke(_ text: String, now: Timestamp = .now()) async throws(DaemonError) -> RevokedDeviceInfo {
        let m = try requireAccount()
        let rootKey = try signingKey(m, or: DaemonError(.notAccountAdmin, "only the device holding the account key removes devices; run handoffctl devices remove there"))
        let device = try findDevice(text, in: m.state)
        guard device.id != m.deviceID else {
            throw DaemonError(.badRequest, "this device holds the account key and cannot remove itself; to leave the account, handoffctl account leave")
        }
        return try await remove(device, by: m.state.device(m.deviceID) ?? .init(id: m.deviceID, name: m.deviceName, addedAt: now), rootKey: rootKey, now: now)
    }

    /// A member asked to be removed (`account leave` there): done here if this device holds the
    /// account key. Returns whether it was.
    package func removeLeaving(_ id: DeviceID, now: Timestamp = .now()) async -> Bool {
        guard let m = material, let rootKey = signingKey(m), let device = m.state.device(id), id != m.deviceID else { return false }
        return (try? await remove(device, by: device, rootKey: rootKey, now: now)) != nil
    }

    /// The removal itself: a new state, its notice signed, a new account secret (the removed
    /// device must not read the account's adverts any more).
    private func remove(_ device: AccountState.Device, by: AccountState.Device, rootKey: SigningKey, now: Timestamp) async throws(DaemonError)
        -> RevokedDeviceInfo
    {
        guard let m = material else { throw .noAccount }
        var next = m
        next.previousAccountSecret = m.accountSecret
        next.accountSecret = Crypto.randomBytes(32)
        do {
            (next.state, next.signedState) = try AccountMaterial.signRemoval(of: device.id, in: m.state.revoking(device.id, at: now, by: by), with: rootKey, chain: m.chain)
        } catch {
            throw DaemonError(.internalError, "cannot sign the account state: \(error)")
        }
        try await install(next, saving: true)
        logger.notice("device removed from the account", metadata: ["device": "\(device.id.short)", "version": "\(next.state.version)", "left": "\(by.id == device.id)"])
        return next.state.revoked.first { $0.id == device.id } ?? RevokedDeviceInfo(id: device.id, name: device.name, revokedAt: now)
    }

    /// A member says this device was removed: kept (and nothing done with the account any more)
    /// if the account's root signed it. Returns whether it was news.
    package func learnRemoval(_ notice: RemovalNotice) async -> Bool {
        guard var next = material, next.removal == nil, notice.deviceID == next.deviceID, AccountMaterial.verify(notice, chain: next.chain) else {
            return false
        }
        next.removal = notice
        do {
            try await install(next, saving: true)
        } catch {
            logger.error("cannot save the removal notice", metadata: ["error": "\(error)"])
            return false
        }
        logger.warning("this device was removed from its account", metadata: ["by": "\(notice.byName ?? "?")", "at": "\(notice.removedAt.rfc3339)"])
        return true
    }

    // MARK: Leaving and renaming

    /// Forgets the account on this device: its keys and state are deleted. The caller has told
    /// the other devices first.
    package func forget(force: Bool) async throws(DaemonError) -> String {
        let m = try requireAccount()
        // Another device holds the key too (it recovered it): the account does not need this one.
        let heldElsewhere = m.state.keyHolder.map { $0 != m.deviceID && m.state.device($0) != nil } ?? false
        if m.isAdmin, !force, !heldElsewhere, m.state.devices.contains(where: { $0.id != m.deviceID }) {
            let others = m.state.devices.filter { $0.id != m.deviceID }.map(\.name).joined(separator: ", ")
            let handOver =
                m.state.recovery == nil
                ? "make a recovery code here (handoffctl account recovery-code) and restore the key on another device (handoffctl account recover CODE)"
                : "restore the key on another device with the recovery code (handoffctl account recover CODE)"
            throw DaemonError(
                .accountExists,
                "this device holds the account key: \(handOver), or remove the other devices first (\(others): handoffctl devices remove NAME), or leave with --abandon and they keep an account nobody can change"
            )
        }
        if unlink(path) != 0, errno != ENOENT {
            throw DaemonError(.internalError, "cannot delete the account file \(path): \(SystemCall.describe(errno))")
        }
        unlink(attemptsPath)
        PrivateFiles.syncDirectory(of: path)
        material = nil
        security.set(nil)
        await registry.setDeviceID(nil)
        logger.notice("left the account", metadata: ["account": "\(m.state.accountID.short)"])
        announce(.accountChanged)
        return m.state.name
    }

    /// Renames a device in the account (this device holds the key): a new signed state.
    package func rename(_ text: String?, to newName: String, now: Timestamp = .now()) async throws(DaemonError) -> DeviceInfo {
        let m = try requireMembership()
        let rootKey = try signingKey(m, or: DaemonError(.notAccountAdmin, "only the device holding the account key renames devices"))
        let name = try Self.validName(newName, what: "device name")
        let device: AccountState.Device
        if let text {
            device = try findDevice(text, in: m.state)
        } else {
            device = m.state.device(m.deviceID) ?? .init(id: m.deviceID, name: m.deviceName, addedAt: now)
        }
        guard !m.state.devices.contains(where: { $0.id != device.id && $0.name.lowercased() == name.lowercased() }) else {
            throw DaemonError(.accountExists, "another device of the account is called \(displayQuoted(name)); choose another name")
        }
        var next = m
        next.state = m.state.renaming(device.id, to: name, at: now)
        if device.id == m.deviceID { next.deviceName = name }
        do {
            next.signedState = try AccountMaterial.sign(next.state, with: rootKey, chain: next.chain)
        } catch {
            throw DaemonError(.internalError, "cannot sign the account state: \(error)")
        }
        try await install(next, saving: true)
        logger.notice("device renamed", metadata: ["device": "\(device.id.short)", "version": "\(next.state.version)"])
        return DeviceInfo(id: device.id, name: name, addedAt: device.addedAt, isThisDevice: device.id == m.deviceID)
    }

    static func duration(_ seconds: Int64) -> String {
        seconds < 120 ? "\(seconds) s" : seconds < 7200 ? "\((seconds + 59) / 60) min" : "\((seconds + 3599) / 3600) h"
    }

    /// The name the account state gives this device, once a newer state says so.
    func adoptingOwnName(_ next: inout AccountMaterial) {
        if let mine = next.state.device(next.deviceID) { next.deviceName = mine.name }
    }

    /// A device of the account by name (any case) or the start of its id.
    func findDevice(_ text: String, in state: AccountState) throws(DaemonError) -> AccountState.Device {
        let needle = text.lowercased()
        let matches = state.devices.filter { $0.id.text.hasPrefix(needle) || $0.name.lowercased() == needle }
        guard !needle.isEmpty, let device = matches.first else {
            throw DaemonError(.unknownDevice, "no device of this account matches \(displayQuoted(text)); see handoffctl devices")
        }
        guard matches.count == 1 else {
            throw DaemonError(.ambiguousDevice, "\(displayQuoted(text)) matches \(matches.count) devices; give more of the id")
        }
        return device
    }

    package enum Adoption: Equatable {
        case updated
        case notNewer
        case invalid
    }

    /// A member sent its account state: keep it if it is ours, validly signed, and newer, with the
    /// account secret it came with.
    package func adopt(_ signed: SignedAccountState, accountSecret: [UInt8]) async -> Adoption {
        guard let m = material, let (state, chain, current) = AccountMaterial.verify(signed, chain: m.chain), accountSecret.count == 32 else { return .invalid }
        // Signed by a retired root: older than what this device knows, or made with a retired
        // key (a stolen device that held it): never taken on, whatever its version. A state of
        // a later rotation comes after any of an earlier one (`AccountStateRank`).
        guard current, AccountStateRank(rotations: UInt64(chain.links.count), version: state.version) > stateRank else { return .notNewer }
        var next = m
        next.state = state
        next.signedState = signed
        let rotated = chain.links.count > m.chain.links.count
        if rotated {
            next.chain = chain
            // A key from before the rotation signs nothing any more.
            if next.rootKey.map({ $0.publicKey != chain.current.publicKey }) == true { next.rootKey = nil }
        }
        adoptingOwnName(&next)
        // Another device took the key over (`account recover` there): one key holder, so that
        // two never sign diverging states. This device's copy goes.
        // (As it was before any rotation branch above dropped it.)
        let handedOver = m.rootKey != nil && state.keyHolder.map { $0 != next.deviceID } == true
        if handedOver { next.rootKey = nil }
        // Whatever was handed over is settled by a newer state: the receiver's, naming it, or
        // one that shows it never took the key.
        next.handover = nil
        if accountSecret != m.accountSecret {
            next.previousAccountSecret = m.accountSecret
            next.accountSecret = accountSecret
        }
        // The offer this state settles is the one handed over now, not one handed over while
        // the save below waits.
        let settling = transfers.handedOverOffer
        do {
            try await install(next, saving: true)
        } catch {
            logger.error("cannot save a newer account state", metadata: ["error": "\(error)"])
            return .notNewer
        }
        // Only once saved: the offers as this state leaves them.
        let transfer = settling.flatMap { transfers.settle(offerID: $0) }
        if handedOver, transfer == nil { transfers.forgetOutgoing() }
        // An offer to this device from a device that no longer holds the key is void.
        if let offer = transfers.incomingOffer(now: .now()), state.keyHolder.map({ $0 != offer.from.deviceID }) == true { transfers.forgetIncoming() }
        logger.info("learned a newer account state", metadata: ["version": "\(state.version)", "revoked": "\(state.revoked.count)"])
        if handedOver {
            logger.notice("another device holds the account key now; this device's copy was deleted")
            // Told as done only if it went where it was offered (another device could have
            // recovered the key meanwhile).
            if let transfer, state.keyHolder == transfer.to.deviceID { transfer.done.settle(next.info) }
        }
        if next.isRevoked { logger.warning("this device has been removed from its account") }
        return .updated
    }
}
