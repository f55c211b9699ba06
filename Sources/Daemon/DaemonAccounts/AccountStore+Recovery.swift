#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonCore
import HandoffAPI
import HandoffModel
import HandoffPeer
import HandoffSystem
import HandoffTLS
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

extension AccountStore {
    // MARK: Recovery

    /// Where a recovery code's derivation runs (half a second, 128 MiB): off the disk thread,
    /// which saves everything else.
    private static let keyDerivation = DiskThread(name: "handoff-kdf")

    /// `account recovery-code`, on the device holding the key: a new code from which any member
    /// restores the key (`recover`). The key sealed with it (`RecoveryEnvelope`) travels in the
    /// signed account state; the code is shown once and kept nowhere. A new one replaces the last.
    package func makeRecoveryCode(now: Timestamp = .now()) async throws(DaemonError) -> (code: RecoveryCode, info: AccountInfo) {
        let m = try requireMembership()
        let rootKey = try signingKey(m, or: DaemonError(.notAccountAdmin, "only the device holding the account key makes a recovery code; run it there"))
        let code = RecoveryCode(secret: Crypto.randomBytes(InviteCode.secretLength))
        let accountID = m.state.accountID
        let sealed = await Self.keyDerivation.run { () -> Result<RecoveryEnvelope, TLSError> in
            Result { () throws(TLSError) in try RecoveryEnvelope.seal(rootKey, code: code, accountID: accountID) }
        }
        // The actor ran other work while the key was derived: the change goes on the state as it
        // is now.
        let current = try requireMembership()
        // The same key, too: a rotation meanwhile would leave the envelope sealing a retired key.
        guard current.state.accountID == accountID, signingKey(current)?.publicKey == rootKey.publicKey else {
            throw DaemonError(.notAccountAdmin, "the account changed while the code was made; nothing was kept")
        }
        var next = current
        do {
            let envelope = try sealed.get()
            next.state = current.state.recoverable(with: AccountState.Recovery(envelope: envelope.encoded, madeAt: now, madeBy: current.deviceID), at: now)
            next.signedState = try AccountMaterial.sign(next.state, with: rootKey, chain: next.chain)
        } catch {
            throw DaemonError(.internalError, "cannot seal the account key: \(error)")
        }
        try await install(next, saving: true)
        logger.notice("a recovery code was made", metadata: ["version": "\(next.state.version)"])
        return (code, next.info)
    }

    /// `account recover CODE`, on a member: the account key from the state's envelope, if `code`
    /// is the one it was sealed with; this device holds it from then on (a signed state says so).
    /// Wrong codes are counted (`RecoveryAttempts`).
    package func recover(_ code: RecoveryCode, now: Timestamp = .now()) async throws(DaemonError) -> AccountInfo {
        let m = try requireMembership()
        guard m.rootKey == nil else { throw DaemonError(.accountExists, "this device holds the account key already") }
        guard let recovery = m.state.recovery else {
            throw DaemonError(DaemonError.Code(.notFound), "no recovery code was made for this account (handoffctl account recovery-code, on the device holding the key)")
        }
        var attempts = loadAttempts()
        if attempts.settle(now: now) { saveAttempts(attempts) }
        if let wait = attempts.wait(now: now) {
            throw DaemonError(DaemonError.Code(.rateLimited), "too many wrong recovery codes; try again in \(Self.duration(wait))")
        }
        let envelope: RecoveryEnvelope
        do {
            envelope = try RecoveryEnvelope(decoding: recovery.envelope)
        } catch {
            throw DaemonError(DaemonError.Code(.versionMismatch), "the account's recovery envelope is not one this handoff reads (\(error)); update handoff")
        }
        // Counted before it is tried, so that tries made at once are each counted; a right code
        // starts over below.
        attempts.failed(now: now)
        saveAttempts(attempts)
        let accountID = m.state.accountID
        let opened = await Self.keyDerivation.run { () -> Result<SigningKey?, TLSError> in
            Result { () throws(TLSError) in try envelope.open(code: code, accountID: accountID) }
        }
        if case .failure(let failure) = opened {
            // Not the code's fault (memory, OpenSSL): not counted.
            var undone = attempts
            undone.failures -= 1
            saveAttempts(undone)
            throw DaemonError(.internalError, "cannot derive the key from the recovery code: \(failure)")
        }
        guard case .success(let key?) = opened, key.publicKey == m.root.publicKey else {
            let left = attempts.freeLeft
            throw DaemonError(
                .codeRejected,
                "that is not this account's recovery code (the one this device knows of was made \(recovery.madeAt.rfc3339); a newer one "
                    + "reaches it with the account state: handoffctl account sync DEVICE); "
                    + (left > 0 ? "\(left) more tries before a wait" : "the next try waits \(Self.duration(attempts.wait(now: now) ?? 0))")
            )
        }
        saveAttempts(RecoveryAttempts())
        // As it is now (the actor ran other work meanwhile): still this account, still no key.
        var next = try requireMembership()
        guard next.state.accountID == accountID, next.rootKey == nil, next.root.publicKey == key.publicKey else {
            throw DaemonError(.accountExists, "the account changed while the code was tried; nothing was kept")
        }
        let rootKey = key
        next.rootKey = rootKey
        try recertifySelf(&next, now: now)
        next.state = next.state.held(by: next.deviceID, at: now)
        do {
            next.signedState = try AccountMaterial.sign(next.state, with: rootKey, chain: next.chain)
        } catch {
            throw DaemonError(.internalError, "cannot sign the account state: \(error)")
        }
        try await install(next, saving: true)
        logger.notice("the account key was recovered here", metadata: ["version": "\(next.state.version)"])
        return next.info
    }

    var attemptsPath: String { path + "-recovery-attempts" }

    private func loadAttempts() -> RecoveryAttempts {
        guard let bytes = try? PrivateFiles.read(attemptsPath, maximumSize: 4096) else { return RecoveryAttempts() }
        return (try? JSONDecoder().decode(RecoveryAttempts.self, from: Data(bytes))) ?? RecoveryAttempts()
    }

    private func saveAttempts(_ attempts: RecoveryAttempts) {
        guard let data = try? JSONEncoder().encode(attempts) else { return }
        do {
            try PrivateFiles.writeAtomically(Array(data), to: attemptsPath)
        } catch {
            logger.error("cannot save the count of wrong recovery codes", metadata: ["error": "\(error)"])
        }
    }
}
