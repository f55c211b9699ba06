import Foundation
import HandoffModel
import Testing

@testable import HandoffTLS

func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
func bytes(_ hex: String) -> [UInt8] {
    var out: [UInt8] = []
    var i = hex.startIndex
    while i < hex.endIndex {
        let j = hex.index(i, offsetBy: 2)
        out.append(UInt8(hex[i..<j], radix: 16)!)
        i = j
    }
    return out
}

@Suite(.timeLimit(.minutes(3))) struct CryptoTests {
    /// RFC 5869, test case 1.
    @Test func hkdfMatchesRFC5869() {
        let okm = Crypto.hkdf(
            secret: bytes("0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b"),
            salt: bytes("000102030405060708090a0b0c"),
            info: bytes("f0f1f2f3f4f5f6f7f8f9"),
            length: 42
        )
        #expect(hex(okm) == "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
    }

    /// RFC 4231, test case 2.
    @Test func hmacMatchesRFC4231() {
        let mac = Crypto.hmacSHA256(key: Array("Jefe".utf8), Array("what do ya want for nothing?".utf8))
        #expect(hex(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func sha256OfEmpty() {
        #expect(hex(Crypto.sha256([])) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    /// RFC 8032, test 1: the public key and signature of the all-known secret key.
    @Test func ed25519MatchesRFC8032() throws {
        let pem = """
            -----BEGIN PRIVATE KEY-----
            MC4CAQAwBQYDK2VwBCIEIJ1hsZ3v/VpguoRK9JLsLMREScVpezJpGXA7rAMcrn9g
            -----END PRIVATE KEY-----

            """
        let key = try SigningKey(privateKeyPEM: Array(pem.utf8))
        #expect(hex(key.publicKey) == "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
        let signature = try key.sign([])
        #expect(
            hex(signature)
                == "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
        )
        #expect(SigningKey.verify(signature: signature, message: [], publicKey: key.publicKey))
        #expect(!SigningKey.verify(signature: signature, message: [0], publicKey: key.publicKey))
        #expect(!SigningKey.verify(signature: Array(signature.dropLast()), message: [], publicKey: key.publicKey))
        #expect(!SigningKey.verify(signature: signature, message: [], publicKey: [1, 2, 3]))
    }

    @Test func keysAndCertificatesSurvivePEMAndDER() throws {
        let key = try SigningKey.generate()
        let again = try SigningKey(privateKeyPEM: try key.privateKeyPEM())
        #expect(again.publicKey == key.publicKey)
        #expect(!"\(key)".contains("PRIVATE"), "descriptions never show key material")

        let account = try TestAccount()
        let device = try account.device()
        let fromPEM = try Certificate(pem: device.certificate.pem)
        let fromDER = try Certificate(der: device.certificate.der)
        #expect(fromPEM.keyID == device.id)
        #expect(fromDER.commonName == device.id.text)
        #expect(fromDER.der == device.certificate.der)
        #expect(account.root.commonName == account.rootKey.id.text)
        #expect((device.certificate.notAfter ?? .now()) > .now())
        #expect(throws: TLSError.self) { try Certificate(der: [1, 2, 3]) }
        #expect(throws: TLSError.self) { try SigningKey(privateKeyPEM: Array("nope".utf8)) }
        #expect(throws: TLSError.self) { try DeviceIdentity(key: try SigningKey.generate(), certificate: device.certificate) }
    }

    @Test func joinPSKsAreDerivedOneWayFromTheCode() {
        let code = InviteCode(secret: Array(repeating: 7, count: 16))
        let psk = JoinPSK(code: code)
        #expect(psk.identity.count == 16)
        #expect(psk.key.count == 32)
        #expect(psk.identity != Array(code.secret))
        #expect(JoinPSK(code: InviteCode(secret: Array(repeating: 8, count: 16))) != psk)
    }
}
