import Synchronization

/// Limits what unauthenticated peers can cost us: a handshake budget per address, a cap on
/// connections still handshaking, and a penalty for addresses that keep presenting wrong join codes.
public struct AdmissionLimits: Sendable {
    /// Handshakes an address may start per minute (a token bucket of this size).
    public var handshakesPerMinute = 30
    /// Connections not yet authenticated, across all addresses.
    public var maximumUnauthenticated = 64
    /// Wrong join codes an address may present before it is shut out…
    public var joinFailures = 5
    /// …for this long.
    public var penaltySeconds: Double = 600

    public init() {}
}

final class AdmissionControl: Sendable {
    typealias Limits = AdmissionLimits

    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
        var joinFailures = 0
        var penaltyUntil: ContinuousClock.Instant?
    }

    private struct State {
        var buckets: [String: Bucket] = [:]
        var unauthenticated = 0
    }

    let limits: Limits
    private let state = Mutex(State())

    init(limits: Limits = Limits()) {
        self.limits = limits
    }

    enum Verdict: Equatable {
        case admitted
        case tooManyUnauthenticated
        case rateLimited
        case penalised
    }

    /// Asked when a connection arrives. When admitted, the caller must later call `settled()` once
    /// (the handshake finished or the connection closed).
    func admit(_ address: String, now: ContinuousClock.Instant = .now) -> Verdict {
        state.withLock { s in
            var bucket = s.buckets[address] ?? Bucket(tokens: Double(limits.handshakesPerMinute), updated: now)
            if let until = bucket.penaltyUntil, now < until { return .penalised }
            let elapsed = Double((now - bucket.updated).components.seconds) + Double((now - bucket.updated).components.attoseconds) / 1e18
            bucket.tokens = min(Double(limits.handshakesPerMinute), bucket.tokens + elapsed * Double(limits.handshakesPerMinute) / 60)
            bucket.updated = now
            guard s.unauthenticated < limits.maximumUnauthenticated else {
                s.buckets[address] = bucket
                return .tooManyUnauthenticated
            }
            guard bucket.tokens >= 1 else {
                s.buckets[address] = bucket
                return .rateLimited
            }
            bucket.tokens -= 1
            s.buckets[address] = bucket
            s.unauthenticated += 1
            if s.buckets.count > 4096 { s.buckets = s.buckets.filter { $0.value.penaltyUntil != nil } }
            return .admitted
        }
    }

    func settled() {
        state.withLock { $0.unauthenticated = max(0, $0.unauthenticated - 1) }
    }

    /// An address presented a join code nobody issued.
    func joinFailed(_ address: String, now: ContinuousClock.Instant = .now) {
        state.withLock { s in
            var bucket = s.buckets[address] ?? Bucket(tokens: 0, updated: now)
            bucket.joinFailures += 1
            if bucket.joinFailures >= limits.joinFailures {
                bucket.penaltyUntil = now + .milliseconds(Int64(limits.penaltySeconds * 1000))
                bucket.joinFailures = 0
            }
            s.buckets[address] = bucket
        }
    }

    var unauthenticatedCount: Int { state.withLock { $0.unauthenticated } }
}
