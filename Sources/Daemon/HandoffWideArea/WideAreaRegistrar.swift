import HandoffDiscovery
import HandoffModel

/// What we keep in a unicast zone, and when to write it (docs/discovery.md, "Beyond one link").
///
/// Our service is four kinds of record: `_handoff._tcp.DOMAIN PTR N._handoff._tcp.DOMAIN`, the SRV
/// and TXT of `N._handoff._tcp.DOMAIN`, and `N.DOMAIN`'s A/AAAA records — N the same random,
/// rotating instance name as on the link, so that nothing in the zone stays the same across a
/// rotation. Every write is one UPDATE that deletes what we put there before and adds what we
/// want now, so each is whole on its own: a TXT change, a new name, a refresh and a retry are the
/// same write. The zone does not expire records by their TTL (RFC 2136 has no leases); so we
/// write again before `refresh` passes (a zone restored from an old copy gets them back), delete
/// ours at exit, and delete at the next start what an exit that never came left behind.
///
/// A value: events in, writes out; the clock is the caller's (table-tested).
struct WideAreaRegistrar {
    struct Registration: Sendable, Equatable {
        var instanceName: String
        var port: Int
        var txt: [UInt8]
        var addresses: [String]
    }

    /// One UPDATE: delete the names of `withdraw`, then (if any) write `put`.
    struct Write: Sendable, Equatable {
        var withdraw: [String]
        var put: Registration?
    }

    /// Why a write did not take effect, as far as when to try again goes.
    enum Failure: Sendable, Equatable {
        /// The server answered no (a key it does not know, a policy): asking again sooner than
        /// the back-off changes nothing, whatever else it answers.
        case refused(String)
        /// No answer (or none to read): the server may be away, and it answering a browse says
        /// it is back.
        case unanswered(String)

        var message: String {
            switch self {
            case .refused(let why), .unanswered(let why): why
            }
        }
    }

    struct Timing {
        /// How often what is in the zone is written again.
        var refresh: Duration = .seconds(60)
        var firstRetry: Duration = .seconds(1)
        /// Writes under one name are at least this far apart (each is a new serial, a journal
        /// entry and a NOTIFY for the server): activity changes in a burst become one write.
        var minimumInterval: Duration = .seconds(1)
        var longestRetry: Duration = .seconds(300)
    }

    let timing: Timing
    /// What should be in the zone (nil: nothing).
    private(set) var desired: Registration?
    /// What the last write that succeeded put there.
    private(set) var written: Registration?
    /// Names of ours that may still be in the zone and must go (a rotation, an exit not seen
    /// through, the last run's): a few at most.
    private(set) var stale: [String] = []
    private var inFlight: Write?
    private var refreshAt: ContinuousClock.Instant?
    private var lastWriteAt: ContinuousClock.Instant?
    private var retryAt: ContinuousClock.Instant?
    private var failures = 0
    /// The last write failed because the server said no (not for want of an answer).
    private var refused = false
    /// Why the last write failed; nil once one succeeds.
    private(set) var problem: String?

    init(timing: Timing = Timing(), leftover: [String] = []) {
        self.timing = timing
        self.stale = Array(leftover.prefix(Self.maximumStale))
    }

    static let maximumStale = 4

    var isWriting: Bool { inFlight != nil }

    /// The registration we want now (nil: withdraw).
    mutating func want(_ registration: Registration?, now: ContinuousClock.Instant) -> Write? {
        let old = desired
        desired = registration
        if let old, old.instanceName != registration?.instanceName {
            addStale(old.instanceName)
            // A new name (or none) waits for no retry's back-off: the server may be back. A new
            // TXT under the same name waits for it, and for `minimumInterval` after the last write.
            retryAt = nil
        }
        if let registration { stale.removeAll { $0 == registration.instanceName } }
        return next(now: now)
    }

    /// The write in flight finished (nil: it took effect).
    mutating func finished(_ failure: Failure?, now: ContinuousClock.Instant) -> Write? {
        guard let write = inFlight else { return nil }
        inFlight = nil
        if let failure {
            problem = failure.message
            if case .refused = failure { refused = true } else { refused = false }
            failures += 1
            let delay = min(timing.firstRetry * (1 << min(failures - 1, 16)), timing.longestRetry)
            retryAt = now + delay
            if let put = write.put, written?.instanceName != put.instanceName { addStale(put.instanceName) }
            return nil
        }
        problem = nil
        failures = 0
        refused = false
        retryAt = nil
        stale.removeAll { write.withdraw.contains($0) }
        written = write.put
        refreshAt = write.put == nil ? nil : now + timing.refresh
        return next(now: now)
    }

    /// Time passed. `early`: a refresh due within it is written now — the caller is awake anyway
    /// (a browse), and a refresh kept in step with the browses costs no wake-up of its own.
    mutating func tick(now: ContinuousClock.Instant, early: Duration = .zero) -> Write? {
        next(now: now, early: early)
    }

    /// When `tick` has something to do.
    var nextDeadline: ContinuousClock.Instant? {
        guard inFlight == nil else { return nil }
        let pending = written != desired || !stale.isEmpty
        // A retry only when there is something to retry — a change, or a refresh that failed: one
        // whose change went away meanwhile (the same address back) would wake the loop at a past
        // instant for ever.
        let refreshDue = desired != nil && (refreshAt.map { $0 <= (retryAt ?? $0) } ?? true)
        if let retryAt, pending || refreshDue { return retryAt }
        if pending { return throttledUntil }  // else written at once by `next`
        return refreshAt
    }

    /// What the names in the zone should say when we stop: the write to do before exiting.
    mutating func withdrawAll() -> Write? {
        let wanted = desired
        desired = nil
        if let wanted { addStale(wanted.instanceName) }
        if let written { addStale(written.instanceName) }
        guard !stale.isEmpty else { return nil }
        let write = Write(withdraw: stale, put: nil)
        inFlight = write
        return write
    }

    /// When a change under the name in the zone may be written (nil: now).
    private var throttledUntil: ContinuousClock.Instant? {
        guard let lastWriteAt, let written, written.instanceName == desired?.instanceName, stale.isEmpty else { return nil }
        return lastWriteAt + timing.minimumInterval
    }

    /// The server answered something else (a browse): a write that got no answer, waiting for its
    /// back-off, goes now, rather than up to `longestRetry` after the server came back. One the
    /// server refused waits its back-off out (1 s doubling to `longestRetry`): the browse says
    /// nothing of the key or the policy that refused it.
    mutating func serverAnswered(now: ContinuousClock.Instant) -> Write? {
        guard retryAt != nil, !refused else { return nil }
        retryAt = nil
        return next(now: now)
    }

    private mutating func next(now: ContinuousClock.Instant, early: Duration = .zero) -> Write? {
        guard inFlight == nil else { return nil }
        if let retryAt {
            guard now >= retryAt else { return nil }
            self.retryAt = nil
        }
        if let throttledUntil, now < throttledUntil, written != desired { return nil }
        let due = written != desired || !stale.isEmpty || (desired != nil && refreshAt.map { now + early >= $0 } ?? true)
        guard due, desired != nil || !stale.isEmpty else { return nil }
        let write = Write(withdraw: stale, put: desired)
        inFlight = write
        lastWriteAt = now
        return write
    }

    private mutating func addStale(_ name: String) {
        guard !stale.contains(name), name != desired?.instanceName else { return }
        stale.append(name)
        // Beyond the cap, a name never written goes first; the one in the zone never does.
        if stale.count > Self.maximumStale, let index = stale.firstIndex(where: { $0 != written?.instanceName }) { stale.remove(at: index) }
    }

    // MARK: The records

    /// The changes of `write` in `domain` (`example.net.`), records living `ttl` seconds.
    static func changes(_ write: Write, domain: String, ttl: Int) -> [UnicastDNS.Change] {
        let service = "\(DNSSDDiscovery.serviceType).\(domain)"
        var changes: [UnicastDNS.Change] = []
        var names = write.withdraw.map(UnicastDNS.label)
        if let put = write.put { names.append(UnicastDNS.label(put.instanceName)) }
        for name in names {
            changes.append(.deleteRecord(owner: service, type: "PTR", rdata: "\(name).\(service)"))
            changes.append(.deleteRRset(owner: "\(name).\(service)", type: .srv))
            changes.append(.deleteRRset(owner: "\(name).\(service)", type: .txt))
            changes.append(.deleteRRset(owner: "\(name).\(domain)", type: .a))
            changes.append(.deleteRRset(owner: "\(name).\(domain)", type: .aaaa))
        }
        guard let put = write.put else { return changes }
        let instance = "\(UnicastDNS.label(put.instanceName)).\(service)"
        let host = "\(UnicastDNS.label(put.instanceName)).\(domain)"
        changes.append(.add(owner: service, ttl: ttl, type: "PTR", rdata: instance))
        changes.append(.add(owner: instance, ttl: ttl, type: "SRV", rdata: "0 0 \(put.port) \(host)"))
        changes.append(.add(owner: instance, ttl: ttl, type: "TXT", rdata: UnicastDNS.txtPresentation(put.txt)))
        for address in put.addresses {
            changes.append(.add(owner: host, ttl: ttl, type: address.contains(":") ? "AAAA" : "A", rdata: address))
        }
        return changes
    }
}
