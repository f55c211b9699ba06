import CHandoffOpenSSL
import HandoffModel
import Testing

@testable import HandoffTLS

/// The pure parts of the member handshake: what a server makes of a ClientHello, and the device
/// proofs exchanged inside the channel.
@Suite struct DeviceProofTests {
    static let tls13: [UInt8] = [4, 0x03, 0x04, 0x03, 0x03]
    static let random = [UInt8](repeating: 5, count: 32)
    static let pskOffer: [UInt8] = {
        let identity = [UInt8](repeating: 7, count: 32)
        let identities = [0, 32] + identity + [0, 0, 0, 0]
        let binders: [UInt8] = [0, 33, 32] + [UInt8](repeating: 1, count: 32)
        return [0, UInt8(identities.count)] + identities + binders
    }()

    @Test(arguments: [
        (tls13, pskOffer, ClientHelloCheck.Decision.offered(identity: [UInt8](repeating: 7, count: 32), random: random)),
        (nil, pskOffer, .refused(.protocolVersion, alert: SSL_AD_PROTOCOL_VERSION, "")),
        ([2, 0x03, 0x03], pskOffer, .refused(.protocolVersion, alert: SSL_AD_PROTOCOL_VERSION, "")),
        ([3, 0x03, 0x04], pskOffer, .refused(.protocolVersion, alert: SSL_AD_PROTOCOL_VERSION, "")),
        (tls13, nil, .refused(.otherAccount, alert: SSL_AD_HANDSHAKE_FAILURE, "")),
        (tls13, [0, 7, 0, 9, 1, 2, 3, 4, 5], .refused(.malformed, alert: SSL_AD_DECODE_ERROR, "")),
        (tls13, [0xFF, 0xFF, 0, 1], .refused(.malformed, alert: SSL_AD_DECODE_ERROR, "")),
        (tls13, [], .refused(.malformed, alert: SSL_AD_DECODE_ERROR, "")),
    ] as [([UInt8]?, [UInt8]?, ClientHelloCheck.Decision)])
    func clientHellosAreJudgedBeforeAnyAnswer(versions: [UInt8]?, psk: [UInt8]?, expected: ClientHelloCheck.Decision) {
        let decision = ClientHelloCheck.decide(supportedVersions: versions, preSharedKey: psk, random: Self.random)
        switch (decision, expected) {
        case (.offered(let a, let randomA), .offered(let b, let randomB)): #expect(a == b && randomA == randomB)
        case (.refused(let a, let alertA, _), .refused(let b, let alertB, _)): #expect(a == b && alertA == alertB)
        default: Issue.record("\(decision), expected \(expected)")
        }
    }

    @Test func anOfferIsRecognisedOnlyWithItsSecret() {
        let keys = AccountKeys(accountSecret: Crypto.randomBytes(32))
        let offer = keys.offer(to: .anyone)
        #expect(offer.identity.count == AccountKeys.identityLength)
        #expect(keys.psk(forIdentity: offer.identity, addressedTo: [.anyone]) == offer.key)
        #expect(AccountKeys(accountSecret: Crypto.randomBytes(32)).psk(forIdentity: offer.identity, addressedTo: [.anyone]) == nil)
        var tampered = offer.identity
        tampered[3] ^= 1
        #expect(keys.psk(forIdentity: tampered, addressedTo: [.anyone]) == nil)
        #expect(keys.offer(to: .anyone).identity != offer.identity, "a fresh identity every time")
        #expect(keys.psk(forIdentity: Array(offer.identity.prefix(16)), addressedTo: [.anyone]) == nil)
    }

    /// Which hellos a device answers: each row is an addressee, and whether device A (advertising
    /// as "a-now", previously "a-before") takes it.
    @Test(arguments: [
        (HelloAddressee.advert(deviceA, instanceName: "a-now"), true),
        (.advert(deviceA, instanceName: "a-before"), true),
        (.advert(deviceA, instanceName: "a-long-ago"), false),
        (.advert(deviceB, instanceName: "a-now"), false),
        (.device(deviceA), true),
        (.device(deviceB), false),
        (.anyone, true),
    ])
    func anOfferIsAnsweredOnlyByItsAddressee(addressee: HelloAddressee, answered: Bool) {
        let keys = AccountKeys(accountSecret: Crypto.randomBytes(32))
        let hellos = MemberHelloGuard()
        hellos.advertising(as: "a-long-ago")
        hellos.advertising(as: "a-before")
        hellos.advertising(as: "a-now")
        let offer = keys.offer(to: addressee)
        #expect((keys.psk(forIdentity: offer.identity, addressedTo: hellos.addressees(for: deviceA)) == offer.key) == answered)
    }

    @Test func aSaltIsUsedOnce() {
        let hellos = MemberHelloGuard()
        let salts = (0..<(MemberHelloGuard.remembered + 1)).map { _ in Crypto.randomBytes(16) }
        #expect(hellos.firstUse(ofSalt: salts[0]))
        #expect(!hellos.firstUse(ofSalt: salts[0]), "a replay")
        #expect(salts.dropFirst().allSatisfy { hellos.firstUse(ofSalt: $0) })
        #expect(hellos.firstUse(ofSalt: salts[0]), "the oldest is forgotten beyond the limit")
        #expect(!hellos.firstUse(ofSalt: salts[2]), "the newer ones are not")
        let strangers = Crypto.randomBytes(16)
        #expect(hellos.firstUse(ofSalt: strangers, remember: false))
        #expect(hellos.firstUse(ofSalt: strangers, remember: false), "a stranger's salt is not kept")
    }

    @Test func aProofIsBoundToItsConnectionAndItsRole() throws {
        let account = try TestAccount()
        let device = try account.device()
        let exporter = Crypto.randomBytes(32)
        let record = try DeviceProof.proof(identity: device, role: .client, exporter: exporter)
        let (der, signature, links) = try #require(DeviceProof.parseProof(record.body))
        #expect(der == device.certificate.der && links.isEmpty)
        let key = device.key.publicKey
        #expect(SigningKey.verify(signature: signature, message: DeviceProof.message(role: .client, exporter: exporter), publicKey: key))
        #expect(!SigningKey.verify(signature: signature, message: DeviceProof.message(role: .server, exporter: exporter), publicKey: key))
        #expect(!SigningKey.verify(signature: signature, message: DeviceProof.message(role: .client, exporter: Crypto.randomBytes(32)), publicKey: key))
    }

    @Test func recordsAreBoundedAndShaped() {
        #expect(DeviceProof.bodyLength(header: [1, 0x40, 0x00])! == (.proof, 16 * 1024))
        #expect(DeviceProof.bodyLength(header: [1, 0x40, 0x01]) == nil, "over 16 KiB")
        #expect(DeviceProof.bodyLength(header: [3, 0, 1]) == nil, "not a kind of ours")
        #expect(DeviceProof.bodyLength(header: [2, 0]) == nil)
        #expect(DeviceProof.parseProof([0, 1, 9]) == nil)
        #expect(DeviceProof.parseProof([0, 0] + [UInt8](repeating: 0, count: 64)) == nil, "no certificate")
        #expect(DeviceProof.parseProof([0, 1, 9] + [UInt8](repeating: 0, count: 63)) == nil, "short signature")
        let proof = [0, 1, 9] + [UInt8](repeating: 0, count: 64)
        #expect(DeviceProof.parseProof(proof + [0, 2, 7, 7])?.links == [[7, 7]], "a root link")
        #expect(DeviceProof.parseProof(proof + [0, 2, 7]) == nil, "a short link")
        #expect(DeviceProof.parseProof(proof + [0, 0]) == nil, "an empty link")
        #expect(DeviceProof.parseProof(proof + [1]) == nil, "a stray byte")
        let revoked = DeviceProof.refusalError(Array("revoked".utf8))
        #expect(revoked.code == .refusedByPeer && revoked.message.contains("revoked"), "not .revoked: that would name the other device")
        #expect(DeviceProof.refusalError(Crypto.randomBytes(100)).code == .refusedByPeer)
    }
}

private let deviceA = DeviceID(digest: Array(repeating: 0xA, count: 32))
private let deviceB = DeviceID(digest: Array(repeating: 0xB, count: 32))
