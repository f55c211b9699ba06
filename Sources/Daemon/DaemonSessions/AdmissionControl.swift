import DaemonCore
import Synchronization

/// Limits what unauthenticated peers can cost us — without letting a flood of them turn against
/// the members (docs/security.md, "Members first"): a handshake budget per address, a cap on
/// connections still handshaking, part of which only addresses that recently completed a member
/// handshake may use, a share per address of the rest, and a penalty for addresses that keep
/// presenting wrong join codes.
public struct AdmissionLimits: Sendable {
    /// Handshakes an address may start per minute (a token bucket of this size). Addresses of
    /// members are not counted: each stream is a connection of its own.
    public var handshakesPerMinute = 30
    /// Connections not yet authenticated, across all addresses…
    public var maximumUnauthenticated = 64
    /// …of which this many only members' addresses may take: strangers from any number of
    /// addresses cannot hold them all.
    public var reservedForMembers = 16
    /// Connections not yet authenticated from one address that is not a member's.
    public var perAddress = 4
    /// How long an address that completed a member handshake counts as a member's, and how many
    /// such addresses are remembered.
    public var memberAddressSeconds: Double = 24 * 3600
    public var memberAddresses = 256
    /// Wrong join codes an address may present before it is shut out…
    public var joinFailures = 5
    /// …for this long.
    public var penaltySeconds: Double = 600

    public init() {}
}

package final class AdmissionControl: Sendable {
    package typealias Limits = AdmissionLimits

    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
        var joinFailures = 0
        var penaltyUntil: ContinuousClock.Instant?
    }

    private struct State {
        var buckets: [String: Bucket] = [:]
        var unauthenticated = 0
        var byAddress: [String: Int] = [:]
        /// Addresses that completed a member handshake, and when they last did.
        var members: [String: ContinuousClock.Instant] = [:]
        /// False while handoff is off on this device: nobody is let in.
        var open = true
    }

    let limits: Limits
    private let state = Mutex(State())

    private let clock: any DaemonClock

    package init(limits: Limits = Limits(), clock: any DaemonClock = SystemDaemonClock()) {
        self.limits = limits
        self.clock = clock
    }

    enum Verdict: Equatable {
        case admitted
        /// Every slot a stranger may take is taken (a member's are reserved).
        case tooManyUnauthenticated
        /// This address has started too many handshakes, or has too many under way.
        case rateLimited
        /// This address presented too many wrong join codes.
        case penalised
        /// Handoff is off on this device: no device is answered at all.
        case closed

        /// Whether the address itself is refused for now (it is told: `RefusalAlert`), rather
        /// than the daemon being busy.
        var refusesTheAddress: Bool { self == .rateLimited || self == .penalised }
    }

    /// Asked when a connection arrives. When admitted, the caller must later call
    /// `settled(address)` once (the handshake finished or the connection closed).
    func admit(_ address: String, now given: ContinuousClock.Instant? = nil) -> Verdict {
        let now = given ?? clock.instant()
        return state.withLock { s in
            guard s.open else { return .closed }
            if let seen = s.members[address], now - seen < seconds(limits.memberAddressSeconds) {
                // A member's address: the whole cap, no per-minute budget.
                guard s.unauthenticated < limits.maximumUnauthenticated else { return .tooManyUnauthenticated }
                take(address, &s)
                return .admitted
            }
            var bucket = s.buckets[address] ?? Bucket(tokens: Double(limits.handshakesPerMinute), updated: now)
            if let until = bucket.penaltyUntil, now < until { return .penalised }
            let elapsed = Double((now - bucket.updated).components.seconds) + Double((now - bucket.updated).components.attoseconds) / 1e18
            bucket.tokens = min(Double(limits.handshakesPerMinute), bucket.tokens + elapsed * Double(limits.handshakesPerMinute) / 60)
            bucket.updated = now
            s.buckets[address] = bucket
            guard s.unauthenticated < max(0, limits.maximumUnauthenticated - limits.reservedForMembers) else { return .tooManyUnauthenticated }
            guard bucket.tokens >= 1, s.byAddress[address, default: 0] < limits.perAddress else { return .rateLimited }
            s.buckets[address]!.tokens -= 1
            take(address, &s)
            if s.buckets.count > 4096 { s.buckets = s.buckets.filter { $0.value.penaltyUntil != nil } }
            return .admitted
        }
    }

    /// Lets connections in (handoff on) or none (off); the composition root follows the device's
    /// switch (`DeviceSwitch`).
    package func open(_ open: Bool) {
        state.withLock { $0.open = open }
    }

    /// The handshake of a connection admitted for `address` finished, or the connection closed.
    func settled(_ address: String) {
        state.withLock { s in
            s.unauthenticated = max(0, s.unauthenticated - 1)
            let left = s.byAddress[address, default: 1] - 1
            s.byAddress[address] = left > 0 ? left : nil
        }
    }

    /// A connection from `address` completed a member handshake: its next ones come first.
    func memberAuthenticated(_ address: String, now given: ContinuousClock.Instant? = nil) {
        let now = given ?? clock.instant()
        return state.withLock { s in
            s.members[address] = now
            guard s.members.count > limits.memberAddresses else { return }
            // Forget the address seen longest ago.
            if let oldest = s.members.min(by: { $0.value < $1.value })?.key { s.members[oldest] = nil }
        }
    }

    /// An address presented a join code nobody issued.
    func joinFailed(_ address: String, now given: ContinuousClock.Instant? = nil) {
        let now = given ?? clock.instant()
        return state.withLock { s in
            var bucket = s.buckets[address] ?? Bucket(tokens: 0, updated: now)
            bucket.joinFailures += 1
            if bucket.joinFailures >= limits.joinFailures {
                bucket.penaltyUntil = now + seconds(limits.penaltySeconds)
                bucket.joinFailures = 0
            }
            s.buckets[address] = bucket
        }
    }

    var unauthenticatedCount: Int { state.withLock { $0.unauthenticated } }

    private func take(_ address: String, _ s: inout State) {
        s.unauthenticated += 1
        s.byAddress[address, default: 0] += 1
    }

    private func seconds(_ value: Double) -> Duration { .milliseconds(Int64(value * 1000)) }
}
