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
    var root: Certificate
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

    package init(
        deviceName: String, identity: DeviceIdentity, root: Certificate, rootKey: SigningKey?, accountSecret: [UInt8],
        previousAccountSecret: [UInt8]? = nil, signedState: SignedAccountState, state: AccountState, removal: RemovalNotice? = nil
    ) {
        self.deviceName = deviceName
        self.identity = identity
        self.root = root
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

    var info: AccountInfo {
        AccountInfo(
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
    }

    /// Checks a signed state against this account's root: signature, account, and decodability.
    package static func verify(_ signed: SignedAccountState, root: Certificate) -> AccountState? {
        guard let rootKey = root.publicKey, let accountID = root.keyID,
            SigningKey.verify(signature: signed.signature, message: signed.stateBytes, publicKey: rootKey),
            let state = try? AccountState(decoding: signed.stateBytes),
            state.accountID == accountID
        else { return nil }
        return state
    }

    static func sign(_ state: AccountState, with rootKey: SigningKey) throws(TLSError) -> SignedAccountState {
        let bytes = state.encoded()
        return SignedAccountState(stateBytes: bytes, signature: try rootKey.sign(bytes))
    }

    /// `state` with `id`'s removal notice signed, then the whole state signed.
    static func signRemoval(of id: DeviceID, in state: AccountState, with rootKey: SigningKey) throws(TLSError) -> (AccountState, SignedAccountState) {
        guard let notice = state.notice(for: id) else { return (state, try sign(state, with: rootKey)) }
        let signed = state.signingNotice(for: id, signature: try rootKey.sign(notice.signedBytes))
        return (signed, try sign(signed, with: rootKey))
    }

    /// A removal notice the account's root really signed, for this account.
    static func verify(_ notice: RemovalNotice, root: Certificate) -> Bool {
        guard let rootKey = root.publicKey, let accountID = root.keyID, notice.accountID == accountID else { return false }
        return SigningKey.verify(signature: notice.signature, message: notice.signedBytes, publicKey: rootKey)
    }

    // MARK: The file

    /// `account` in the state directory, JSON, mode 0600. Holds private keys: never logged.
    struct File: Codable {
        var format = 1
        var deviceName: String
        var deviceKey: String
        var deviceCertificate: String
        var rootCertificate: String
        var rootKey: String?
        var accountSecret: String
        var previousAccountSecret: String?
        var accountState: String
        /// The removal notice, once this device was told (base64 of its encoding).
        var removal: String?
    }

    func encodedFile() throws -> [UInt8] {
        let file = File(
            deviceName: deviceName,
            deviceKey: String(decoding: try identity.key.privateKeyPEM(), as: UTF8.self),
            deviceCertificate: String(decoding: identity.certificate.pem, as: UTF8.self),
            rootCertificate: String(decoding: root.pem, as: UTF8.self),
            rootKey: try rootKey.map { String(decoding: try $0.privateKeyPEM(), as: UTF8.self) },
            accountSecret: Data(accountSecret).base64EncodedString(),
            previousAccountSecret: previousAccountSecret.map { Data($0).base64EncodedString() },
            accountState: Data(signedState.encoded()).base64EncodedString(),
            removal: removal.map { Data($0.encoded()).base64EncodedString() }
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
        let root = try Certificate(pem: Array(file.rootCertificate.utf8))
        guard let secret = Data(base64Encoded: file.accountSecret), let stateBytes = Data(base64Encoded: file.accountState) else {
            throw LoadError(description: "the account file's secret or state is not base64")
        }
        let signed = try SignedAccountState(decoding: Array(stateBytes))
        guard let state = AccountMaterial.verify(signed, root: root) else {
            throw LoadError(description: "the account state in the account file does not verify against its root")
        }
        self.init(
            deviceName: file.deviceName,
            identity: try DeviceIdentity(key: key, certificate: certificate),
            root: root,
            rootKey: try file.rootKey.map { try SigningKey(privateKeyPEM: Array($0.utf8)) },
            accountSecret: Array(secret),
            previousAccountSecret: file.previousAccountSecret.flatMap { Data(base64Encoded: $0) }.map(Array.init),
            signedState: signed,
            state: state
        )
        if let text = file.removal, let bytes = Data(base64Encoded: text) {
            let notice = try RemovalNotice(decoding: Array(bytes))
            guard AccountMaterial.verify(notice, root: root), notice.deviceID == deviceID else {
                throw LoadError(description: "the removal notice in the account file does not verify against its root")
            }
            removal = notice
        }
    }

    init(
        deviceName: String, identity: DeviceIdentity, root: Certificate, rootKey: SigningKey?, accountSecret: [UInt8],
        previousAccountSecret: [UInt8]? = nil, signedState: SignedAccountState, state: AccountState
    ) {
        self.previousAccountSecret = previousAccountSecret
        self.deviceName = deviceName
        self.identity = identity
        self.root = root
        self.rootKey = rootKey
        self.accountSecret = accountSecret
        self.signedState = signedState
        self.state = state
    }
}
