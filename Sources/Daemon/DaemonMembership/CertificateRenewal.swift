import DaemonAccounts
import DaemonSessions
import HandoffPeer
import Logging

/// Certificates made again after the account key was rotated (docs/security.md, "Rotating the
/// key"): a device whose certificate a retired root issued asks the key holder for a new one
/// over their session — when a session with it opens, and when a rotated state comes over one —
/// and the key holder answers devices the account lists.
package struct CertificateRenewal: PeerMessageHandler {
    let store: AccountStore
    let logger: Logger

    package init(store: AccountStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    package var kinds: Set<PeerMessage.Kind> { [.renewCertificate] }

    package func opened(_ talk: PeerTalk) async throws {
        await Self.renewIfNeeded(talk, store: store, logger: logger)
    }

    package func handle(_ message: PeerMessage, _ talk: PeerTalk) async throws {
        guard case .renewCertificate(let request, let publicKey) = message else { return }
        let certificate = await store.renewCertificate(for: talk.session.peerID, publicKey: publicKey) ?? []
        try await talk.send(.certificateRenewed(requestID: request, certificate: certificate))
    }

    /// Asks the other device of `talk` for a certificate if it holds the key and this device's
    /// is from a retired one. In the background: the answer comes over the same session, whose
    /// messages are read only once the caller returns.
    static func renewIfNeeded(_ talk: PeerTalk, store: AccountStore, logger: Logger) async {
        guard let publicKey = await store.certificateToRenew(with: talk.session.peerID) else { return }
        let session = talk.session
        talk.sessions.spawn {
            guard case .certificateRenewed(_, let der)? = try? await session.request({ .renewCertificate(requestID: $0, publicKey: publicKey) }) else {
                return logger.info("the key holder did not renew this device's certificate now", metadata: ["peer": "\(session.peerID.short)"])
            }
            let installed = der.isEmpty ? false : await store.installCertificate(der)
            if !installed {
                logger.warning("the key holder refused to renew this device's certificate", metadata: ["peer": "\(session.peerID.short)"])
            }
        }
    }
}
