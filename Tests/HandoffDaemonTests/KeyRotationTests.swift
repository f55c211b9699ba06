import Foundation
import HandoffAPI
import HandoffClient
import HandoffDiscovery
import HandoffModel
import HandoffTestSupport
import HandoffPeer
import HandoffTLS
import Testing

@testable import DaemonAccounts

/// The account key rotated after a recovery (docs/security.md, "Rotating the key"): the devices
/// with a session are certified again at once; one that was offline follows the new key when it
/// is back; the retired key's states are never taken on. Four daemons in this process.
@Suite(.timeLimit(.minutes(3))) struct KeyRotationTests {
    @Test func afterARecoveryTheNewKeyHolderRotatesAndAnOfflineDeviceCatchesUp() async throws {
        let network = DiscoveryNetwork()
        let a = try await TestDaemon.start(network: network)
        _ = try await a.client.send(.createAccount(CreateAccountRequest(deviceName: "desk")))
        var joined: [TestDaemon] = []
        for name in ["laptop", "phone", "tablet"] {
            let d = try await TestDaemon.start(network: network)
            let invites = try await a.client.subscribe(.invite)
            let code = try #require(try await invites.next()?.invite?.code)
            _ = try await d.client.send(.joinAccount(JoinAccountRequest(code: code, deviceName: name)))
            joined.append(d)
        }
        let (b, c, d) = (joined[0], joined[1], joined[2])
        let code = try await a.client.send(.makeRecoveryCode).code
        for member in joined { try await waitUntil("a member learns of the recovery code") { try await member.client.send(.account).recoveryCodeMadeAt != nil } }
        let aID = try await a.client.send(.account).deviceID

        // The tablet is off; the desk — the key holder — is lost.
        try await d.stop()
        try await a.finish()
        let recovered = try await b.client.send(.recover(RecoverRequest(code: code)))
        #expect(recovered.isAdmin && recovered.keyRotations == 0)
        _ = try await b.client.send(.removeDevice(aID.text))
        await expectFailure(.notAccountAdmin) { _ = try await c.client.send(.rotateKey) }

        // A new key: the laptop's own certificate at once, the phone's over their session.
        let rotated = try await b.client.send(.rotateKey)
        #expect(rotated.keyRotations == 1 && rotated.certificateFromRetiredKey == false && rotated.recoveryCodeMadeAt == nil)
        try await waitUntil("the phone is certified again by the new key") {
            let phone = try await c.client.send(.account)
            return phone.keyRotations == 1 && phone.certificateFromRetiredKey == false
        }
        // The old code sealed the retired key: gone with it.
        await expectFailure(.notFound) { _ = try await c.client.send(.recover(RecoverRequest(code: code))) }

        // The tablet comes back with its old certificate: accepted (the account lists it), it
        // follows the new key and is certified again.
        let back = try await TestDaemon.start(directory: d.directory, network: network)
        try await waitUntil("the tablet catches up") {
            let tablet = try await back.client.send(.account)
            return tablet.keyRotations == 1 && tablet.certificateFromRetiredKey == false && tablet.stateVersion == rotated.stateVersion
        }
        // And the new holder still invites.
        let invites = try await b.client.subscribe(.invite)
        let invite = try #require(try await invites.next()?.invite?.code)
        let e = try await TestDaemon.start(network: network)
        let eJoined = try await e.client.send(.joinAccount(JoinAccountRequest(code: invite, deviceName: "watch")))
        #expect(eJoined.keyRotations == 1 && eJoined.certificateFromRetiredKey == false && eJoined.deviceCount == 4)
        for daemon in [b, c, back, e] { try await daemon.finish() }
    }

    /// A state signed with the retired key — whatever its version — is not the account's any
    /// more, for a device that knows the rotation; a device that does not follows the links.
    @Test func theRetiredKeySignsNothingTaken() throws {
        let oldKey = try SigningKey.generate()
        let root = try Certificate.makeAccountRoot(key: oldKey, notBefore: .now().adding(seconds: -60), notAfter: .now().adding(seconds: 86_400))
        let chain = try RootChain(first: root)
        let newKey = try SigningKey.generate()
        let rotated = try chain.rotated(to: newKey, currentKey: oldKey, notBefore: .now().adding(seconds: -60), notAfter: .now().adding(seconds: 86_400))
        let state = AccountState(accountID: oldKey.id, name: "mine", version: 7, issuedAt: .now(), devices: [], revoked: [])
        let forged = try AccountMaterial.sign(AccountState(accountID: oldKey.id, name: "thief", version: 999, issuedAt: .now(), devices: [], revoked: []), with: oldKey, chain: chain)
        #expect(AccountMaterial.verify(forged, chain: rotated)?.current == false)
        let real = try AccountMaterial.sign(state, with: newKey, chain: rotated)
        #expect(AccountMaterial.verify(real, chain: rotated)?.current == true)
        let followed = try #require(AccountMaterial.verify(real, chain: chain))
        #expect(followed.current && followed.chain.links.count == 1 && followed.state.version == 7)
        // The links travel with the state.
        #expect(try SignedAccountState(decoding: real.encoded()) == real)
        // No version is read that the next change could not count past.
        let huge = AccountState(accountID: oldKey.id, name: "thief", version: .max, issuedAt: .now(), devices: [], revoked: [])
        #expect(throws: AccountState.DecodeError.self) { try AccountState(decoding: huge.encoded()) }
        #expect(AccountStateRank(rotations: 1, version: 2) > AccountStateRank(rotations: 0, version: 999))
    }
}
