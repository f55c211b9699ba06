#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffModel
import HandoffTLS

/// Everything that makes this device a member of an account. Kept in one file written atomically,
/// so that no crash can leave a key without its certificate or a certificate without its state.
package struct AccountMaterial: Sendable {
    var deviceName: String
    var identity: DeviceIdentity
    /// The account's root keys (`RootChain`): the first root, then one link per rotation.
    var chain: RootChain
    /// The current root: it signs the state and device certificates.
    var root: Certificate { chain.current }
    /// Only on the device holding the account key (the one that created the account, or recovered
    /// it with a recovery code): it alone can invite and remove devices.
    var rootKey: SigningKey?
    /// Shared by the account's devices; keys advert sealing, account tags and the PSK every member
    /// connection opens with (never leaves TLS). Replaced when a device is removed; the previous one
    /// is kept to recognise devices that have not heard yet.
    var accountSecret: [UInt8]
    var previousAccountSecret: [UInt8]?
    /// The current secret, then the previous one if any.
    var accountSecrets: [[UInt8]] { [accountSecret] + (previousAccountSecret.map { [$0] } ?? []) }
    var signedState: SignedAccountState
    package var state: AccountState
    /// This device was removed from the account, as a member told it (signed by the root key).
    var removal: RemovalNotice?
    /// (On the key holder) the key went to another device with a state naming it, which has not
    /// said yet that it stored them: this device signs nothing until it settles (kept across a
    /// restart; docs/security.md, "Handing the key over").
    var handover: Handover?

    struct Handover: Sendable {
        var to: DeviceID
        var signed: SignedAccountState
        var secret: [UInt8]
        /// When the key left.
        var at: Timestamp
    }

    package init(
        deviceName: String, identity: DeviceIdentity, chain: RootChain, rootKey: SigningKey?, accountSecret: [UInt8],
        previousAccountSecret: [UInt8]? = nil, signedState: SignedAccountState, state: AccountState, removal: RemovalNotice? = nil
    ) {
        self.deviceName = deviceName
        self.identity = identity
        self.chain = chain
        self.rootKey = rootKey
        self.accountSecret = accountSecret
        self.previousAccountSecret = previousAccountSecret
        self.signedState = signedState
        self.state = state
        self.removal = removal
    }

    package var deviceID: DeviceID { identity.id }
    var isAdmin: Bool { rootKey != nil }
    /// Removed from the account: told so, or listed so in a state it learned.
    var isRevoked: Bool { removal != nil || state.isRevoked(deviceID) }

    /// What this device knows of its own removal, for people.
    var removalInfo: RemovalInfo? {
        guard let notice = removal ?? state.notice(for: deviceID) else { return nil }
        return RemovalInfo(accountName: notice.accountName, byName: notice.byName, byID: notice.byID, at: notice.removedAt, reason: notice.reason)
    }

    /// This device's certificate is from a retired root key (the key was rotated since).
    var certificateFromRetiredKey: Bool {
        !chain.links.isEmpty && !(chain.current.publicKey.map(identity.certificate.isIssued(byKey:)) ?? false)
    }

    var info: AccountInfo {
        var info = AccountInfo(
            accountID: state.accountID,
            accountName: state.name,
            deviceID: deviceID,
            deviceName: deviceName,
            isAdmin: isAdmin,
            stateVersion: state.version,
            deviceCount: state.devices.count,
            certificateExpires: identity.certificate.notAfter ?? Timestamp(microsecondsSinceEpoch: 0),
            removal: removalInfo,
            recoveryCodeMadeAt: state.recovery?.madeAt,
            keyHolder: state.keyHolder
        )
        info.keyRotations = chain.links.count
        info.certificateFromRetiredKey = certificateFromRetiredKey
        info.keyHandedTo = handover?.to
        return info
    }

    /// A signed state checked against this account's root chain, followed as far as the
    /// state's links lead (`RootChain.following`): the state, the chain, and whether the root
    /// that signed it is the chain's current one. A state signed by a retired root — older, or
    /// made with a retired key — is never taken on (`adopt`).
    package static func verify(_ signed: SignedAccountState, chain: RootChain) -> (state: AccountState, chain: RootChain, current: Bool)? {
        guard let followed = chain.following(signed.rootLinks) else { return nil }
        let signer = followed.roots[min(signed.rootLinks.count, followed.links.count)]
        guard let key = signer.publicKey, SigningKey.verify(signature: signed.signature, message: signed.stateBytes, publicKey: key),
            let state = try? AccountState(decoding: signed.stateBytes), state.accountID == chain.accountID
        else { return nil }
        return (state, followed, signed.rootLinks.count == followed.links.count)
    }

    /// `state` signed by the current root key, with the chain's links.
    static func sign(_ state: AccountState, with rootKey: SigningKey, chain: RootChain) throws(TLSError) -> SignedAccountState {
        let bytes = state.encoded()
        return SignedAccountState(stateBytes: bytes, signature: try rootKey.sign(bytes), rootLinks: chain.linkDERs)
    }

    /// `state` with `id`'s removal notice signed, then the whole state signed.
    static func signRemoval(of id: DeviceID, in state: AccountState, with rootKey: SigningKey, chain: RootChain) throws(TLSError) -> (AccountState, SignedAccountState) {
        guard let notice = state.notice(for: id) else { return (state, try sign(state, with: rootKey, chain: chain)) }
        let signed = state.signingNotice(for: id, signature: try rootKey.sign(notice.signedBytes))
        return (signed, try sign(signed, with: rootKey, chain: chain))
    }

    /// A removal notice one of the account's roots really signed, for this account (a device
    /// removed before a rotation holds a notice from a retired root).
    static func verify(_ notice: RemovalNotice, chain: RootChain) -> Bool {
        guard notice.accountID == chain.accountID else { return false }
        return chain.roots.contains { root in
            root.publicKey.map { SigningKey.verify(signature: notice.signature, message: notice.signedBytes, publicKey: $0) } ?? false
        }
    }

    // MARK: The file

    /// `account` in the state directory, JSON, mode 0600. Holds private keys: never logged.
    struct File: Codable {
        var format = 1
        var deviceName: String
        var deviceKey: String
        var deviceCertificate: String
        var rootCertificate: String
        /// The root chain's links after the first root (base64 DER), once the key was rotated.
        var rootLinks: [String]?
        var rootKey: String?
        var accountSecret: String
        var previousAccountSecret: String?
        var accountState: String
        /// The removal notice, once this device was told (base64 of its encoding).
        var removal: String?
        /// A hand-over of the key not settled yet: the device, the state sent (base64 of its
        /// encoding) and its secret (base64).
        var handoverTo: String?
        var handoverState: String?
        var handoverSecret: String?
        var handoverAt: Int64?
    }

    func encodedFile() throws -> [UInt8] {
        let file = File(
            deviceName: deviceName,
            deviceKey: String(decoding: try identity.key.privateKeyPEM(), as: UTF8.self),
            deviceCertificate: String(decoding: identity.certificate.pem, as: UTF8.self),
            rootCertificate: String(decoding: chain.first.pem, as: UTF8.self),
            rootLinks: chain.links.isEmpty ? nil : chain.links.map { Data($0.der).base64EncodedString() },
            rootKey: try rootKey.map { String(decoding: try $0.privateKeyPEM(), as: UTF8.self) },
            accountSecret: Data(accountSecret).base64EncodedString(),
            previousAccountSecret: previousAccountSecret.map { Data($0).base64EncodedString() },
            accountState: Data(signedState.encoded()).base64EncodedString(),
            removal: removal.map { Data($0.encoded()).base64EncodedString() },
            handoverTo: handover?.to.text,
            handoverState: handover.map { Data($0.signed.encoded()).base64EncodedString() },
            handoverSecret: handover.map { Data($0.secret).base64EncodedString() },
            handoverAt: handover?.at.microsecondsSinceEpoch
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return Array(try encoder.encode(file))
    }

    struct LoadError: Error, CustomStringConvertible {
        var description: String
    }

    init(fileBytes: [UInt8]) throws {
        let file = try JSONDecoder().decode(File.self, from: Data(fileBytes))
        guard file.format == 1 else {
            throw LoadError(description: "the account file has format \(file.format); this handoff reads format 1 — update handoff")
        }
        let key = try SigningKey(privateKeyPEM: Array(file.deviceKey.utf8))
        let certificate = try Certificate(pem: Array(file.deviceCertificate.utf8))
        let first = try Certificate(pem: Array(file.rootCertificate.utf8))
        let links = try (file.rootLinks ?? []).map { text in
            guard let der = Data(base64Encoded: text) else { throw LoadError(description: "the account file's root links are not base64") }
            return Array(der)
        }
        guard let chain = try RootChain(first: first).following(links), chain.links.count == links.count else {
            throw LoadError(description: "the account file's root links do not follow on from its root")
        }
        guard let secret = Data(base64Encoded: file.accountSecret), let stateBytes = Data(base64Encoded: file.accountState) else {
            throw LoadError(description: "the account file's secret or state is not base64")
        }
        let signed = try SignedAccountState(decoding: Array(stateBytes))
        guard let (state, _, current) = AccountMaterial.verify(signed, chain: chain), current else {
            throw LoadError(description: "the account state in the account file does not verify against its root")
        }
        self.init(
            deviceName: file.deviceName,
            identity: try DeviceIdentity(key: key, certificate: certificate),
            chain: chain,
            rootKey: try file.rootKey.map { try SigningKey(privateKeyPEM: Array($0.utf8)) },
            accountSecret: Array(secret),
            previousAccountSecret: file.previousAccountSecret.flatMap { Data(base64Encoded: $0) }.map(Array.init),
            signedState: signed,
            state: state
        )
        if let text = file.removal, let bytes = Data(base64Encoded: text) {
            let notice = try RemovalNotice(decoding: Array(bytes))
            guard AccountMaterial.verify(notice, chain: chain), notice.deviceID == deviceID else {
                throw LoadError(description: "the removal notice in the account file does not verify against its root")
            }
            removal = notice
        }
        // A hand-over under way stays one, whatever is wrong with what was saved of it: this
        // device must not sign again on its own (`AccountStore.cancelHandover` is the way out).
        if let to = file.handoverTo.flatMap(DeviceID.init) {
            let signed = file.handoverState.flatMap { Data(base64Encoded: $0) }.flatMap { try? SignedAccountState(decoding: Array($0)) }
            handover = Handover(
                to: to, signed: signed ?? SignedAccountState(stateBytes: [], signature: []),
                secret: file.handoverSecret.flatMap { Data(base64Encoded: $0) }.map(Array.init) ?? [],
                // Unknown: counted from now, so that the receipt window is not skipped.
                at: file.handoverAt.map(Timestamp.init(microsecondsSinceEpoch:)) ?? .now()
            )
        }
    }

    init(
        deviceName: String, identity: DeviceIdentity, chain: RootChain, rootKey: SigningKey?, accountSecret: [UInt8],
        previousAccountSecret: [UInt8]? = nil, signedState: SignedAccountState, state: AccountState
    ) {
        self.previousAccountSecret = previousAccountSecret
        self.deviceName = deviceName
        self.identity = identity
        self.chain = chain
        self.rootKey = rootKey
        self.accountSecret = accountSecret
        self.signedState = signedState
        self.state = state
    }
}
