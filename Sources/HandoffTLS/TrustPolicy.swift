import HandoffModel
import Synchronization

/// What a device trusts: certificates chaining to its account's root, minus the revoked devices.
/// Shared by every connection of a context; the revocation list changes while the daemon runs
/// (`devices remove`, or a newer account state from a peer).
public final class TrustPolicy: Sendable {
    public let root: Certificate
    public let accountID: DeviceID
    private let revoked: Mutex<Set<DeviceID>>

    public init(root: Certificate, revoked: Set<DeviceID> = []) throws(TLSError) {
        guard let id = root.keyID else { throw TLSError(.crypto, "the account root certificate has no Ed25519 key") }
        self.root = root
        self.accountID = id
        self.revoked = Mutex(revoked)
    }

    public func setRevoked(_ ids: Set<DeviceID>) {
        revoked.withLock { $0 = ids }
    }

    public func isRevoked(_ id: DeviceID) -> Bool {
        revoked.withLock { $0.contains(id) }
    }
}

/// This device's key and certificate.
public struct DeviceIdentity: Sendable {
    public let key: SigningKey
    public let certificate: Certificate

    public init(key: SigningKey, certificate: Certificate) throws(TLSError) {
        guard certificate.publicKey == key.publicKey else {
            throw TLSError(.crypto, "the device certificate does not belong to the device key")
        }
        self.key = key
        self.certificate = certificate
    }

    public var id: DeviceID { key.id }
}

/// The pre-shared key a join code stands for. The identity is sent in the clear in the ClientHello,
/// so it is derived one-way from the code; the key never leaves either device.
public struct JoinPSK: Sendable, Equatable {
    public let identity: [UInt8]
    public let key: [UInt8]

    public init(code: InviteCode) {
        identity = Array(Crypto.hmacSHA256(key: code.secret, Array("handoff join identity v1".utf8)).prefix(16))
        key = Crypto.hkdf(secret: code.secret, info: Array("handoff join psk v1".utf8), length: 32)
    }
}

/// The server side's view of pending invitations, consulted during the handshake.
public protocol JoinPSKLookup: Sendable {
    /// The key for a presented identity, or nil (then the handshake continues as a member handshake
    /// and a joiner without a certificate is refused).
    func psk(forIdentity identity: [UInt8]) -> [UInt8]?
}

/// Who is on the other end once the handshake is done.
public enum TLSPeer: Sendable, Equatable {
    /// A verified, non-revoked device of our account.
    case member(DeviceID)
    /// (Server, member protocol) a verified device of our account that the account removed: it
    /// gets the removal notice and nothing else.
    case removedMember(DeviceID)
    /// (Server) a device presenting a join code's PSK, identified by that PSK identity.
    case joiner(pskIdentity: [UInt8])
    /// (Client, joining) the inviting device, authenticated by the code.
    case inviter
}

/// Application protocols (ALPN) that tell member sessions, continuation streams and joins apart
/// before any byte is exchanged.
public enum HandoffALPN {
    public static let member = "handoff/1"
    /// A continuation stream: a member connection of its own, raw bytes after one frame each way.
    public static let stream = "handoff-stream/1"
    public static let join = "handoff-join/1"

    /// Protocols authenticated by account certificates.
    static let certified: Set<String> = [member, stream]
}
