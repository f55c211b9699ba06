import CHandoffOpenSSL
import HandoffModel
import Synchronization

/// What a device trusts: certificates chaining to its account's root, minus the revoked devices,
/// presented inside a TLS channel keyed from the account secret (`AccountKeys`). Shared by every
/// connection of a context; the revocation list and the secrets change while the daemon runs
/// (`devices remove`, or a newer account state from a peer).
public final class TrustPolicy: Sendable {
    /// The account's root keys; the current one issues device certificates.
    public let chain: RootChain
    public var root: Certificate { chain.current }
    public let accountID: DeviceID
    /// One store per root, oldest first (`DeviceProof.judge`).
    let stores: RootStores
    private let revoked: Mutex<Set<DeviceID>>
    /// The devices the account state lists: a certificate from a retired root is accepted only
    /// for one of them (it was made before the rotation; a retired key makes no new members).
    private let listed: Mutex<Set<DeviceID>>
    /// The current secret's keys first, then the previous secret's (docs/security.md).
    private let accountKeys: Mutex<[AccountKeys]>
    /// What lets a device that had a session with another open the next one in one round trip.
    private let resumption = Mutex(ResumptionBook())

    public convenience init(root: Certificate, accountSecrets: [[UInt8]], revoked: Set<DeviceID> = []) throws(TLSError) {
        try self.init(chain: RootChain(first: root), accountSecrets: accountSecrets, revoked: revoked)
    }

    public init(chain: RootChain, accountSecrets: [[UInt8]], revoked: Set<DeviceID> = [], listed: Set<DeviceID> = []) throws(TLSError) {
        guard !accountSecrets.isEmpty else { throw TLSError(.crypto, "an account needs a secret") }
        self.chain = chain
        self.accountID = chain.accountID
        self.stores = try RootStores(chain.roots)
        self.revoked = Mutex(revoked)
        self.listed = Mutex(listed)
        self.accountKeys = Mutex(accountSecrets.map(AccountKeys.init(accountSecret:)))
    }

    public func setListed(_ ids: Set<DeviceID>) {
        listed.withLock { $0 = ids }
    }

    func isListed(_ id: DeviceID) -> Bool {
        listed.withLock { $0.contains(id) }
    }

    public func setRevoked(_ ids: Set<DeviceID>) {
        revoked.withLock { $0 = ids }
        resumption.withLock { book in ids.forEach { book.forget($0) } }
    }

    public func isRevoked(_ id: DeviceID) -> Bool {
        revoked.withLock { $0.contains(id) }
    }

    /// The current account secret first, then the previous one (kept until the next removal).
    public func setAccountSecrets(_ secrets: [[UInt8]]) {
        guard !secrets.isEmpty else { return }
        let rotated = accountKeys.withLock { keys in
            defer { keys = secrets.map(AccountKeys.init(accountSecret:)) }
            return keys.first?.secret != secrets[0]
        }
        // A new secret follows a removal: every device proves itself in full again.
        if rotated { resumption.withLock { $0 = ResumptionBook() } }
    }

    /// How many secrets a client may try: 2 when a previous one is kept.
    public var secretGenerations: Int { accountKeys.withLock { $0.count } }

    /// (Client) a fresh PSK offer for `addressee` under the secret of `generation` (0 = current).
    func offer(generation: Int, to addressee: HelloAddressee, salt: [UInt8]) -> AccountKeys.Offer? {
        accountKeys.withLock { keys in generation < keys.count ? keys[generation].offer(to: addressee, salt: salt) : nil }
    }

    /// (Server) the key of an identity one of our secrets made for one of `addressees`, or one
    /// of our resumption secrets for a hello from that device to this one (then with the device,
    /// and when it last proved itself in full), or nil. Every account secret is tried whatever
    /// matches, so that the time taken says nothing about which.
    func psk(forMemberIdentity identity: [UInt8], addressedTo addressees: [HelloAddressee]) -> MemberPSK? {
        let account = accountKeys.withLock { keys in keys.map { $0.psk(forIdentity: identity, addressedTo: addressees) }.compactMap { $0 }.first }
        if let account { return MemberPSK(key: account, resumed: nil) }
        let resumed = resumption.withLock { $0.psk(forIdentity: identity, addressedTo: addressees) }
        guard let resumed, !isRevoked(resumed.proof.device) else { return nil }
        return MemberPSK(key: resumed.key, resumed: resumed.proof)
    }

    /// (Client) an offer only `device` can answer, keyed from what our last sessions with it
    /// derived (`remember`), with when it last proved itself in full; nil when there is none.
    func resumptionOffer(for device: DeviceID, to addressee: HelloAddressee, salt: [UInt8]) -> (offer: AccountKeys.Offer, proof: ResumptionBook.Proof)? {
        guard !isRevoked(device) else { return nil }
        return resumption.withLock { $0.offer(for: device, to: addressee, salt: salt) }
    }

    func canResume(with device: DeviceID) -> Bool {
        !isRevoked(device) && resumption.withLock { $0.holds(device) }
    }

    /// A member connection between `me` (as `role`) and `proof.device` completed: `secret`
    /// (from its keying material) keys the next one.
    func remember(_ secret: [UInt8], me: DeviceID, role: TLSContext.Role, proof: ResumptionBook.Proof) {
        guard !isRevoked(proof.device) else { return }
        resumption.withLock { $0.remember(secret, me: me, role: role, proof: proof) }
    }

    /// Resuming with `device` was refused (it restarted, and forgot): the next dial proves in full.
    func forgetResumption(with device: DeviceID) {
        resumption.withLock { $0.forget(device) }
    }
}

/// (Server) what a member PSK identity was keyed from: the account's secret (`resumed` nil), or a
/// resumption secret of one device.
struct MemberPSK {
    var key: [UInt8]
    var resumed: ResumptionBook.Proof?
}

/// Resumption secrets (docs/security.md, "Resuming a session"): after two devices proved to each
/// other which they are, both derive a secret from that connection's keying material that only
/// they hold; the next connection between them is keyed from it (an external PSK shaped like the
/// account's, `AccountKeys`), and completing it proves both devices, so the device proofs and
/// their round trip are skipped. In memory only: a restart proves in full.
struct ResumptionBook {
    static let exporterLabel = "EXPORTER-handoff-resumption"
    /// Per device, newest last: a few, because two crossed dials (or a stream beside a session)
    /// each derive one and the two sides may keep a different newest.
    static let perDevice = 4
    /// Bounded whatever the account's size; the oldest device's go first.
    static let devices = 64
    /// A day after a device last proved itself in full (not after its last resumption), it does
    /// so again: its certificate is checked again (they expire), and so is everything else a
    /// device proof checks.
    static let lifetime: Duration = .seconds(86_400)

    /// Which device a secret stands for, and when it last showed its device proof: carried from
    /// each resumed connection to the secret it leaves.
    struct Proof: Equatable {
        var device: DeviceID
        var provenAt: ContinuousClock.Instant
    }

    private struct Entry {
        var proof: Proof
        /// Keys for a hello from this device to the other, and for one from the other to this
        /// device: each direction its own, so a hello reflected back to its sender is refused.
        var dialling: AccountKeys
        var answering: AccountKeys
    }

    private var entries: [DeviceID: [Entry]] = [:]

    mutating func remember(_ secret: [UInt8], me: DeviceID, role: TLSContext.Role, proof: Proof, now: ContinuousClock.Instant = .now) {
        prune(now)
        guard now - proof.provenAt < Self.lifetime else { return }
        let (client, server) = role == .client ? (me, proof.device) : (proof.device, me)
        // Both sides derive the same pair; which of the two is ours depends on who dials next.
        let fromClient = AccountKeys(resumptionSecret: secret, from: client, to: server)
        let fromServer = AccountKeys(resumptionSecret: secret, from: server, to: client)
        let entry = role == .client
            ? Entry(proof: proof, dialling: fromClient, answering: fromServer)
            : Entry(proof: proof, dialling: fromServer, answering: fromClient)
        entries[proof.device, default: []].append(entry)
        entries[proof.device] = Array(entries[proof.device]!.suffix(Self.perDevice))
        while entries.count > Self.devices, let oldest = entries.min(by: { $0.value.last!.proof.provenAt < $1.value.last!.proof.provenAt })?.key {
            entries[oldest] = nil
        }
    }

    func holds(_ device: DeviceID, now: ContinuousClock.Instant = .now) -> Bool {
        entries[device]?.contains { now - $0.proof.provenAt < Self.lifetime } ?? false
    }

    mutating func forget(_ device: DeviceID) {
        entries[device] = nil
    }

    func offer(for device: DeviceID, to addressee: HelloAddressee, salt: [UInt8], now: ContinuousClock.Instant = .now) -> (offer: AccountKeys.Offer, proof: Proof)? {
        guard let entry = entries[device]?.last, now - entry.proof.provenAt < Self.lifetime else { return nil }
        return (entry.dialling.offer(to: addressee, salt: salt), entry.proof)
    }

    func psk(forIdentity identity: [UInt8], addressedTo addressees: [HelloAddressee], now: ContinuousClock.Instant = .now) -> (key: [UInt8], proof: Proof)? {
        for list in entries.values {
            // The key is derived only for the entry that matches: the account's keys, tried
            // first, already make a stranger's hello cost the same as a member's.
            for entry in list where now - entry.proof.provenAt < Self.lifetime && entry.answering.matches(identity, addressedTo: addressees) {
                return (entry.answering.key(ofIdentity: identity), entry.proof)
            }
        }
        return nil
    }

    private mutating func prune(_ now: ContinuousClock.Instant) {
        for (device, list) in entries {
            let kept = list.filter { now - $0.proof.provenAt < Self.lifetime }
            entries[device] = kept.isEmpty ? nil : kept
        }
    }
}

/// What a device derives from an account secret to open a TLS connection that only members can
/// complete: an external PSK, new for every connection, so that nothing in a ClientHello stays the
/// same from one connection to the next. The identity (sent in clear) is `salt ‖ HMAC(identityKey,
/// salt ‖ addressee)[0..<16]` with a random 16-byte salt; the key is HKDF(secret, salt). A server
/// recognises its own account's identities, addressed to it, by recomputing the HMAC; anyone else
/// sees 32 random bytes (docs/security.md, "A captured ClientHello").
public struct AccountKeys: Sendable {
    public static let identityLength = 32
    static let saltLength = 16

    struct Offer: Equatable {
        var identity: [UInt8]
        var key: [UInt8]
    }

    private let identityKey: [UInt8]
    let secret: [UInt8]
    private let keyInfo: [UInt8]

    public init(accountSecret: [UInt8]) {
        self.init(secret: accountSecret, identityInfo: "handoff member psk identity v1", keyInfo: "handoff member psk v1")
    }

    /// The same construction keyed from a resumption secret (`ResumptionBook`), for hellos from
    /// `client` to `server` only: on the wire, its identities are 32 bytes like any other.
    init(resumptionSecret: [UInt8], from client: DeviceID, to server: DeviceID) {
        let direction = " from \(client.text) to \(server.text)"
        self.init(
            secret: resumptionSecret, identityInfo: "handoff resumption psk identity v1" + direction, keyInfo: "handoff resumption psk v1" + direction
        )
    }

    private init(secret: [UInt8], identityInfo: String, keyInfo: String) {
        self.secret = secret
        self.keyInfo = Array(keyInfo.utf8)
        identityKey = Crypto.hkdf(secret: secret, info: Array(identityInfo.utf8), length: 32)
    }

    func offer(to addressee: HelloAddressee, salt: [UInt8] = Crypto.randomBytes(AccountKeys.saltLength)) -> Offer {
        Offer(identity: salt + tag(salt, addressee), key: key(salt))
    }

    /// The same work whether the identity is ours, for which addressee, or not ours at all: a
    /// stranger timing our answers learns no more than from their bytes.
    func psk(forIdentity identity: [UInt8], addressedTo addressees: [HelloAddressee]) -> [UInt8]? {
        let matched = matches(identity, addressedTo: addressees)
        let key = key(Self.salt(ofIdentity: identity))
        return matched ? key : nil
    }

    /// Whether these keys made `identity` for one of `addressees` (every addressee is tried).
    func matches(_ identity: [UInt8], addressedTo addressees: [HelloAddressee]) -> Bool {
        guard identity.count == Self.identityLength else { return false }
        let salt = Self.salt(ofIdentity: identity)
        let presented = Array(identity.suffix(from: Self.saltLength))
        var matched = false
        for addressee in addressees {
            let equal = Crypto.constantTimeEqual(presented, tag(salt, addressee))
            matched = matched || equal
        }
        return matched
    }

    /// The key of an identity these keys made.
    func key(ofIdentity identity: [UInt8]) -> [UInt8] { key(Self.salt(ofIdentity: identity)) }

    static func salt(ofIdentity identity: [UInt8]) -> [UInt8] { Array(identity.prefix(saltLength)) }

    private func tag(_ salt: [UInt8], _ addressee: HelloAddressee) -> [UInt8] {
        Array(Crypto.hmacSHA256(key: identityKey, salt + addressee.encoded).prefix(Self.identityLength - Self.saltLength))
    }

    private func key(_ salt: [UInt8]) -> [UInt8] {
        Crypto.hkdf(secret: secret, salt: salt, info: keyInfo, length: 32)
    }
}

/// This device's key and certificate.
public struct DeviceIdentity: Sendable {
    public let key: SigningKey
    public let certificate: Certificate
    /// Keys the mark on the salts of the member hellos this device sends (`helloSalt`), by which
    /// it knows one of its own hellos coming back to it — reflected, or replayed after any number
    /// of its restarts — without remembering it: derived from the device key, it lasts as long as
    /// the device (docs/security.md, "A captured ClientHello").
    private let helloMarkKey: [UInt8]

    static let helloMarkLength = 8

    public init(key: SigningKey, certificate: Certificate) throws(TLSError) {
        guard certificate.publicKey == key.publicKey else {
            throw TLSError(.crypto, "the device certificate does not belong to the device key")
        }
        self.key = key
        self.certificate = certificate
        helloMarkKey = Crypto.hkdf(secret: try key.rawPrivateKey(), info: Array("handoff own hello mark v1".utf8), length: 32)
    }

    public var id: DeviceID { key.id }

    /// A fresh salt for a member hello: random bytes, then a mark of them only this device can
    /// make. To anyone else all 16 bytes look random, as every salt does.
    func helloSalt() -> [UInt8] {
        let random = Crypto.randomBytes(AccountKeys.saltLength - Self.helloMarkLength)
        return random + mark(random)
    }

    /// Whether this device made `salt` (a hello of its own): the same work for any salt.
    func madeHello(salt: [UInt8]) -> Bool {
        guard salt.count == AccountKeys.saltLength else { return false }
        let split = AccountKeys.saltLength - Self.helloMarkLength
        return Crypto.constantTimeEqual(Array(salt[split...]), mark(Array(salt[..<split])))
    }

    private func mark(_ random: [UInt8]) -> [UInt8] {
        Array(Crypto.hmacSHA256(key: helloMarkKey, Array("hello salt".utf8) + random).prefix(Self.helloMarkLength))
    }
}

/// The pre-shared key a join code stands for. The identity is sent in the clear in the ClientHello,
/// so it is derived one-way from the code; the key never leaves either device.
public struct JoinPSK: Sendable, Equatable {
    static let identityLength = 16
    public let identity: [UInt8]
    public let key: [UInt8]

    public init(code: InviteCode) {
        identity = Array(Crypto.hmacSHA256(key: code.secret, Array("handoff join identity v1".utf8)).prefix(Self.identityLength))
        key = Crypto.hkdf(secret: code.secret, info: Array("handoff join psk v1".utf8), length: 32)
    }
}

/// The server side's view of pending invitations, consulted during the handshake.
public protocol JoinPSKLookup: Sendable {
    /// The key for a presented identity, or nil (then the joiner is refused with unknown_psk_identity).
    func psk(forIdentity identity: [UInt8]) -> [UInt8]?
}

/// Who is on the other end once the handshake is done.
public enum TLSPeer: Sendable, Equatable {
    /// A device of our account (it proved the account key, then its certificate), not revoked.
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

    static let all: Set<String> = [member, stream, join]
}

/// An `X509_STORE` per root of the chain, each trusting that root alone (a link is not
/// self-signed: it is trusted as it stands, `X509_V_FLAG_PARTIAL_CHAIN`). Read-only once built;
/// OpenSSL's stores may be used by many verifications at once.
final class RootStores: @unchecked Sendable {
    let stores: [OpaquePointer]

    init(_ roots: [Certificate]) throws(TLSError) {
        var made: [OpaquePointer] = []
        for root in roots {
            guard let store = RootStores.store(trusting: root) else {
                made.forEach(X509_STORE_free)
                throw OpenSSLErrors.failure("cannot build a certificate store")
            }
            made.append(store)
        }
        stores = made
    }

    /// A store that trusts `root` alone; freed by the caller.
    static func store(trusting root: Certificate) -> OpaquePointer? {
        guard let store = X509_STORE_new() else { return nil }
        guard X509_STORE_add_cert(store, root.x509) == 1, X509_STORE_set_flags(store, UInt(X509_V_FLAG_PARTIAL_CHAIN)) == 1 else {
            X509_STORE_free(store)
            return nil
        }
        return store
    }

    deinit { stores.forEach(X509_STORE_free) }

    var current: OpaquePointer { stores.last! }
    /// The retired roots' stores, newest first.
    var retired: ArraySlice<OpaquePointer> { stores.dropLast().reversed()[...] }
}
