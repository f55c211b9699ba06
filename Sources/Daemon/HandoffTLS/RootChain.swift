import CHandoffOpenSSL
import HandoffModel

/// The account's root keys, oldest first (docs/security.md, "Rotating the key"): the first root
/// — a self-signed certificate whose key's id is the account's id, forever — then one link per
/// rotation: a CA certificate for the next root key, issued by the one before. The last is the
/// current root: it signs the account state and new device certificates. A device that knows a
/// prefix of the chain follows it to the end by checking each link's signature; one that does
/// not extend what it knows (a fork, made with a retired key) is not followed.
public struct RootChain: Sendable {
    /// More rotations than anyone makes; a chain is carried in every account state.
    public static let maximumLinks = SignedAccountState.maximumRootLinks

    public let first: Certificate
    public let links: [Certificate]

    public init(first: Certificate, links: [Certificate] = []) throws(TLSError) {
        guard first.keyID != nil else { throw TLSError(.crypto, "the account root certificate has no Ed25519 key") }
        self.first = first
        self.links = links
    }

    /// Who the account is: the first root key's id.
    public var accountID: DeviceID { first.keyID! }
    public var current: Certificate { links.last ?? first }
    /// Every root, oldest first.
    public var roots: [Certificate] { [first] + links }
    /// Links as they travel (DER), after the first root.
    public var linkDERs: [[UInt8]] { links.map(\.der) }

    /// This chain followed by `linkDERs` — a whole chain's links as another device holds them —
    /// when they keep every link this chain has and each new one is issued by the root before
    /// it; nil otherwise. The same or a shorter chain (a device behind) gives this one.
    public func following(_ linkDERs: [[UInt8]]) -> RootChain? {
        guard linkDERs.count <= Self.maximumLinks else { return nil }
        guard linkDERs.count > links.count else {
            return zip(links, linkDERs).allSatisfy { $0.der == $1 } ? self : nil
        }
        guard zip(links, linkDERs).allSatisfy({ $0.der == $1 }) else { return nil }
        var chain = links
        for der in linkDERs.dropFirst(links.count) {
            guard let link = try? Certificate(der: der), let previous = (chain.last ?? first).publicKey, link.isIssued(byKey: previous),
                link.keyID != nil, X509_check_ca(link.x509) != 0
            else { return nil }
            chain.append(link)
        }
        return try? RootChain(first: first, links: chain)
    }

    /// The chain with a new root key, issued by the current one (`currentKey`).
    public func rotated(to key: SigningKey, currentKey: SigningKey, notBefore: Timestamp, notAfter: Timestamp) throws(TLSError) -> RootChain {
        guard currentKey.publicKey == current.publicKey else { throw TLSError(.crypto, "the key is not the account's current root key") }
        guard links.count < Self.maximumLinks else { throw TLSError(.crypto, "the account key was rotated \(Self.maximumLinks) times; make a new account") }
        let link = try Certificate.makeRootLink(key: key, issuer: current, issuerKey: currentKey, notBefore: notBefore, notAfter: notAfter)
        return try RootChain(first: first, links: links + [link])
    }

    /// Whether the current root key signed `message`.
    public func currentSigned(_ signature: [UInt8], _ message: [UInt8]) -> Bool {
        guard let key = current.publicKey else { return false }
        return SigningKey.verify(signature: signature, message: message, publicKey: key)
    }
}
