#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonAccounts
import DaemonCore
import DaemonDiscovery
import DaemonSessions
import HandoffAPI
import HandoffModel
import HandoffPeer
import Logging

/// The account key handed over on member sessions (docs/security.md, "Handing the key over"):
///
///     holder                                  other device
///       keyOffer(offer, expiresAt)     ─────▶   shown in account show / status
///                                               (its user: account accept-key)
///       ◀─────  keyAccept(request, offer)
///       keyHandover(key, state naming it) ───▶   written to disk
///       ◀─────  keyStored(offer)
///       takes on that state, deletes its copy
package struct KeyTransferMessages: PeerMessageHandler {
    let store: AccountStore
    let logger: Logger

    package init(store: AccountStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    package var kinds: Set<PeerMessage.Kind> { [.keyOffer, .keyAccept, .keyStored] }

    package func handle(_ message: PeerMessage, _ talk: PeerTalk) async throws {
        let peer = talk.session.peerID
        switch message {
        case .keyOffer(let offerID, let expiresAt):
            _ = await store.noteKeyOffer(offerID, from: peer, expiresAt: expiresAt)
        case .keyAccept(let request, let offerID):
            switch await store.handOverKey(offerID, to: peer) {
            case .failure(.unavailable):
                try await talk.send(.keyRefused(requestID: request, message: "it could not hand the key over now (see its log); try again"))
            case .success(let handover):
                try await talk.send(.keyHandover(requestID: request, rootKey: handover.key, state: handover.signed, accountSecret: handover.secret))
            case .failure(.expired):
                try await talk.send(.keyRefused(requestID: request, message: "the offer expired; ask for a new one (handoffctl account transfer-key)"))
            case .failure(.noSuchOffer):
                try await talk.send(.keyRefused(requestID: request, message: "it offers this device no key now (withdrawn, or not the device holding it)"))
            }
        case .keyStored(let offerID):
            if await store.keyStored(offerID, by: peer) { await talk.sessions.stateChanged() }
        default:
            break
        }
    }
}

/// The two commands' flows over a session with the other device.
package enum KeyTransferFlow {
    /// `account transfer-key DEVICE`, on the key holder: the offer, told to the device. Returns
    /// the offer, its id, and what settles once the device holds the key.
    package static func offer(
        _ request: KeyTransferRequest, store: AccountStore, sessions: MemberSessions, directory: PeerDirectory, defaultPort: Int
    ) async throws(DaemonError) -> (offer: KeyOfferInfo, id: UUID, done: Once<AccountInfo>) {
        let account = try await store.requireMembership()
        let target = try await PeerTarget.resolve(request.device, state: account.state, me: account.deviceID, directory: directory, defaultPort: defaultPort)
        guard target.device != nil else { throw DaemonError(.badRequest, "name a device of the account (handoffctl devices), not an address") }
        let (offer, id, done) = try await store.offerKey(to: target.device!.id.text)
        do {
            let session = try await target.session(sessions: sessions, directory: directory)
            try await session.send(.keyOffer(offerID: id, expiresAt: offer.expiresAt))
        } catch {
            await store.withdrawKeyOffer(id)
            throw error as? DaemonError ?? DaemonError(.unreachable, "the connection to \(offer.deviceName) ended before it heard the offer")
        }
        return (offer, id, done)
    }

    /// The offer's asker stopped waiting before it was accepted: the offer goes, and the device
    /// it was made to hears so (an offer whose expiry is past), if a session with it is open.
    package static func withdraw(_ offerID: UUID, from device: DeviceID, store: AccountStore, sessions: MemberSessions) async {
        guard await store.withdrawKeyOffer(offerID) else { return }
        try? await sessions.session(for: device)?.send(.keyOffer(offerID: offerID, expiresAt: Timestamp(microsecondsSinceEpoch: 0)))
    }

    /// `account accept-key`, on the device offered the key: asks the holder for it, writes it,
    /// says so, and tells every device of the state that names this one.
    package static func accept(store: AccountStore, sessions: MemberSessions, directory: PeerDirectory, defaultPort: Int) async throws(DaemonError) -> AccountInfo {
        let account = try await store.requireMembership()
        guard let (offerID, from) = await store.pendingKeyOffer() else {
            throw DaemonError(
                DaemonError.Code(.notFound),
                "no device offers this one the account key now; on the device holding it: handoffctl account transfer-key \(account.state.device(account.deviceID)?.name ?? "THIS-DEVICE")"
            )
        }
        let target = try await PeerTarget.resolve(from.deviceID.text, state: account.state, me: account.deviceID, directory: directory, defaultPort: defaultPort)
        let session = try await target.session(sessions: sessions, directory: directory)
        let reply: PeerMessage
        do {
            reply = try await session.request { .keyAccept(requestID: $0, offerID: offerID) }
        } catch is PeerRequestTimeout {
            throw DaemonError(.timeout, "\(from.deviceName) did not send the key in time; try again")
        } catch {
            throw DaemonError(.unreachable, "the connection to \(from.deviceName) ended before it sent the key; try again")
        }
        switch reply {
        case .keyHandover(_, let key, let signed, let secret):
            let info = try await store.takeKey(offerID, from: from.deviceID, key: key, signed: signed, secret: secret)
            // Written: the old holder deletes its copy. If this is lost, the state that names
            // this device, told to every device just below, tells it as well.
            try? await session.send(.keyStored(offerID: offerID))
            await sessions.stateChanged()
            return info
        case .keyRefused(_, let message):
            await store.forgetKeyOffer()
            throw DaemonError(.refused, "\(from.deviceName) did not hand the key over: \(message)")
        default:
            throw DaemonError(.versionMismatch, "\(from.deviceName) answered with a \(reply.kindName); are both devices up to date?")
        }
    }
}
