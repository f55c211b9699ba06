/// When the TXT of our registration may change (docs/platform.md): Avahi re-probes and then publishes
/// nothing for 13–30 s if the TXT changes faster than about once a second, and an update before
/// the registration is confirmed kept a service unannounced for 31 s. So: nothing before the
/// register callback, then at most one update per second, always the latest (trailing edge).
///
/// Pure: the caller feeds it events and the clock and carries out the actions.
struct TXTThrottle {
    static let minimumInterval: Duration = .seconds(1)

    enum Action: Equatable {
        case send([UInt8])
        /// Call `wake` at this instant.
        case wake(ContinuousClock.Instant)
    }

    private(set) var registered = false
    private(set) var published: [UInt8]
    private var pending: [UInt8]?
    private var lastSent: ContinuousClock.Instant?

    /// `initial` is the TXT the registration was made with.
    init(initial: [UInt8]) {
        published = initial
    }

    /// The register callback arrived; the registration counts as the latest publication.
    mutating func didRegister(now: ContinuousClock.Instant) -> [Action] {
        registered = true
        lastSent = now
        return pending == nil ? [] : [.wake(now + Self.minimumInterval)]
    }

    mutating func want(_ txt: [UInt8], now: ContinuousClock.Instant) -> [Action] {
        if txt == published {
            pending = nil
            return []
        }
        pending = txt
        guard registered else { return [] }
        if let lastSent, now < lastSent + Self.minimumInterval {
            return [.wake(lastSent + Self.minimumInterval)]
        }
        return flush(now: now)
    }

    mutating func wake(now: ContinuousClock.Instant) -> [Action] {
        guard registered, pending != nil else { return [] }
        if let lastSent, now < lastSent + Self.minimumInterval {
            return [.wake(lastSent + Self.minimumInterval)]
        }
        return flush(now: now)
    }

    private mutating func flush(now: ContinuousClock.Instant) -> [Action] {
        guard let txt = pending else { return [] }
        pending = nil
        published = txt
        lastSent = now
        return [.send(txt)]
    }
}
