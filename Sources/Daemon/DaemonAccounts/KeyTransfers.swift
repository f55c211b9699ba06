#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonCore
import HandoffAPI
import HandoffModel

/// The account key handed from one device to another (`account transfer-key`, docs/security.md,
/// "Handing the key over"), as values: the offer the key holder made, and the offer another device
/// made this one. Decisions only, on an injected clock; `AccountStore` signs, saves and sends.
///
/// The key holder offers; nothing moves until the other device's user accepts there. The key goes
/// with a state naming the new holder, which the old one signed but does not take on until the
/// new holder says it wrote both: until then it signs nothing else, so that the two never sign
/// diverging states of the same version.
package struct KeyTransfers: Sendable {
    /// How long an offer waits for the other device's user: long enough to walk over to it.
    package static let offerLifetimeSeconds: Int64 = 300
    /// How long after the key left a session or a sync with the receiver that shows no newer
    /// state may settle the hand-over: by then the receiver has given up on the key if it did
    /// not store it (its request timed out), so a hello it sent before storing it cannot
    /// mislead.
    package static let receiptWindowSeconds: Int64 = 120

    struct Outgoing: Sendable {
        var offerID: UUID
        var to: KeyOfferInfo
        /// The state naming the new holder, signed and sent with the key; set from the moment
        /// the key left this device.
        var handedOver: (signed: SignedAccountState, secret: [UInt8])?
        /// Settled with the account once the new holder says it wrote the key.
        let done: Once<AccountInfo>
    }

    struct Incoming: Sendable, Equatable {
        var offerID: UUID
        var from: KeyOfferInfo
    }

    package enum Refusal: Error, Equatable {
        case noSuchOffer
        case expired
        /// This device could not read, sign or save what goes with the key.
        case unavailable
    }

    /// How an offer ended for its asker, when no receipt came.
    package enum Ending: Equatable {
        /// The key went to this device, which has not said it stored it.
        case unconfirmed(DeviceID)
        case notAccepted
    }

    private(set) var outgoing: Outgoing?
    private var incoming: Incoming?

    /// The key left this device and its receipt was not heard: nothing may be signed here.
    var isHandingOver: Bool { handedOverOffer != nil }

    /// The offer made here, while it may be taken (or the key left with it).
    func outgoingOffer(now: Timestamp) -> Outgoing? {
        guard let outgoing, outgoing.handedOver != nil || now < outgoing.to.expiresAt else { return nil }
        return outgoing
    }

    /// A new offer, replacing one not yet accepted.
    mutating func offer(to device: AccountState.Device, now: Timestamp, lifetimeSeconds: Int64 = offerLifetimeSeconds) -> Outgoing? {
        guard !isHandingOver else { return nil }
        let offer = Outgoing(
            offerID: UUID(), to: KeyOfferInfo(deviceID: device.id, deviceName: device.name, expiresAt: now.adding(seconds: lifetimeSeconds)), done: Once()
        )
        outgoing = offer
        return offer
    }

    /// The offer's asker hung up before it was accepted: the offer goes (once accepted, it stays
    /// until the receipt).
    /// Returns whether it went.
    @discardableResult
    mutating func withdraw(_ offerID: UUID) -> Bool {
        guard let o = outgoing, o.offerID == offerID, o.handedOver == nil else { return false }
        outgoing = nil
        return true
    }

    /// `peer` accepted `offerID`: the offer it may take, or why not.
    func acceptance(of offerID: UUID, by peer: DeviceID, now: Timestamp) -> Result<Outgoing, Refusal> {
        guard let o = outgoing, o.offerID == offerID, o.to.deviceID == peer else { return .failure(.noSuchOffer) }
        // Accepted again (the answer was lost): the same key and state go again, whatever the time.
        guard o.handedOver != nil || now < o.to.expiresAt else { return .failure(.expired) }
        return .success(o)
    }

    mutating func handedOver(_ offerID: UUID, signed: SignedAccountState, secret: [UInt8]) {
        if outgoing?.offerID == offerID { outgoing?.handedOver = (signed, secret) }
    }

    /// `peer` says it wrote the key: the state to take on, if this was its offer.
    mutating func stored(_ offerID: UUID, by peer: DeviceID) -> Outgoing? {
        guard let o = outgoing, o.offerID == offerID, o.to.deviceID == peer, o.handedOver != nil else { return nil }
        outgoing = nil
        return o
    }

    /// A newer state came, or the receiver (`peer`, if given) showed it did not take the key:
    /// what was handed over (with offer `offerID`, if given) is settled. Returns the offer it
    /// ends; an offer not accepted yet stays.
    @discardableResult
    mutating func settle(with peer: DeviceID? = nil, offerID: UUID? = nil) -> Outgoing? {
        guard let o = outgoing, o.handedOver != nil, peer == nil || o.to.deviceID == peer, offerID == nil || o.offerID == offerID else { return nil }
        outgoing = nil
        return o
    }

    /// The offer whose key left, if any (to settle exactly that one after an await).
    var handedOverOffer: UUID? { outgoing?.handedOver != nil ? outgoing?.offerID : nil }

    /// Another device holds the key now: no offer made here stands.
    mutating func forgetOutgoing() { outgoing = nil }

    /// The key's save failed after it was marked handed over: the offer may be accepted again.
    mutating func undoHandover(_ offerID: UUID) {
        if outgoing?.offerID == offerID { outgoing?.handedOver = nil }
    }

    // MARK: This device offered the key

    /// An offer from `from` (the key holder, with a session), expiring no later than a lifetime
    /// from now whatever it says. Returns whether it is news.
    mutating func offered(_ offerID: UUID, from: AccountState.Device, expiresAt: Timestamp, now: Timestamp) -> Bool {
        guard expiresAt > now, incoming?.offerID != offerID else { return false }
        let until = min(expiresAt, now.adding(seconds: Self.offerLifetimeSeconds))
        incoming = Incoming(offerID: offerID, from: KeyOfferInfo(deviceID: from.id, deviceName: from.name, expiresAt: until))
        return true
    }

    func incomingOffer(now: Timestamp) -> Incoming? {
        guard let incoming, now < incoming.from.expiresAt else { return nil }
        return incoming
    }

    mutating func forgetIncoming() { incoming = nil }
}
