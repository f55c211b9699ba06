import DaemonAccounts
import DaemonSessions
import HandoffPeer
import Logging

/// The account's peer messages on member sessions: its newer state passed on (`accountState`),
/// asked for (`getAccountState`), a device asking to leave or to be renamed (answered with the
/// state after it), and a removal notice for this device (`removed`), which ends the session.
package struct AccountMessages: PeerMessageHandler {
    let store: AccountStore
    let logger: Logger

    package init(store: AccountStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    package var kinds: Set<PeerMessage.Kind> { [.accountState, .getAccountState, .leaving, .renameRequest, .removed] }

    package func handle(_ message: PeerMessage, _ talk: PeerTalk) async throws {
        let peer = talk.session.peerID
        switch message {
        case .accountState(let signed, let secret):
            if await store.adopt(signed, accountSecret: secret) == .updated {
                await talk.sessions.stateChanged()
                // A rotated key: the key holder certifies this device again.
                await CertificateRenewal.renewIfNeeded(talk, store: store, logger: logger)
            }
        case .getAccountState(let id):
            try await sendState(answering: id, talk)
        case .leaving(let id):
            // Only the device holding the account key can do it; the others just answer.
            let removed = await store.removeLeaving(peer)
            // The leaver learns that it is out — never the secret made new by its removal.
            try await sendState(answering: id, talk)
            if removed { await talk.sessions.stateChanged() }
        case .renameRequest(let id, let name):
            let renamed = await store.isAdmin ? (try? await store.rename(peer.text, to: name)) : nil
            try await sendState(answering: id, talk)
            if renamed != nil { await talk.sessions.stateChanged() }
        case .removed(let notice):
            // Only a notice about this device, that verifies, ends anything; another is ignored.
            let learned = await store.learnRemoval(notice)
            let removedHere = await store.isRevokedSelf
            guard learned || removedHere else {
                logger.notice("ignored a removal notice that is not about this device or does not verify", metadata: ["peer": "\(peer.short)"])
                return
            }
            if learned { await talk.sessions.dropAll() }
            throw PeerSessionError.removed(notice)
        default:
            break
        }
    }

    private func sendState(answering id: UInt32, _ talk: PeerTalk) async throws {
        guard let (signed, secret) = await store.stateToShare(with: talk.session.peerID) else { throw PeerSessionError.noAccount }
        try await talk.send(.accountStateReply(requestID: id, signed, accountSecret: secret ?? []))
    }
}
