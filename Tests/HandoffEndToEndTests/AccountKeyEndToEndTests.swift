import Foundation
import HandoffAPI
import HandoffModel
import HandoffTestSupport
import Testing

/// The account outlives its first device (docs/security.md, "Handing the key over", "Losing the
/// key holder", "Rotating the key"), on four simulated hosts with real handoffd and handoffctl as
/// the test user: the key handed from alpha to bravo; bravo, holding it, removes alpha and invites
/// delta; bravo is lost (its state deleted) and charlie takes the key over with the recovery code,
/// removes bravo and invites again; then charlie rotates the key while delta is off, and delta
/// catches up when it is back.
@Suite(.heavy, .timeLimit(.minutes(8))) struct AccountKeyEndToEndTests {
    func account(_ rig: Rig, _ host: String) async throws -> AccountInfo {
        try await rig.ctlJSON(host, AccountInfo.self, ["account", "show"])
    }

    /// Joins `host` to the account by an invite on `inviter`.
    @discardableResult
    func join(_ rig: Rig, _ host: String, invitedBy inviter: String) async throws -> AccountInfo {
        let invite = try RunningProcessForInvite(rig, on: inviter)
        let code = try await invite.code()
        try await rig.waitForInviteAdvert(seenFrom: host)
        let joined = try await rig.ctl(host, ["account", "join", code, "--device-name", host, "--json"])
        #expect(joined.status == 0, "join \(host): \(joined)")
        try await invite.finished()
        return try LocalAPIJSON.decoder().decode(AccountInfo.self, from: Data(joined.stdout.utf8))
    }

    /// `host` is in touch with `other` (a member session).
    func waitForSession(_ rig: Rig, _ host: String, with other: DeviceID) async throws {
        try await Rig.waitFor("\(host) to reach \(other.short)", seconds: 60) {
            try await rig.ctlJSON(host, PeersResponse.self, ["peers"]).peers.contains { $0.id == other && $0.reachable }
        }
    }

    @Test func theKeyIsHandedOverRecoveredAndRotated() async throws {
        await Rig.withHosts(["alpha", "bravo", "charlie", "delta"]) { rig in
            for host in ["alpha", "bravo", "charlie"] { try await rig.startDaemon(host) }
            let created = try await rig.ctlJSON("alpha", AccountInfo.self, ["account", "create", "--name", "Ana's devices", "--device-name", "alpha"])
            let bravo = try await join(rig, "bravo", invitedBy: "alpha")
            let charlie = try await join(rig, "charlie", invitedBy: "alpha")

            // 1. alpha hands the key to bravo; both sides act.
            try await waitForSession(rig, "alpha", with: bravo.deviceID)
            let transfer = try rig.ctlProcess("alpha", ["account", "transfer-key", "bravo"])
            try await transfer.wait(for: "the offer") { $0.stderr.contains("offered the account key to bravo") }
            try await Rig.waitFor("bravo to see the offer") { try await account(rig, "bravo").keyOffer?.deviceID == created.deviceID }
            let shown = try await rig.ctl("bravo", ["status"])
            #expect(shown.stdout.contains("alpha offers this device the account key until"), "\(shown.stdout)")
            let accepted = try await rig.ctl("bravo", ["account", "accept-key"])
            #expect(accepted.status == 0 && accepted.stdout.contains("holds the account key"), "\(accepted)")
            try await transfer.wait(for: "the hand-over to end") { $0.stdout.contains("bravo holds the account key now; this device is a member") }
            #expect(await transfer.exitStatus() == 0)
            #expect(try await account(rig, "alpha").isAdmin == false)
            try await Rig.waitFor("charlie to learn who holds the key") { try await account(rig, "charlie").keyHolder == bravo.deviceID }

            // 2. bravo removes alpha and invites delta.
            let removedAlpha = try await rig.ctl("bravo", ["devices", "remove", "alpha"])
            #expect(removedAlpha.status == 0, "\(removedAlpha)")
            try await Rig.waitFor("alpha to be told") { try await account(rig, "alpha").removal != nil }
            try await rig.startDaemon("delta")
            let delta = try await join(rig, "delta", invitedBy: "bravo")
            #expect(delta.keyHolder == bravo.deviceID)

            // 3. A recovery code on bravo; then bravo is lost: its state is gone.
            let made = try await rig.ctl("bravo", ["account", "recovery-code"])
            let code = made.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(made.status == 0 && (try? RecoveryCode(parsing: code)) != nil, "\(made)")
            try await Rig.waitFor("charlie to hold the envelope") { try await account(rig, "charlie").recoveryCodeMadeAt != nil }
            _ = try await rig.daemon("bravo")?.stop()
            let wiped = try await rig.run("bravo", ["rm", "-rf", rig.home("bravo") + "/.local/state/handoff"])
            #expect(wiped.status == 0, "\(wiped)")

            // 4. charlie recovers the key, removes bravo, invites again (bravo, reinstalled).
            let recovered = try await rig.ctl("charlie", ["account", "recover", code, "--json"])
            #expect(recovered.status == 0, "\(recovered)")
            #expect(try await account(rig, "charlie").isAdmin)
            let removedBravo = try await rig.ctl("charlie", ["devices", "remove", bravo.deviceID.text])
            #expect(removedBravo.status == 0, "\(removedBravo)")
            try await rig.startDaemon("bravo")
            #expect(try await rig.ctl("bravo", ["account", "show"]).status == 20, "a new installation")
            let reborn = try await join(rig, "bravo", invitedBy: "charlie")
            try await Rig.waitFor("delta to know the new bravo") {
                try await account(rig, "delta").stateVersion == (try await account(rig, "charlie")).stateVersion
            }

            // 5. With delta off, charlie rotates the key: bravo, online, is certified again.
            _ = try await rig.daemon("delta")?.stop()
            let rotated = try await rig.ctlJSON("charlie", AccountInfo.self, ["account", "rotate-key"])
            #expect(rotated.keyRotations == 1 && rotated.certificateFromRetiredKey == false && rotated.recoveryCodeMadeAt == nil)
            try await Rig.waitFor("bravo to follow the new key") {
                let info = try await account(rig, "bravo")
                return info.keyRotations == 1 && info.certificateFromRetiredKey == false
            }
            let doctor = try await rig.ctl("charlie", ["doctor"])
            #expect(doctor.stdout.contains("no recovery code was made"), "\(doctor.stdout)")

            // 6. delta comes back with its old certificate and catches up.
            try await rig.startDaemon("delta")
            try await Rig.waitFor("delta to follow the new key and be certified again", seconds: 60) {
                let info = try await account(rig, "delta")
                return info.keyRotations == 1 && info.certificateFromRetiredKey == false && info.stateVersion >= rotated.stateVersion
            }
            try await waitForSession(rig, "delta", with: reborn.deviceID)
            try await waitForSession(rig, "bravo", with: delta.deviceID)
            let shownDelta = try await rig.ctl("delta", ["account", "show"])
            #expect(shownDelta.stdout.contains("rotated once"), "\(shownDelta.stdout)")
            _ = charlie
        }
    }
}
