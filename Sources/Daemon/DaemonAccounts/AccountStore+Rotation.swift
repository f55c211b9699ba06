import DaemonCore
import HandoffAPI
import HandoffModel
import HandoffTLS

/// `account rotate-key` (docs/security.md, "Rotating the key"): a new root key, linked from the
/// current one (`RootChain`), and devices certified again by it as they reach the key holder.
extension AccountStore {
    /// On the key holder: a new root key. This device's certificate is made again at once; the
    /// others' when they next talk to this device (`renewCertificate`); until then the devices
    /// the state lists are accepted with their old certificates, and no others. The recovery
    /// code goes with the retired key.
    package func rotateKey(now: Timestamp = .now()) async throws(DaemonError) -> AccountInfo {
        let m = try requireMembership()
        let currentKey = try signingKey(m, or: DaemonError(.notAccountAdmin, "only the device holding the account key rotates it; run handoffctl account rotate-key there"))
        var next = m
        do {
            let key = try SigningKey.generate()
            next.chain = try m.chain.rotated(
                to: key, currentKey: currentKey, notBefore: now.adding(seconds: -Self.clockSlackSeconds), notAfter: now.adding(seconds: 86_400 * Self.rootCertificateDays)
            )
            next.rootKey = key
            next.identity = try DeviceIdentity(key: m.identity.key, certificate: try issue(m.identity.key.publicKey, chain: next.chain, key: key, now: now))
            next.state = m.state.rekeyed(by: m.deviceID, at: now)
            next.signedState = try AccountMaterial.sign(next.state, with: key, chain: next.chain)
        } catch {
            throw DaemonError(.internalError, "cannot make a new account key: \(error)")
        }
        try await install(next, saving: true)
        logger.notice("the account key was rotated", metadata: ["rotations": "\(next.chain.links.count)", "version": "\(next.state.version)"])
        return next.info
    }

    /// On the key holder: a certificate from the current root for `peer`, whose public key
    /// `publicKey` is (its id is the key's hash), if the account lists it. Nil otherwise.
    package func renewCertificate(for peer: DeviceID, publicKey: [UInt8], now: Timestamp = .now()) -> [UInt8]? {
        guard let m = material, let key = signingKey(m), !m.isRevoked, DeviceID(digest: Crypto.sha256(publicKey)) == peer, m.state.device(peer) != nil,
            let certificate = try? issue(publicKey, chain: m.chain, key: key, now: now)
        else { return nil }
        logger.info("certified a device again with the current account key", metadata: ["device": "\(peer.short)"])
        return certificate.der
    }

    /// Whether this device should ask `peer` for a new certificate: its own is from a retired
    /// key, and `peer` holds the current one. With its public key, to ask with.
    package func certificateToRenew(with peer: DeviceID) -> [UInt8]? {
        guard let m = material, !m.isRevoked, m.state.keyHolder == peer, m.certificateFromRetiredKey else { return nil }
        return m.identity.key.publicKey
    }

    /// The key holder sent a certificate: kept if it is for this device's key and from the
    /// current root. Returns whether it was.
    package func installCertificate(_ der: [UInt8]) async -> Bool {
        guard var next = material, let certificate = try? Certificate(der: der), certificate.publicKey == next.identity.key.publicKey,
            let root = next.chain.current.publicKey, certificate.isIssued(byKey: root), let identity = try? DeviceIdentity(key: next.identity.key, certificate: certificate)
        else { return false }
        next.identity = identity
        do {
            try await install(next, saving: true)
        } catch {
            logger.error("cannot save the renewed certificate", metadata: ["error": "\(error)"])
            return false
        }
        logger.notice("this device was certified again with the current account key")
        return true
    }

    /// A device that just took the key (`recover`, `accept-key`) and still has a certificate
    /// from a retired root certifies itself again: no other device will.
    func recertifySelf(_ next: inout AccountMaterial, now: Timestamp) throws(DaemonError) {
        guard next.certificateFromRetiredKey, let key = next.rootKey else { return }
        do {
            next.identity = try DeviceIdentity(key: next.identity.key, certificate: try issue(next.identity.key.publicKey, chain: next.chain, key: key, now: now))
        } catch {
            throw DaemonError(.internalError, "cannot certify this device with the account key: \(error)")
        }
    }

    private func issue(_ publicKey: [UInt8], chain: RootChain, key: SigningKey, now: Timestamp) throws(TLSError) -> Certificate {
        try Certificate.issueDevice(
            publicKey: publicKey, root: chain.current, rootKey: key,
            notBefore: now.adding(seconds: -Self.clockSlackSeconds), notAfter: now.adding(seconds: 86_400 * Self.deviceCertificateDays)
        )
    }
}
