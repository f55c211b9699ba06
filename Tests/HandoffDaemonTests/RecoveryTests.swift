import Foundation
import HandoffAPI
import HandoffClient
import HandoffDiscovery
import HandoffModel
import HandoffTestSupport
import Testing

@testable import DaemonAccounts

/// The account key restored from a recovery code (docs/security.md, "Losing the key holder"): made
/// on the key holder, carried to every member in the signed state, opened on a member with the
/// right code only; wrong codes are counted. Three daemons in this process.
@Suite(.timeLimit(.minutes(3))) struct RecoveryTests {
    @Test func aMemberTakesOverTheKeyWithTheCodeAndInvites() async throws {
        let network = DiscoveryNetwork()
        let a = try await TestDaemon.start(network: network)
        _ = try await a.client.send(.createAccount(CreateAccountRequest(deviceName: "desk")))
        let b = try await TestDaemon.start(network: network)
        let invites = try await a.client.subscribe(.invite)
        let first = try #require(try await invites.next()?.invite?.code)
        _ = try await b.client.send(.joinAccount(JoinAccountRequest(code: first, deviceName: "laptop")))
        await expectFailure(.notFound) { _ = try await b.client.send(.recover(RecoverRequest(code: RecoveryCode(secret: Array(0..<16)).text))) }
        await expectFailure(.notAccountAdmin) { _ = try await b.client.send(.makeRecoveryCode) }

        // Made on the key holder; B gets the envelope with the next state.
        let made = try await a.client.send(.makeRecoveryCode)
        #expect(made.account.recoveryCodeMadeAt != nil)
        try await waitUntil("B learns of the recovery code") { try await b.client.send(.account).recoveryCodeMadeAt != nil }

        // A typo, then a wrong code: refused, counted.
        await expectFailure(.invalidCode) { _ = try await b.client.send(.recover(RecoverRequest(code: "ABCD-EFGH"))) }
        var wrong = try RecoveryCode(parsing: made.code).secret
        wrong[0] ^= 0x80
        let refused = await expectFailure(.codeRejected) { _ = try await b.client.send(.recover(RecoverRequest(code: RecoveryCode(secret: wrong).text))) }
        #expect(refused.contains("4 more tries before a wait"), "\(refused)")
        #expect(try await b.client.send(.account).isAdmin == false)

        // The key holder does not just leave: it says how to hand the key over first.
        let staying = await expectFailure(.accountExists) { _ = try await a.client.send(.leaveAccount()) }
        #expect(staying.contains("restore the key on another device with the recovery code (handoffctl account recover CODE)"), "\(staying)")

        // The right one: B holds the key, and the account says so everywhere.
        let recovered = try await b.client.send(.recover(RecoverRequest(code: made.code.lowercased())))
        #expect(recovered.isAdmin)
        try await waitUntil("A learns the newer state") { try await a.client.send(.account).stateVersion >= recovered.stateVersion }
        // One key holder: A's copy goes with the state that names B (two would sign diverging states).
        #expect(try await a.client.send(.account).isAdmin == false)
        #expect(try await a.client.send(.account).keyHolder == recovered.deviceID)

        // B invites a third device.
        let updates = try await b.client.subscribe(.invite)
        let code = try #require(try await updates.next()?.invite?.code)
        let c = try await TestDaemon.start(network: network)
        let joined = try await c.client.send(.joinAccount(JoinAccountRequest(code: code, deviceName: "phone")))
        #expect(joined.deviceCount == 3)
        // A leaves as any member does; B removes it from the account.
        _ = try await a.client.send(.leaveAccount())
        try await waitUntil("B removes A") { try await b.client.send(.devices).devices.count == 2 }
        for d in [a, b, c] { try await d.finish() }
    }

    /// Five wrong codes, then each try waits: a minute, two, four… (`RecoveryAttempts`).
    @Test(arguments: [
        // (wrong codes so far, seconds since the last, seconds still to wait)
        (0, Int64(0), Int64?.none), (4, 0, nil), (5, 0, 60), (5, 59, 1), (5, 60, nil), (6, 30, 90), (7, 0, 240), (30, 0, 86_400),
        (5, -3600, 60),
    ] as [(Int, Int64, Int64?)])
    func wrongCodesWaitLongerAndLonger(failures: Int, since: Int64, wait: Int64?) {
        let t0 = Timestamp(microsecondsSinceEpoch: 1_800_000_000_000_000)
        var attempts = RecoveryAttempts()
        for _ in 0..<failures { attempts.failed(now: t0) }
        #expect(attempts.wait(now: t0.adding(seconds: since)) == wait)
    }

    /// A clock set back an hour: the wait counts from then, and says so (not an hour more).
    @Test func aClockSetBackWaitsWhatItSays() {
        let t0 = Timestamp(microsecondsSinceEpoch: 1_800_000_000_000_000)
        var attempts = RecoveryAttempts()
        for _ in 0..<5 { attempts.failed(now: t0) }
        let back = t0.adding(seconds: -3600)
        let settled = attempts.settle(now: back)
        #expect(settled)
        #expect(attempts.wait(now: back.adding(seconds: 60)) == nil)
        let again = attempts.settle(now: back.adding(seconds: 60))
        #expect(!again)
    }

    @Test func afterFiveWrongCodesTheNextWaits() async throws {
        let (a, b) = try await ContinuationTests.pair()
        let made = try await a.client.send(.makeRecoveryCode)
        try await waitUntil("B learns of the recovery code") { try await b.client.send(.account).recoveryCodeMadeAt != nil }
        for i in 0..<5 {
            await expectFailure(.codeRejected) {
                _ = try await b.client.send(.recover(RecoverRequest(code: RecoveryCode(secret: Array(repeating: UInt8(i), count: 16)).text)))
            }
        }
        // Even the right code waits now: nothing is tried.
        let waiting = await expectFailure(.rateLimited) { _ = try await b.client.send(.recover(RecoverRequest(code: made.code))) }
        #expect(waiting.contains("too many wrong recovery codes; try again in "), "\(waiting)")
        #expect(try await b.client.send(.account).isAdmin == false)
        for d in [a, b] { try await d.finish() }
    }
}
