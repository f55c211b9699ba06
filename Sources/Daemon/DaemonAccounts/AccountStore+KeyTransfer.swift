#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonCore
import HandoffAPI
import HandoffModel
import HandoffPeer
import HandoffTLS

/// `account transfer-key` and `account accept-key` (docs/security.md, "Handing the key over"): the
/// store's side. The decisions are `KeyTransfers`'; the messages go through `KeyTransferFlow`.
extension AccountStore {
    // MARK: On the key holder

    /// Offers the account key to device `text` (name or id start). Returns the offer, its id, and
    /// what settles once that device wrote the key.
    package func offerKey(to text: String, now: Timestamp = .now(), lifetimeSeconds: Int64 = KeyTransfers.offerLifetimeSeconds) throws(DaemonError)
        -> (offer: KeyOfferInfo, id: UUID, done: Once<AccountInfo>)
    {
        let m = try requireMembership()
        _ = try signingKey(m, or: DaemonError(.notAccountAdmin, "only the device holding the account key hands it over; run handoffctl account transfer-key there"))
        let device = try findDevice(text, in: m.state)
        guard device.id != m.deviceID else { throw DaemonError(.badRequest, "this device holds the account key already") }
        guard let offer = transfers.offer(to: device, now: now, lifetimeSeconds: lifetimeSeconds) else {
            throw DaemonError(.accountExists, "the key was handed to \(transfers.outgoing?.to.deviceName ?? "another device"), which has not said yet that it holds it; wait, or handoffctl account sync with it")
        }
        logger.notice("offered the account key", metadata: ["device": "\(device.id.short)"])
        return (offer.to, offer.offerID, offer.done)
    }

    /// The offer's asker hung up before the other device accepted.
    /// Returns whether it went (an accepted one stays until its receipt).
    @discardableResult
    package func withdrawKeyOffer(_ offerID: UUID) -> Bool {
        transfers.withdraw(offerID)
    }

    /// `peer` accepted offer `offerID`: the key and the state that names `peer` its holder,
    /// signed — not taken on here until `peer` says it wrote them (`keyStored`). From here on
    /// this device signs nothing until that is settled, also across a restart (the hand-over is
    /// saved before the key leaves).
    package func handOverKey(_ offerID: UUID, to peer: DeviceID, now: Timestamp = .now()) async
        -> Result<(key: [UInt8], signed: SignedAccountState, secret: [UInt8]), KeyTransfers.Refusal>
    {
        guard let m = material, let rootKey = m.rootKey, m.state.device(peer) != nil, !m.isRevoked else { return .failure(.noSuchOffer) }
        let offer: KeyTransfers.Outgoing
        switch transfers.acceptance(of: offerID, by: peer, now: now) {
        case .failure(let refusal): return .failure(refusal)
        case .success(let accepted): offer = accepted
        }
        let key: [UInt8]
        do {
            key = try rootKey.rawPrivateKey()
        } catch {
            logger.error("cannot read the account key to hand it over", metadata: ["error": "\(error)"])
            return .failure(.unavailable)
        }
        // Accepted again (the answer was lost): the same state goes again — while the hand-over
        // stands (not cancelled meanwhile).
        if let sent = offer.handedOver {
            guard m.handover?.to == peer else { return .failure(.noSuchOffer) }
            return .success((key, sent.signed, sent.secret))
        }
        if let pending = m.handover {
            guard pending.to == peer else { return .failure(.noSuchOffer) }
            transfers.handedOver(offerID, signed: pending.signed, secret: pending.secret)
            return .success((key, pending.signed, pending.secret))
        }
        let signed: SignedAccountState
        do {
            signed = try AccountMaterial.sign(m.state.held(by: peer, at: now), with: rootKey, chain: m.chain)
        } catch {
            logger.error("cannot sign the hand-over", metadata: ["error": "\(error)"])
            return .failure(.unavailable)
        }
        // Marked before the save's await: an acceptance meanwhile gets this same state.
        transfers.handedOver(offerID, signed: signed, secret: m.accountSecret)
        var next = m
        next.handover = AccountMaterial.Handover(to: peer, signed: signed, secret: m.accountSecret, at: now)
        do {
            try await install(next, saving: true)
        } catch {
            transfers.undoHandover(offerID)
            return .failure(.unavailable)
        }
        // Still so after the save's await (nothing settled it meanwhile): else the key stays.
        guard material?.handover?.to == peer else { return .failure(.unavailable) }
        logger.notice("handed the account key over; keeping this copy until it is stored there", metadata: ["device": "\(peer.short)"])
        return .success((key, signed, m.accountSecret))
    }

    /// `peer` wrote the key: this device takes on the state naming it, and deletes its own copy
    /// (`adopt`). Returns whether the account changed here.
    package func keyStored(_ offerID: UUID, by peer: DeviceID) async -> Bool {
        guard let offer = transfers.stored(offerID, by: peer), let sent = offer.handedOver else { return false }
        let adopted = await adopt(sent.signed, accountSecret: sent.secret)
        if let info = material?.info { offer.done.settle(info) }
        return adopted == .updated
    }

    /// An exchange of states with `peer` after the key was handed to it: a newer state from it
    /// was adopted by then (and named it, or not); otherwise, once the receipt window passed
    /// (`KeyTransfers.receiptWindowSeconds`), it never took the key and this device may sign
    /// again.
    package func settleKeyTransfer(with peer: DeviceID, theirs: AccountStateRank, now: Timestamp = .now()) async {
        // Their state is newer, yet not taken on here (a failed save): the key may be there.
        guard var next = material, let handover = next.handover, handover.to == peer, theirs <= stateRank,
            now >= min(handover.at, now).adding(seconds: KeyTransfers.receiptWindowSeconds)
        else { return }
        next.handover = nil
        do {
            try await install(next, saving: true)
        } catch {
            logger.error("cannot save the end of a hand-over", metadata: ["error": "\(error)"])
            return
        }
        transfers.settle(with: peer)
        logger.notice("the device the key was handed to does not hold it; this device signs again", metadata: ["device": "\(peer.short)"])
    }

    /// `account transfer-key --cancel`: a hand-over whose receipt never came is given up (the
    /// device it went to is gone). If that device did store the key, it holds it too: remove it
    /// and rotate the key.
    package func cancelHandover() async throws(DaemonError) -> AccountInfo {
        let m = try requireMembership()
        guard m.handover != nil || transfers.isHandingOver else {
            throw DaemonError(DaemonError.Code(.notFound), "no hand-over of the account key is waiting for its receipt here")
        }
        var next = m
        next.handover = nil
        // Before the save's await: an acceptance meanwhile finds no offer.
        transfers.forgetOutgoing()
        try await install(next, saving: true)
        logger.warning("a hand-over of the account key was cancelled; this device signs again", metadata: ["device": "\(m.handover?.to.short ?? "?")"])
        return next.info
    }

    /// Where an offer made here stands once its asker stops waiting: taken (nil), or the key
    /// went and no receipt came, or it was never accepted.
    package func keyTransferOutcome(of offerID: UUID) -> KeyTransfers.Ending {
        if let handover = material?.handover { return .unconfirmed(handover.to) }
        if transfers.handedOverOffer == offerID, let to = transfers.outgoing?.to.deviceID { return .unconfirmed(to) }
        return .notAccepted
    }

    // MARK: On the device offered the key

    /// The key holder offers this device the key. Returns whether it is news (then `account
    /// show` and the status say so).
    package func noteKeyOffer(_ offerID: UUID, from peer: DeviceID, expiresAt: Timestamp, now: Timestamp = .now()) -> Bool {
        guard let m = material, !m.isRevoked, m.rootKey == nil, let from = m.state.device(peer), m.state.keyHolder.map({ $0 == peer }) ?? true else {
            return false
        }
        // An offer's end (withdrawn there): an expiry already past.
        if expiresAt <= now, transfers.incomingOffer(now: now)?.offerID == offerID {
            transfers.forgetIncoming()
            announce(.accountChanged)
            return false
        }
        guard transfers.offered(offerID, from: from, expiresAt: expiresAt, now: now) else { return false }
        logger.notice("another device offers this one the account key", metadata: ["device": "\(peer.short)"])
        announce(.accountChanged)
        return true
    }

    /// The offer waiting for this device's user, if any.
    package func pendingKeyOffer(now: Timestamp = .now()) -> (id: UUID, from: KeyOfferInfo)? {
        transfers.incomingOffer(now: now).map { ($0.offerID, $0.from) }
    }

    package func forgetKeyOffer() {
        transfers.forgetIncoming()
        announce(.accountChanged)
    }

    /// The key and the state `from` sent for offer `offerID`: kept (written before anything
    /// else) if the key is this account's, the state verifies, is newer, and names this device
    /// its key holder.
    package func takeKey(_ offerID: UUID, from peer: DeviceID, key raw: [UInt8], signed: SignedAccountState, secret: [UInt8]) async throws(DaemonError)
        -> AccountInfo
    {
        let m = try requireMembership()
        guard m.rootKey == nil else { throw DaemonError(.accountExists, "this device holds the account key already") }
        let refused = DaemonError(DaemonError.Code(.refused), "the device that offered the key sent one that does not fit this account; nothing was kept")
        guard let key = try? SigningKey(rawPrivateKey: raw), key.publicKey == m.root.publicKey,
            let (state, chain, current) = AccountMaterial.verify(signed, chain: m.chain), current, chain.links.count == m.chain.links.count,
            state.keyHolder == m.deviceID, state.version > m.state.version,
            !state.isRevoked(m.deviceID), secret.count == 32
        else { throw refused }
        var next = m
        next.rootKey = key
        next.state = state
        next.signedState = signed
        adoptingOwnName(&next)
        try recertifySelf(&next, now: .now())
        if secret != m.accountSecret {
            next.previousAccountSecret = m.accountSecret
            next.accountSecret = secret
        }
        try await install(next, saving: true)
        transfers.forgetIncoming()
        logger.notice("this device holds the account key now", metadata: ["from": "\(peer.short)", "version": "\(state.version)"])
        return next.info
    }
}
