import DaemonCore
import HandoffAPI
import HandoffModel
import HandoffTLS
import Synchronization

/// Pending invitations, consulted by the TLS server during handshakes (synchronously, on an event
/// loop) and by the join handler once a joiner proves the code.
///
/// Expired and used invites are remembered for an hour, so that a joiner who typed the right code
/// too late, or twice, hears exactly that rather than "wrong code".
package final class InviteBook: JoinPSKLookup, Sendable {
    package enum Outcome: Sendable, Equatable {
        case joined(DeviceInfo)
        case expired
    }

    enum Claim: Equatable {
        case granted
        case expired
        case alreadyUsed
        case unknown
    }

    private struct Entry {
        var code: InviteCode
        var psk: JoinPSK
        var createdAt: Timestamp
        var expiresAt: Timestamp
        var used = false
        var continuation: AsyncStream<Outcome>.Continuation
    }

    static let rememberSeconds: Int64 = 3600

    private let lifetimeSeconds: Int64
    private let clock: any DaemonClock
    private let entries = Mutex<[[UInt8]: Entry]>([:])
    /// Tells the other features when the pending invites change (`.invitesChanged`).
    private let announce: Announce

    /// The most recent invite still open, if any.
    package func newestPending() -> InviteCode? {
        let now = clock.now()
        return entries.withLock { all in
            all.values.filter { !$0.used && $0.expiresAt > now }.max { $0.createdAt < $1.createdAt }?.code
        }
    }

    package init(lifetimeSeconds: Int64 = 600, clock: any DaemonClock = SystemDaemonClock(), announce: @escaping Announce = { _ in }) {
        self.lifetimeSeconds = lifetimeSeconds
        self.clock = clock
        self.announce = announce
    }

    private func pendingChanged() {
        announce(.invitesChanged)
    }

    /// A new single-use code, valid for 10 minutes, and the stream on which its outcome arrives.
    func create() -> (code: InviteCode, expiresAt: Timestamp, outcome: AsyncStream<Outcome>) {
        let now = clock.now()
        let code = InviteCode(secret: Crypto.randomBytes(InviteCode.secretLength))
        let psk = JoinPSK(code: code)
        let expiresAt = now.adding(seconds: lifetimeSeconds)
        let (stream, continuation) = AsyncStream.makeStream(of: Outcome.self)
        entries.withLock { all in
            purge(&all, now: now)
            all[psk.identity] = Entry(code: code, psk: psk, createdAt: now, expiresAt: expiresAt, continuation: continuation)
        }
        pendingChanged()
        return (code, expiresAt, stream)
    }

    /// For the TLS handshake: the key of any invite we still remember, so the joiner can be told
    /// precisely why it cannot join; unknown identities get nothing.
    package func psk(forIdentity identity: [UInt8]) -> [UInt8]? {
        entries.withLock { $0[identity]?.psk.key }
    }

    /// Uses up the invite for a joiner who proved its code. Only one joiner ever gets `.granted`.
    func claim(_ identity: [UInt8]) -> Claim {
        let now = clock.now()
        let result = entries.withLock { all -> Claim in
            guard var entry = all[identity] else { return .unknown }
            if entry.used { return .alreadyUsed }
            if entry.expiresAt <= now { return .expired }
            entry.used = true
            all[identity] = entry
            return .granted
        }
        if result == .granted { pendingChanged() }
        return result
    }

    func expiry(of identity: [UInt8]) -> Timestamp? {
        entries.withLock { $0[identity]?.expiresAt }
    }

    /// Returns when the invite runs out; throws when cancelled, or for an invite we no longer
    /// hold (the inviter stopped waiting: it did not expire).
    package func waitForExpiry(of identity: [UInt8]) async throws {
        guard let expiresAt = expiry(of: identity) else { throw CancellationError() }
        try await clock.sleep(until: expiresAt)
    }

    /// Tells whoever waits on the invite that a device joined with it.
    func complete(_ identity: [UInt8], joined device: DeviceInfo) {
        let continuation = entries.withLock { $0[identity]?.continuation }
        continuation?.yield(.joined(device))
        continuation?.finish()
    }

    /// The invite ran out: a late joiner still hears "expired".
    package func expire(_ identity: [UInt8]) {
        let continuation = entries.withLock { $0[identity]?.continuation }
        continuation?.yield(.expired)
        continuation?.finish()
        pendingChanged()
    }

    /// The inviter stopped waiting (Ctrl-C) before anyone joined: the code is forgotten at once.
    /// (A used or expired invite is kept, so a late joiner still hears why.)
    package func cancel(_ identity: [UInt8]) {
        let now = clock.now()
        let continuation = entries.withLock { all -> AsyncStream<Outcome>.Continuation? in
            guard let entry = all[identity], !entry.used, entry.expiresAt > now else { return nil }
            all[identity] = nil
            return entry.continuation
        }
        continuation?.finish()
        if continuation != nil { pendingChanged() }
    }

    private func purge(_ all: inout [[UInt8]: Entry], now: Timestamp) {
        all = all.filter { $0.value.expiresAt.adding(seconds: InviteBook.rememberSeconds) > now }
    }
}
