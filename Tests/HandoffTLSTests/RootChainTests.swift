import CHandoffOpenSSL
import HandoffModel
import Testing

@testable import HandoffTLS

/// The account's root chain after a rotation (docs/security.md, "Rotating the key"): followed link
/// by link from the root a device knows, never along a fork; device certificates judged against
/// the current root, a retired one (listed devices only) or, with the sender's links, a newer one.
@Suite struct RootChainTests {
    let account: TestAccount
    let chain: RootChain
    let newKey: SigningKey
    let rotated: RootChain

    init() throws {
        account = try TestAccount()
        chain = try RootChain(first: account.root)
        newKey = try SigningKey.generate()
        rotated = try chain.rotated(to: newKey, currentKey: account.rootKey, notBefore: .now().adding(seconds: -60), notAfter: .now().adding(seconds: 86_400))
    }

    func device(issuedBy chain: RootChain, key rootKey: SigningKey) throws -> DeviceIdentity {
        let key = try SigningKey.generate()
        let cert = try Certificate.issueDevice(
            publicKey: key.publicKey, root: chain.current, rootKey: rootKey, notBefore: .now().adding(seconds: -60), notAfter: .now().adding(seconds: 3600)
        )
        return try DeviceIdentity(key: key, certificate: cert)
    }

    @Test func aChainIsFollowedOnlyWhereItExtendsWhatIsKnown() throws {
        #expect(rotated.accountID == account.root.keyID && rotated.current.publicKey == newKey.publicKey)
        #expect(chain.following(rotated.linkDERs)?.current.publicKey == newKey.publicKey)
        #expect(rotated.following([])?.links.count == 1, "a device behind changes nothing here")
        #expect(rotated.following(rotated.linkDERs)?.links.count == 1)

        // A fork made with the retired key is not followed by a device that knows the rotation.
        let thief = try chain.rotated(to: try SigningKey.generate(), currentKey: account.rootKey, notBefore: .now(), notAfter: .now().adding(seconds: 60))
        #expect(rotated.following(thief.linkDERs) == nil)
        // A link its predecessor did not issue is not followed; neither is garbage.
        let stranger = try TestAccount()
        let unrelated = try RootChain(first: stranger.root).rotated(to: newKey, currentKey: stranger.rootKey, notBefore: .now(), notAfter: .now().adding(seconds: 60))
        #expect(chain.following(unrelated.linkDERs) == nil)
        #expect(chain.following([[1, 2, 3]]) == nil)
        #expect(chain.following(Array(repeating: rotated.linkDERs[0], count: RootChain.maximumLinks + 1)) == nil)
        // Only the current key rotates.
        #expect(throws: TLSError.self) { try rotated.rotated(to: try SigningKey.generate(), currentKey: account.rootKey, notBefore: .now(), notAfter: .now()) }
    }

    @Test func devicesAreJudgedAgainstTheRightRoot() throws {
        let old = try device(issuedBy: chain, key: account.rootKey)
        let new = try device(issuedBy: rotated, key: newKey)
        let afterRotation = try TrustPolicy(chain: rotated, accountSecrets: [account.secret], listed: [old.id])

        // After the rotation: a new certificate; an old one for a listed device; not one the
        // retired key made for a device the account does not list.
        #expect(try DeviceProof.judge(der: new.certificate.der, trust: afterRotation, expectedPeer: nil).get().1 == new.id)
        #expect(try DeviceProof.judge(der: old.certificate.der, trust: afterRotation, expectedPeer: nil).get().1 == old.id)
        let minted = try device(issuedBy: chain, key: account.rootKey)
        guard case .failure(let refused) = DeviceProof.judge(der: minted.certificate.der, trust: afterRotation, expectedPeer: nil) else {
            Issue.record("a device the retired key minted was accepted")
            return
        }
        #expect(refused.code == .otherAccount && refused.message.contains("retired"))
        // A device removed before the rotation is let through, marked removed, to be told so.
        let removedDevice = try device(issuedBy: chain, key: account.rootKey)
        let withRemoval = try TrustPolicy(chain: rotated, accountSecrets: [account.secret], revoked: [removedDevice.id], listed: [old.id])
        #expect(try DeviceProof.judge(der: removedDevice.certificate.der, trust: withRemoval, expectedPeer: nil).get().removed)

        // A device that has not heard of the rotation: the new certificate with the sender's
        // links, not without, nor along a fork.
        let before = try TrustPolicy(chain: chain, accountSecrets: [account.secret])
        #expect(try DeviceProof.judge(der: new.certificate.der, links: rotated.linkDERs, trust: before, expectedPeer: nil).get().1 == new.id)
        #expect(throws: TLSError.self) { try DeviceProof.judge(der: new.certificate.der, trust: before, expectedPeer: nil).get() }
        let thiefKey = try SigningKey.generate()
        let thief = try chain.rotated(to: thiefKey, currentKey: account.rootKey, notBefore: .now(), notAfter: .now().adding(seconds: 60))
        #expect(throws: TLSError.self) { try DeviceProof.judge(der: new.certificate.der, links: thief.linkDERs, trust: before, expectedPeer: nil).get() }

        // Two rotations behind: a certificate from the root in between is followed for a device
        // this one lists, not for one it does not.
        let thirdKey = try SigningKey.generate()
        let twice = try rotated.rotated(to: thirdKey, currentKey: newKey, notBefore: .now().adding(seconds: -60), notAfter: .now().adding(seconds: 86_400))
        let listing = try TrustPolicy(chain: chain, accountSecrets: [account.secret], listed: [new.id])
        #expect(try DeviceProof.judge(der: new.certificate.der, links: twice.linkDERs, trust: listing, expectedPeer: nil).get().1 == new.id)
        #expect(throws: TLSError.self) { try DeviceProof.judge(der: new.certificate.der, links: twice.linkDERs, trust: before, expectedPeer: nil).get() }
    }
}
