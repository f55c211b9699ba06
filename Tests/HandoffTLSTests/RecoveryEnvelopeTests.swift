import Foundation
import HandoffModel
import Testing

@testable import HandoffTLS

/// The root key sealed with a recovery code (`RecoveryEnvelope`; docs/security.md, "Losing the
/// key holder"): scrypt's known answers, the parameters pinned, a wrong code, a tampered envelope.
@Suite(.timeLimit(.minutes(3))) struct RecoveryEnvelopeTests {
    static let code = RecoveryCode(secret: Array(0..<16))
    /// Cheap parameters for the tests that are not about the cost.
    static let quick = RecoveryEnvelope.Parameters(logN: 10, r: 8, p: 1)

    /// RFC 7914, section 12, the second vector.
    @Test func scryptMatchesRFC7914() throws {
        let out = try Crypto.scrypt(password: Array("password".utf8), salt: Array("NaCl".utf8), logN: 10, r: 8, p: 16, length: 64)
        #expect(hex(out) == "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b3731622eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640")
    }

    /// What the standard parameters derive from a known code and salt: a change of N, r, p or the
    /// length shows here (the value is Python's hashlib.scrypt with n=2^17, r=8, p=1).
    @Test func theStandardParametersDeriveTheKnownKey() throws {
        #expect(RecoveryEnvelope.Parameters.standard == RecoveryEnvelope.Parameters(logN: 17, r: 8, p: 1))
        let key = try RecoveryEnvelope.derive(Self.code, salt: Array(0xA0...0xAF), parameters: .standard)
        #expect(hex(key) == "16138c600f928cdae2d779fe0e43350792c81795a45bc4cdf7c07654dd79afed")
    }

    @Test func theRightCodeOpensTheAccountsKeyAndNothingElseDoes() throws {
        let root = try SigningKey.generate()
        let envelope = try RecoveryEnvelope.seal(root, code: Self.code, accountID: root.id, parameters: Self.quick)
        let encoded = envelope.encoded
        #expect(encoded.count == RecoveryEnvelope.encodedLength)
        let read = try RecoveryEnvelope(decoding: encoded)
        #expect(read == envelope)
        let opened = try #require(try read.open(code: Self.code, accountID: root.id))
        #expect(opened.publicKey == root.publicKey)
        // The key signs as the account's: what it signs verifies with the root's public key.
        let message = Array("account state".utf8)
        #expect(SigningKey.verify(signature: try opened.sign(message), message: message, publicKey: root.publicKey))

        // A wrong code, or another account's id: nothing.
        var wrong = Self.code.secret
        wrong[15] ^= 1
        #expect(try read.open(code: RecoveryCode(secret: wrong), accountID: root.id) == nil)
        #expect(try read.open(code: Self.code, accountID: try SigningKey.generate().id) == nil)
        // Sealed twice, nothing in common but the format (a fresh salt and nonce each time).
        let again = try RecoveryEnvelope.seal(root, code: Self.code, accountID: root.id, parameters: Self.quick).encoded
        #expect(again.count == encoded.count && again != encoded)
    }

    /// Any byte changed — the parameters, the salt, the nonce, the sealed key or its tag — and the
    /// envelope opens nothing (or is not read at all).
    @Test func aTamperedEnvelopeOpensNothing() throws {
        let root = try SigningKey.generate()
        let encoded = try RecoveryEnvelope.seal(root, code: Self.code, accountID: root.id, parameters: Self.quick).encoded
        for i in 0..<encoded.count {
            var bent = encoded
            bent[i] ^= 0x01
            guard let read = try? RecoveryEnvelope(decoding: bent) else { continue }
            #expect(try read.open(code: Self.code, accountID: root.id) == nil, "byte \(i)")
        }
    }

    /// An envelope from another device that would cost too much here, or is not this format, is
    /// refused before anything is derived.
    @Test func envelopesOutOfBoundsAreNotRead() throws {
        let root = try SigningKey.generate()
        let good = try RecoveryEnvelope.seal(root, code: Self.code, accountID: root.id, parameters: Self.quick).encoded
        for (offset, value) in [(3, UInt8(21)), (3, 9), (4, 0), (4, 17), (5, 0), (5, 17)] {
            var bent = good
            bent[offset] = value
            #expect(throws: RecoveryEnvelope.Malformed.self, "\(offset)=\(value)") { try RecoveryEnvelope(decoding: bent) }
        }
        // What OpenSSL would refuse anyway (RFC 7914: N < 2^(16·r)): r = 1 with N = 2^16.
        var narrow = good
        (narrow[3], narrow[4]) = (16, 1)
        #expect(throws: RecoveryEnvelope.Malformed.self) { try RecoveryEnvelope(decoding: narrow) }
        // 1 GiB at most: r = 16 with N = 2^20 is too much.
        var big = good
        (big[3], big[4]) = (20, 16)
        #expect(throws: RecoveryEnvelope.Malformed.self) { try RecoveryEnvelope(decoding: big) }
        #expect(throws: RecoveryEnvelope.Malformed.self) { try RecoveryEnvelope(decoding: Array(good.dropLast())) }
        #expect(throws: RecoveryEnvelope.Malformed.self) { try RecoveryEnvelope(decoding: [0x48, 0x4B, 0x02] + good.dropFirst(3)) }
    }

    @Test func theCodeIsWrittenAndReadAsAnInviteCodeIs() throws {
        let code = RecoveryCode(secret: Crypto.randomBytes(16))
        #expect(try RecoveryCode(parsing: code.text.lowercased()) == code)
        #expect(throws: InviteCode.ParseError.self) { try RecoveryCode(parsing: "ABCD") }
        #expect(InviteCode.ParseError.wrongLength(4).describe(as: "recovery code") == "a recovery code has 28 letters and digits (7 groups of 4); this one has 4")
        #expect(InviteCode.ParseError.wrongLength(4).description == "an invite code has 28 letters and digits (7 groups of 4); this one has 4")
    }
}
