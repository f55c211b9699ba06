/// How much of avahi the instances on the link may cost us, whoever advertises them
/// (docs/discovery.md, "A link full of strangers").
///
/// Every ref through Avahi's compat layer is an avahi client of its own: a thread, a socket pair
/// and a system-bus connection (docs/platform.md), and dbus-daemon allows a user 256 connections in all.
/// So a stranger's advert must cost no long-lived ref: each instance is resolved once (a few at a
/// time, each for a bounded time), and only the instances whose TXT carries our account's tag (or
/// a wanted join tag) are followed with long-lived queries — at most `maximumFollowed` of them.
/// The rest are remembered with the TXT they had, so that they can be looked at again when what
/// we are interested in changes (a new account secret, a join), up to `maximumRemembered`; beyond
/// `maximumKnown` instances, new ones are not tracked at all.
///
/// A value: events in, actions out; the clock is the caller's (table-tested).
package struct DiscoveryBudget {
    /// Whether an instance's record is one we follow.
    package typealias Interest = (ServiceInstance, TXTRecord) -> Bool

    package struct Limits {
        package var maximumResolving = 8
        package var resolveTimeout: Duration = .seconds(5)
        package var maximumFollowed = 64
        package var maximumRemembered = 1024
        package var maximumKnown = 4096
        /// Address queries start with a follow and end after this: addresses rarely change, and a
        /// change shows as the instance leaving and coming back (browse), which starts them again.
        package var addressQueryLifetime: Duration = .seconds(10)
        /// An instance whose resolve or TXT query failed (a busy avahi-daemon) is tried again after
        /// this, doubling for each failure in a row up to `longestRetry` (so that a record that
        /// never resolves costs a wake-up every few minutes, not every 30 s): avahi does not
        /// report an instance again while it stays in its cache.
        package var retryAfter: Duration = .seconds(30)
        package var longestRetry: Duration = .seconds(960)

        package init() {}
    }

    package enum Action: Hashable {
        /// Start a one-shot resolve.
        case resolve(ServiceInstance)
        /// Give up a resolve (it timed out, or the instance left).
        case cancelResolve(ServiceInstance)
        /// Keep following this instance: its TXT (and, for a while, its addresses).
        case follow(ServiceInstance)
        /// Stop following it: release its queries.
        case unfollow(ServiceInstance)
        /// End its address queries (their lifetime is over).
        case endAddressQueries(ServiceInstance)
    }

    package let limits: Limits
    private var known: Set<ServiceInstance> = []
    private var waiting: [ServiceInstance] = []
    private var queued: Set<ServiceInstance> = []
    private var resolving: [ServiceInstance: ContinuousClock.Instant] = [:]
    package private(set) var followed: Set<ServiceInstance> = []
    /// The TXT each followed instance has now.
    private var followedTXT: [ServiceInstance: TXTRecord] = [:]
    private var addressQueriesUntil: [ServiceInstance: ContinuousClock.Instant] = [:]
    /// Resolved and not followed (a stranger, or ours beyond the cap), with the TXT it had.
    private var remembered: [ServiceInstance: TXTRecord] = [:]
    /// Whose resolve failed or timed out, and when: resolved again after `retryAfter`, or when
    /// browsing reports them again.
    private var failed: [ServiceInstance: ContinuousClock.Instant] = [:]
    /// Failures in a row, for the retry's backoff (forgotten once an instance resolves or goes).
    private var failures: [ServiceInstance: Int] = [:]
    /// Resolved, not followed, and not remembered (beyond `maximumRemembered`): looked at again
    /// when the interest changes, like the remembered ones.
    private var dropped: Set<ServiceInstance> = []
    /// Instances not tracked because `maximumKnown` was reached.
    package private(set) var untracked = 0

    package init(limits: Limits = Limits()) {
        self.limits = limits
    }

    package var resolvingCount: Int { resolving.count }
    package func tracks(_ instance: ServiceInstance) -> Bool { known.contains(instance) }
    package var knownCount: Int { known.count }

    /// Browsing found `instance` (on its first interface).
    package mutating func appeared(_ instance: ServiceInstance, now: ContinuousClock.Instant) -> [Action] {
        if failed.removeValue(forKey: instance) != nil {
            enqueue(instance)
            return startResolves(now: now)
        }
        guard !known.contains(instance) else { return [] }
        guard known.count < limits.maximumKnown else {
            untracked += 1
            return []
        }
        known.insert(instance)
        enqueue(instance)
        return startResolves(now: now)
    }

    /// Browsing lost `instance` (on its last interface).
    package mutating func disappeared(_ instance: ServiceInstance, interest: Interest, now: ContinuousClock.Instant) -> [Action] {
        guard known.remove(instance) != nil else { return [] }
        var actions: [Action] = []
        if queued.remove(instance) != nil, let index = waiting.firstIndex(of: instance) { waiting.remove(at: index) }
        if resolving.removeValue(forKey: instance) != nil { actions.append(.cancelResolve(instance)) }
        remembered[instance] = nil
        dropped.remove(instance)
        failed[instance] = nil
        failures[instance] = nil
        addressQueriesUntil[instance] = nil
        followedTXT[instance] = nil
        if followed.remove(instance) != nil {
            actions.append(.unfollow(instance))
            actions += followRemembered(interest: interest, now: now)
        }
        return actions + startResolves(now: now)
    }

    /// Its resolve answered with `txt`; `interesting` says whether the TXT is one we follow.
    package mutating func resolved(_ instance: ServiceInstance, txt: TXTRecord, interesting: Bool, now: ContinuousClock.Instant) -> [Action] {
        guard resolving.removeValue(forKey: instance) != nil else { return [] }
        failures[instance] = nil
        var actions: [Action] = []
        if followed.contains(instance) {
            // Looked at again while followed (interest changes close together): nothing new.
            followedTXT[instance] = txt
            return startResolves(now: now)
        }
        if interesting, followed.count < limits.maximumFollowed, !isCopy(txt, of: instance) {
            actions += startFollowing(instance, txt: txt, now: now)
        } else {
            remember(instance, txt: txt)
        }
        return actions + startResolves(now: now)
    }

    /// Its resolve failed: it is tried again if browsing finds it again.
    package mutating func resolveFailed(_ instance: ServiceInstance, now: ContinuousClock.Instant) -> [Action] {
        guard resolving.removeValue(forKey: instance) != nil else { return [] }
        fail(instance, now: now)
        return startResolves(now: now)
    }

    private mutating func fail(_ instance: ServiceInstance, now: ContinuousClock.Instant) {
        failed[instance] = now
        failures[instance, default: 0] += 1
    }

    /// When a failed instance is tried again.
    private func retryAt(_ instance: ServiceInstance, failedAt: ContinuousClock.Instant) -> ContinuousClock.Instant {
        let doublings = min(max(0, failures[instance, default: 1] - 1), 10)
        return failedAt + min(limits.retryAfter * (1 << doublings), limits.longestRetry)
    }

    /// The TXT query of a followed instance failed: it is no longer followed, and is looked at
    /// again later.
    package mutating func followFailed(_ instance: ServiceInstance, now: ContinuousClock.Instant) -> [Action] {
        guard followed.remove(instance) != nil else { return [] }
        followedTXT[instance] = nil
        addressQueriesUntil[instance] = nil
        fail(instance, now: now)
        return [.unfollow(instance)] + startResolves(now: now)
    }

    /// A followed instance's TXT changed: one that is no longer ours is no longer followed.
    package mutating func txtChanged(_ instance: ServiceInstance, txt: TXTRecord, interest: Interest, now: ContinuousClock.Instant) -> [Action] {
        guard followed.contains(instance) else { return [] }
        followedTXT[instance] = txt
        guard !interest(instance, txt) else { return [] }
        return stopFollowing(instance) + followRemembered(interest: interest, now: now)
    }

    /// What we follow changed (account keys, a join begun or over): followed instances may be
    /// strangers now, remembered ones ours — by the TXT they had, or the one they have now (a
    /// record not followed may have changed since: an inviter adds its join tag), so every
    /// remembered one is resolved again, a few at a time.
    package mutating func interestChanged(_ interest: Interest, now: ContinuousClock.Instant) -> [Action] {
        var actions: [Action] = []
        for (instance, txt) in followedTXT where !interest(instance, txt) { actions += stopFollowing(instance) }
        actions += followRemembered(interest: interest, now: now)
        for instance in remembered.keys where resolving[instance] == nil { enqueue(instance) }
        // Those whose resolve failed (a busy avahi-daemon), and those not remembered, too.
        for instance in failed.keys { enqueue(instance) }
        failed.removeAll()
        for instance in dropped where resolving[instance] == nil { enqueue(instance) }
        dropped.removeAll()
        return actions + startResolves(now: now)
    }

    /// Time passed: resolves that took too long are given up; address queries end.
    package mutating func tick(now: ContinuousClock.Instant) -> [Action] {
        var actions: [Action] = []
        for (instance, started) in resolving where now - started >= limits.resolveTimeout {
            resolving[instance] = nil
            fail(instance, now: now)
            actions.append(.cancelResolve(instance))
        }
        for (instance, since) in failed where now >= retryAt(instance, failedAt: since) {
            failed[instance] = nil
            enqueue(instance)
        }
        for (instance, until) in addressQueriesUntil where now >= until {
            addressQueriesUntil[instance] = nil
            actions.append(.endAddressQueries(instance))
        }
        return actions + startResolves(now: now)
    }

    /// When `tick` next has something to do.
    package var nextDeadline: ContinuousClock.Instant? {
        (resolving.values.map { $0 + limits.resolveTimeout } + Array(addressQueriesUntil.values) + failed.map { retryAt($0.key, failedAt: $0.value) }).min()
    }

    /// Whether `instance` was resolved and is not followed, for counting strangers.
    package func isRemembered(_ instance: ServiceInstance) -> Bool { remembered[instance] != nil }

    // MARK: Helpers

    private mutating func enqueue(_ instance: ServiceInstance) {
        guard queued.insert(instance).inserted else { return }
        waiting.append(instance)
    }

    private mutating func startResolves(now: ContinuousClock.Instant) -> [Action] {
        var actions: [Action] = []
        while resolving.count < limits.maximumResolving, !waiting.isEmpty {
            let next = waiting.removeFirst()
            queued.remove(next)
            resolving[next] = now
            actions.append(.resolve(next))
        }
        return actions
    }

    private mutating func startFollowing(_ instance: ServiceInstance, txt: TXTRecord, now: ContinuousClock.Instant) -> [Action] {
        remembered[instance] = nil
        dropped.remove(instance)
        if queued.remove(instance) != nil, let index = waiting.firstIndex(of: instance) { waiting.remove(at: index) }
        followed.insert(instance)
        followedTXT[instance] = txt
        addressQueriesUntil[instance] = now + limits.addressQueryLifetime
        return [.follow(instance)]
    }

    /// Every real advert is sealed with a fresh nonce, so a TXT identical to one we follow is a
    /// copy, made to cost us a ref: not followed.
    private func isCopy(_ txt: TXTRecord, of instance: ServiceInstance) -> Bool {
        followedTXT.contains { $0.key != instance && $0.value == txt }
    }

    private mutating func stopFollowing(_ instance: ServiceInstance) -> [Action] {
        guard followed.remove(instance) != nil, let txt = followedTXT.removeValue(forKey: instance) else { return [] }
        addressQueriesUntil[instance] = nil
        remember(instance, txt: txt)
        return [.unfollow(instance)]
    }

    private mutating func remember(_ instance: ServiceInstance, txt: TXTRecord) {
        guard remembered[instance] != nil || remembered.count < limits.maximumRemembered else {
            dropped.insert(instance)
            return
        }
        remembered[instance] = txt
    }

    private mutating func followRemembered(interest: Interest, now: ContinuousClock.Instant) -> [Action] {
        var actions: [Action] = []
        for (instance, txt) in remembered where followed.count < limits.maximumFollowed && !isCopy(txt, of: instance) && interest(instance, txt) {
            actions += startFollowing(instance, txt: txt, now: now)
        }
        return actions
    }
}
