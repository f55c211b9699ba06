#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffModel

/// The messages devices exchange inside an authenticated TLS connection (docs/peer-protocol.md).
///
/// Each travels in a frame `type:u8 length:u32be payload`. Payloads are built from the same
/// length-prefixed pieces as the activity encoding, decoded strictly: a malformed message ends
/// the connection.
public enum PeerMessage: Sendable, Equatable {
    /// First message of each side; the server sends it first, and in TLS 1.3 that is how the
    /// client learns it was accepted.
    case hello(PeerHello)
    /// The sender's signed account state (sent when the other side's version is older), with the
    /// account secret that goes with that version (it changes when a device is removed).
    case accountState(SignedAccountState, accountSecret: [UInt8])
    /// Joiner → inviter, inside a PSK-authenticated connection.
    case joinRequest(JoinRequest)
    case joinAccepted(JoinAccepted)
    case joinRefused(JoinRefusal)
    /// Something went wrong; the connection ends after it.
    case failure(PeerFailure)
    /// The sender's current activity changed (or none): the fast path that beats Avahi's 1/s.
    case activityNotice(ActivityNotice)
    /// "Send me your current activity"; `seenID` is the one the asker saw, to detect staleness.
    case getActivity(requestID: UInt32, seenID: UUID?)
    /// The answer: the activity in its binary encoding (docs/activity-encoding.md).
    case activity(requestID: UInt32, encoded: [UInt8])
    case activityUnavailable(requestID: UInt32, ActivityUnavailable)
    /// Resumer → originator: the activity was handed to an app here (the originating app hears
    /// `wasContinued`).
    case activityContinued(activityID: UUID)
    /// First message on a stream connection (ALPN `handoff-stream/1`), client → originator: a
    /// continuation stream for the activity the client continued.
    case openStream(activityID: UUID)
    /// The originator's answer: after this frame, both directions carry the stream's raw bytes.
    /// `length`: how many bytes the originator will send, when it knows (a file), for progress.
    case streamAccepted(streamID: UUID, length: Int64? = nil)
    case streamRefused(StreamRefusal)
    /// "Send me your account state", over an open session (`account sync` with a device it has a
    /// session with already).
    case getAccountState(requestID: UInt32)
    /// The answer: the sender's signed account state and its account secret.
    case accountStateReply(requestID: UInt32, SignedAccountState, accountSecret: [UInt8])
    /// To a device removed from the account (at once over its session, or when it next
    /// connects): the root key's signed word for it. Nothing else is said; the connection ends.
    case removed(RemovalNotice)
    /// "Remove me from the account" (`account leave`), to every device with a session: the one
    /// holding the account key does it. Answered with `accountStateReply` (the state after it).
    case leaving(requestID: UInt32)
    /// "Call me NAME" (`devices rename` on a device without the account key): the device holding
    /// it signs the new state. Answered with `accountStateReply`: the state after it (the same
    /// state when the name was refused, or by a device without the key).
    case renameRequest(requestID: UInt32, name: String)
    /// The saved activities deleted on the account's devices that the sender knows of (at most
    /// `maximumSavedDeletions`): told when a session opens, and each new one at once.
    case savedDeletions([SavedActivityDeletion])
    /// Right after an `activityNotice` of an activity: its `targetContentIdentifier` (none:
    /// it has none), so the device that continues it knows the window that will take it as
    /// soon as the user asks. A device that does not know the kind skips it.
    case activityTarget(sequence: UInt64, target: String?)
    /// Something was copied on the sender (or its clipboard holds nothing carried any more: no
    /// items): the forms it offers and their sizes, never the content (docs/clipboard.md). Sent
    /// to every member with a session; a device that does not know the kind skips it.
    case clipboardNotice(ClipboardNotice)
    /// The one frame that opens a stream connection for a paste: one form of a copy the sender
    /// heard of. Answered like `openStream` (`streamAccepted` with the length, or
    /// `streamRefused`), then the form's bytes follow.
    case openClipboardStream(copyID: UUID, type: String)
    /// The key holder offers the account key to the receiving device (`account transfer-key`):
    /// nothing moves until that device's user accepts (`account accept-key`) before `expiresAt`.
    case keyOffer(offerID: UUID, expiresAt: Timestamp)
    /// The offered device's user accepted: "send me the key". Answered with `keyHandover`, or
    /// `keyRefused` when there is no such offer (withdrawn, expired, or never made).
    case keyAccept(requestID: UInt32, offerID: UUID)
    /// The account key (raw Ed25519 private key) and the signed state naming the receiver as its
    /// holder, with the account secret of that state. The sender keeps its copy until `keyStored`.
    case keyHandover(requestID: UInt32, rootKey: [UInt8], state: SignedAccountState, accountSecret: [UInt8])
    case keyRefused(requestID: UInt32, message: String)
    /// The receiver wrote the key and the state to disk: the sender deletes its copy.
    case keyStored(offerID: UUID)
    /// To the key holder, from a device whose certificate a retired root key issued (the account
    /// key was rotated, `account rotate-key`): "certify this key again" — its own public key,
    /// whose id must be the session's device.
    case renewCertificate(requestID: UInt32, publicKey: [UInt8])
    /// The answer: a certificate (DER) from the current root, or nothing (refused).
    case certificateRenewed(requestID: UInt32, certificate: [UInt8])
    /// The sender's DNS-SD advert now — its instance name (≤ 63 bytes, as DNS-SD allows) and
    /// port — told when a session opens, so that the other device, at its next start, dials it
    /// there addressed to that advert even before the advert itself reached it (docs/discovery.md,
    /// "First contact"). A device that does not know the kind skips it.
    case advertName(instanceName: String, port: UInt16)
    /// A message type this version does not know (a newer peer's); sessions skip it.
    case unknown(kind: UInt8)

    /// Each message's type byte on the wire; `unknown` has none of these.
    public enum Kind: UInt8, Sendable, CaseIterable {
        case hello = 1, accountState = 2, joinRequest = 3, joinAccepted = 4, joinRefused = 5, failure = 6
        case activityNotice = 7, getActivity = 8, activity = 9, activityUnavailable = 10
        case activityContinued = 11, openStream = 12, streamAccepted = 13, streamRefused = 14
        case getAccountState = 15, accountStateReply = 16, removed = 17, leaving = 18, renameRequest = 19
        case savedDeletions = 20, activityTarget = 21, clipboardNotice = 22, openClipboardStream = 23
        case keyOffer = 24, keyAccept = 25, keyHandover = 26, keyRefused = 27, keyStored = 28
        case renewCertificate = 29, certificateRenewed = 30, advertName = 31
    }

    var kindByte: UInt8 {
        switch self {
        case .unknown(let kind): kind
        default: kind!.rawValue
        }
    }

    public var kind: Kind? {
        switch self {
        case .hello: .hello
        case .accountState: .accountState
        case .joinRequest: .joinRequest
        case .joinAccepted: .joinAccepted
        case .joinRefused: .joinRefused
        case .failure: .failure
        case .activityNotice: .activityNotice
        case .getActivity: .getActivity
        case .activity: .activity
        case .activityUnavailable: .activityUnavailable
        case .activityContinued: .activityContinued
        case .openStream: .openStream
        case .streamAccepted: .streamAccepted
        case .streamRefused: .streamRefused
        case .getAccountState: .getAccountState
        case .accountStateReply: .accountStateReply
        case .removed: .removed
        case .leaving: .leaving
        case .renameRequest: .renameRequest
        case .savedDeletions: .savedDeletions
        case .activityTarget: .activityTarget
        case .clipboardNotice: .clipboardNotice
        case .openClipboardStream: .openClipboardStream
        case .keyOffer: .keyOffer
        case .keyAccept: .keyAccept
        case .keyHandover: .keyHandover
        case .keyRefused: .keyRefused
        case .keyStored: .keyStored
        case .renewCertificate: .renewCertificate
        case .certificateRenewed: .certificateRenewed
        case .advertName: .advertName
        case .unknown: nil
        }
    }
}

extension PeerMessage {
    /// What a message is, in words (for errors and logs).
    public var kindName: String {
        switch self {
        case .hello: "hello"
        case .accountState: "account state"
        case .joinRequest: "join request"
        case .joinAccepted: "join acceptance"
        case .joinRefused: "join refusal"
        case .failure: "failure"
        case .activityNotice: "activity notice"
        case .getActivity: "activity request"
        case .activity: "activity"
        case .activityUnavailable: "activity refusal"
        case .activityContinued: "continuation notice"
        case .openStream: "stream request"
        case .streamAccepted: "stream acceptance"
        case .streamRefused: "stream refusal"
        case .getAccountState: "account state request"
        case .accountStateReply: "account state"
        case .removed: "removal notice"
        case .leaving: "leave notice"
        case .renameRequest: "rename request"
        case .savedDeletions: "saved-activity deletions"
        case .activityTarget: "activity target"
        case .clipboardNotice: "clipboard notice"
        case .openClipboardStream: "paste request"
        case .keyOffer: "account key offer"
        case .keyAccept: "account key acceptance"
        case .keyHandover: "account key"
        case .keyRefused: "account key refusal"
        case .keyStored: "account key receipt"
        case .renewCertificate: "certificate request"
        case .certificateRenewed: "certificate"
        case .advertName: "advert name"
        case .unknown(let kind): "message of unknown type \(kind)"
        }
    }
}

extension PeerMessage {
    /// The request this message answers, for the answers to requests (`activity`,
    /// `activityUnavailable`, `accountStateReply`): the session hands it to whoever asked.
    public var answeredRequest: UInt32? {
        switch self {
        case .activity(let id, _), .activityUnavailable(let id, _), .accountStateReply(let id, _, _), .keyHandover(let id, _, _, _), .keyRefused(let id, _),
            .certificateRenewed(let id, _):
            id
        default: nil
        }
    }
}

/// Why a device says no, in a reason code (unknown codes read as `internalError`) and words.
public struct Refusal<Reason: RawRepresentable & Sendable & Equatable>: Sendable, Equatable where Reason.RawValue == UInt8 {
    public var reason: Reason
    public var message: String

    public init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }
}

public enum StreamRefusalReason: UInt8, Sendable {
    /// The activity is no longer the originator's current one.
    case activityChanged = 1
    /// The activity does not offer continuation streams.
    case unsupported = 2
    /// This device has not continued that activity.
    case notContinued = 3
    /// No originating app serves streams, or it did not take this one in time.
    case noServer = 4
    case internalError = 5
}

public typealias StreamRefusal = Refusal<StreamRefusalReason>

/// The fast-path announcement: same sequence numbering and summary as the sealed advert.
public struct ActivityNotice: Sendable, Equatable {
    public var sequence: UInt64
    public var activity: ActivitySummary?

    public init(sequence: UInt64, activity: ActivitySummary?) {
        self.sequence = sequence
        self.activity = activity
    }
}

public struct ActivityUnavailable: Sendable, Equatable {
    public enum Reason: UInt8, Sendable {
        /// No current activity.
        case none = 1
        /// Another activity is current now (`currentID`).
        case changed = 2
        /// The activity expired.
        case expired = 3
    }

    public var reason: Reason
    public var currentID: UUID?
    public var message: String

    public init(_ reason: Reason, currentID: UUID? = nil, message: String) {
        self.reason = reason
        self.currentID = currentID
        self.message = message
    }
}

public struct PeerHello: Sendable, Equatable {
    /// Which of two account states comes later: the later rotation, then the higher version.
    public var stateRank: AccountStateRank { AccountStateRank(rotations: keyRotations ?? 0, version: accountStateVersion) }

    public static let currentProtocolVersion: UInt16 = 1
    public var protocolVersion: UInt16
    public var deviceID: DeviceID
    public var deviceName: String
    public var accountStateVersion: UInt64
    /// The sender's clock when it said hello: certificates and expiry dates mean little between
    /// devices whose clocks disagree, so `doctor` compares. Absent from older peers.
    public var clock: Timestamp?
    /// How many times the account key was rotated, as the sender knows (docs/security.md,
    /// "Rotating the key"): a state of a later rotation comes before any of an earlier one,
    /// whatever their versions. Absent from older peers (and sent only with `clock`).
    public var keyRotations: UInt64?

    public init(
        protocolVersion: UInt16 = PeerHello.currentProtocolVersion, deviceID: DeviceID, deviceName: String, accountStateVersion: UInt64,
        clock: Timestamp? = nil, keyRotations: UInt64? = nil
    ) {
        self.keyRotations = keyRotations
        self.protocolVersion = protocolVersion
        self.deviceID = deviceID
        self.deviceName = deviceName
        self.accountStateVersion = accountStateVersion
        self.clock = clock
    }
}

/// The order of account states (docs/security.md, "Rotating the key"): a state signed after a
/// rotation comes after every state signed before it, whatever their versions.
public struct AccountStateRank: Sendable, Comparable {
    public var rotations: UInt64
    public var version: UInt64

    public init(rotations: UInt64, version: UInt64) {
        self.rotations = rotations
        self.version = version
    }

    public static func < (a: Self, b: Self) -> Bool { (a.rotations, a.version) < (b.rotations, b.version) }
}

public struct JoinRequest: Sendable, Equatable {
    public var deviceName: String
    /// The joiner's raw Ed25519 public key; its certificate will be issued for it.
    public var publicKey: [UInt8]

    public init(deviceName: String, publicKey: [UInt8]) {
        self.deviceName = deviceName
        self.publicKey = publicKey
    }
}

public struct JoinAccepted: Sendable, Equatable {
    public var deviceCertificate: [UInt8]
    public var rootCertificate: [UInt8]
    public var accountState: SignedAccountState
    /// The account's shared secret (advert sealing and tags), sent only inside the PSK channel.
    public var accountSecret: [UInt8]

    public init(deviceCertificate: [UInt8], rootCertificate: [UInt8], accountState: SignedAccountState, accountSecret: [UInt8]) {
        self.deviceCertificate = deviceCertificate
        self.rootCertificate = rootCertificate
        self.accountState = accountState
        self.accountSecret = accountSecret
    }
}

public enum JoinRefusalReason: UInt8, Sendable {
    case expired = 1
    case alreadyUsed = 2
    case invalidRequest = 3
    case internalError = 4
}

public typealias JoinRefusal = Refusal<JoinRefusalReason>

public struct PeerFailure: Sendable, Equatable {
    public enum Code: UInt16, Sendable {
        case protocolVersion = 1
        case unexpectedMessage = 2
        case revoked = 3
        case notAMember = 4
        case internalError = 5
        case unknown = 0xFFFF
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}
