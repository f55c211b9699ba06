import Foundation
import Testing

@testable import HandoffModel

@Suite(.timeLimit(.minutes(3))) struct AccountModelTests {
    @Test func base32MatchesRFC4648() {
        #expect(Base32.encode(Array("foobar".utf8)) == "mzxw6ytboi")
        #expect(Base32.decode("mzxw6ytboi") == Array("foobar".utf8))
        #expect(Base32.decode("mzxw6ytbo1") == nil)
    }

    @Test func deviceIDsParseOnlyTheirOwnForm() {
        let id = DeviceID(digest: Array(0..<32))
        #expect(id.text.count == 52)
        #expect(DeviceID(id.text) == id)
        #expect(DeviceID(id.text.uppercased()) == id)
        #expect(DeviceID(String(id.text.dropLast())) == nil)
        #expect(DeviceID(id.text + "a") == nil)
        #expect(DeviceID(String(repeating: "!", count: 52)) == nil)
        #expect(id.short == String(id.text.prefix(12)))
    }

    @Test func inviteCodesRoundTripAndForgiveHowPeopleType() throws {
        var rng = SplitMix64(seed: 7)
        for _ in 0..<1000 {
            let secret = (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let code = InviteCode(secret: secret)
            let text = code.text
            #expect(text.count == 28 + 6, "7 groups of 4 with dashes: \(text)")
            #expect(try InviteCode(parsing: text) == code)
            #expect(try InviteCode(parsing: text.lowercased().replacingOccurrences(of: "-", with: " ")) == code)
            let confusable = text.replacingOccurrences(of: "1", with: "l").replacingOccurrences(of: "0", with: "o")
            #expect(try InviteCode(parsing: confusable) == code)
        }
        let extremes = [InviteCode(secret: [UInt8](repeating: 0, count: 16)), InviteCode(secret: [UInt8](repeating: 255, count: 16))]
        for code in extremes { #expect(try InviteCode(parsing: code.text) == code) }
    }

    @Test func inviteCodeTyposAreCaught() throws {
        let code = InviteCode(secret: Array(100..<116))
        let symbols = Array(code.text.filter { $0 != "-" })
        // Every single-symbol substitution…
        for i in symbols.indices {
            for replacement in "0123456789ABCDEFGHJKMNPQRSTVWXYZ" where replacement != symbols[i] {
                var typo = symbols
                typo[i] = replacement
                #expect(throws: InviteCode.ParseError.self) { try InviteCode(parsing: String(typo)) }
            }
        }
        // …and every swap of neighbours that changes the text.
        for i in 0..<(symbols.count - 1) where symbols[i] != symbols[i + 1] {
            var typo = symbols
            typo.swapAt(i, i + 1)
            #expect(throws: InviteCode.ParseError.self) { try InviteCode(parsing: String(typo)) }
        }
        #expect(throws: InviteCode.ParseError.wrongLength(27)) { try InviteCode(parsing: String(symbols.dropLast())) }
        #expect(throws: InviteCode.ParseError.invalidCharacter("U")) { try InviteCode(parsing: "U" + String(symbols.dropFirst())) }
    }

    @Test func accountStateRoundTripsAndOnlyGrowsRevocations() throws {
        let accountID = DeviceID(digest: Array(repeating: 1, count: 32))
        let a = DeviceID(digest: Array(repeating: 2, count: 32))
        let b = DeviceID(digest: Array(repeating: 3, count: 32))
        let t = Timestamp(secondsSinceEpoch: 1_800_000_000)
        var state = AccountState(accountID: accountID, name: "Ana's devices", version: 1, issuedAt: t, devices: [], revoked: [])
        state = state.adding(.init(id: b, name: "laptop", addedAt: t), at: t)
        state = state.adding(.init(id: a, name: "desk", addedAt: t), at: t)
        #expect(state.version == 3)
        #expect(state.devices.map(\.id) == [a, b].sorted())
        #expect(try AccountState(decoding: state.encoded()) == state)

        let revoked = state.revoking(b, at: t.adding(seconds: 5))
        #expect(revoked.version == 4)
        #expect(revoked.isRevoked(b))
        #expect(revoked.device(b) == nil)
        #expect(revoked.revoked.first?.name == "laptop")
        #expect(try AccountState(decoding: revoked.encoded()) == revoked)
        let readded = revoked.adding(.init(id: b, name: "laptop", addedAt: t), at: t)
        #expect(readded.isRevoked(b), "a revocation is never undone by adding the device back")

        let signed = SignedAccountState(stateBytes: revoked.encoded(), signature: [9, 9, 9])
        #expect(try SignedAccountState(decoding: signed.encoded()) == signed)
        #expect(throws: AccountState.DecodeError.self) { try SignedAccountState(decoding: signed.encoded() + [0]) }
        #expect(throws: AccountState.DecodeError.self) { try AccountState(decoding: Array(revoked.encoded().dropLast(3))) }
    }

    /// Who holds the account key and the key's recovery envelope travel in the state; a state
    /// without them (written before they were kept) reads as it was.
    @Test func theKeyHolderAndTheRecoveryEnvelopeRoundTrip() throws {
        let accountID = DeviceID(digest: Array(repeating: 1, count: 32))
        let a = DeviceID(digest: Array(repeating: 2, count: 32))
        let b = DeviceID(digest: Array(repeating: 3, count: 32))
        let t = Timestamp(secondsSinceEpoch: 1_800_000_000)
        let old = AccountState(accountID: accountID, name: "Ana's devices", version: 1, issuedAt: t, devices: [], revoked: [])
        #expect(try AccountState(decoding: old.encoded()).keyHolder == nil)
        let recoverable = old.recoverable(with: AccountState.Recovery(envelope: Array(repeating: 7, count: 82), madeAt: t, madeBy: a), at: t)
        let held = recoverable.held(by: b, at: t.adding(seconds: 1))
        #expect(held.version == 3 && held.keyHolder == b && held.recovery?.madeBy == a)
        #expect(try AccountState(decoding: held.encoded()) == held)
        // An envelope larger than any format would make is not kept; the rest of the state is.
        let huge = old.recoverable(with: AccountState.Recovery(envelope: Array(repeating: 7, count: 2000), madeAt: t, madeBy: a), at: t)
        let read = try AccountState(decoding: huge.encoded())
        #expect(read.recovery == nil && read.version == huge.version)
    }
}
