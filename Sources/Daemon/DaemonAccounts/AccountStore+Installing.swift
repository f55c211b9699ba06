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

extension AccountStore {
    // MARK: Installing

    /// Saves (when asked) and then makes `material` current: trust, TLS contexts, activity origin.
    func install(_ next: AccountMaterial, saving: Bool) async throws(DaemonError) {
        // Never saved: a state its own root chain does not vouch for (the file would not load).
        guard AccountMaterial.verify(next.signedState, chain: next.chain)?.current == true else {
            logger.error("refused to keep an account state its root chain does not vouch for")
            throw DaemonError(.internalError, "the account state does not verify against its own key; nothing was changed")
        }
        if saving {
            do {
                try PrivateFiles.writeAtomically(try next.encodedFile(), to: path)
            } catch {
                logger.error("cannot save the account", metadata: ["error": "\(error)"])
                throw DaemonError(.internalError, "cannot save the account in \(path): \(error)")
            }
        }
        let revoked = Set(next.state.revoked.map(\.id))
        let listed = Set(next.state.devices.map(\.id))
        do {
            // The same device, certificate and roots: the contexts stay (and the sessions they
            // resume); a rotation or a new certificate makes new ones.
            if let existing = security.contexts, existing.deviceID == next.deviceID, existing.trust.accountID == next.state.accountID,
                existing.certificate == next.identity.certificate.der, existing.trust.chain.links.count == next.chain.links.count
            {
                existing.trust.setRevoked(revoked)
                existing.trust.setListed(listed)
                existing.trust.setAccountSecrets(next.accountSecrets)
            } else {
                let trust = try TrustPolicy(chain: next.chain, accountSecrets: next.accountSecrets, revoked: revoked, listed: listed)
                security.set(
                    PeerSecurity.Contexts(
                        server: try .memberServer(identity: next.identity, trust: trust, hellos: security.hellos, joins: invites),
                        client: try .memberClient(identity: next.identity, trust: trust),
                        streamClient: try .memberClient(identity: next.identity, trust: trust, alpn: HandoffALPN.stream),
                        trust: trust,
                        deviceID: next.deviceID,
                        certificate: next.identity.certificate.der
                    )
                )
            }
        } catch {
            throw DaemonError(.internalError, "cannot set up TLS for the account: \(error)")
        }
        material = next
        await registry.setDeviceID(next.deviceID.text)
        announce(.accountChanged)
    }

    // MARK: Names

    package static func validName(_ name: String, what: String) throws(DaemonError) -> String {
        let trimmed = String(name.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
        guard !trimmed.isEmpty, trimmed.utf8.count <= 64, !trimmed.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw DaemonError(.badRequest, "the \(what) must be 1–64 bytes of text on one line")
        }
        return trimmed
    }

    package static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "device" }
        let name = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return name.isEmpty ? "device" : name
    }

    static func defaultAccountName() -> String {
        if let pw = getpwuid(geteuid()), let user = pw.pointee.pw_name {
            return "\(String(cString: user))'s devices"
        }
        return "my devices"
    }
}
