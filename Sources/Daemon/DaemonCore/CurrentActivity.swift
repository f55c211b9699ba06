#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffModel

/// The device's current activity and who decides it, as a value: an event in (a request, the
/// windows as they are now, an expiry), the next value and the change out. `ActivityRegistry`
/// keeps it and carries the change out (saves, tells, attaches); tests drive it by tables.
///
/// Two may set what is current (docs/apps.md): a request (`PUT /v1/activity/current`:
/// handoffctl, scripts, attached apps) and the focused window of a registered app. A focus gives
/// the windows the say; a request that makes another activity current takes it back until the
/// next focus. Every change names its source.
package struct CurrentActivity: Equatable, Sendable {
    /// Where a change came from.
    package enum Source: Equatable, Sendable {
        /// `PUT` or `DELETE /v1/activity/current`.
        case request
        /// A registered app's window: focused, or its activity changed while it had focus.
        case window(registration: UUID, window: String)
        /// No window has focus any more (its app quit, or its last window closed).
        case noFocusedWindow
        /// Read back from disk when the daemon started.
        case restore
        /// Its expiration date passed.
        case expiry
        /// The app that served its continuation streams left: it stays, without them.
        case streamsGone
    }

    /// The focused window, as the windows have it now.
    package struct FocusedWindow: Equatable, Sendable {
        package var registration: UUID
        package var window: String
        /// Its activity: id (kept each time the window is focused again) and content; nil when
        /// the window shows nothing that can be continued.
        package var activity: (id: UUID, content: ActivityContent)?

        package init(registration: UUID, window: String, activity: (id: UUID, content: ActivityContent)?) {
            self.registration = registration
            self.window = window
            self.activity = activity
        }

        package static func == (a: Self, b: Self) -> Bool {
            a.registration == b.registration && a.window == b.window && a.activity?.id == b.activity?.id && a.activity?.content == b.activity?.content
        }
    }

    package enum Event: Sendable {
        /// A request makes `request` current: new (with `newID`, else a fresh id) or, naming
        /// the current one's id, an update of it.
        case put(PutCurrentActivityRequest)
        /// A request withdraws it.
        case resign
        /// The windows changed: the focused one (nil: none has focus), and whether this change
        /// was a focus.
        case windows(FocusedWindow?, focusChanged: Bool)
        /// The focused window's activity cannot be current (it is not valid, or the disk refused
        /// it): a focus still gives the windows the say, and a window's activity before it goes.
        case windowRefused(FocusedWindow?, focusChanged: Bool)
        /// The clock passed its expiration date.
        case expire
        /// Its streams' server left.
        case stopOfferingStreams(UUID)
    }

    package enum Change: Equatable, Sendable {
        /// New (`update` false) or updated; `size` is its encoded size.
        case became(Activity, size: Int, update: Bool, source: Source)
        case withdrawn(Activity, reason: LocalEvent.ResignReason, source: Source)
    }

    package private(set) var activity: Activity?
    /// Who made it current (nil when there is none).
    package private(set) var source: Source?
    /// Whether the focused window decides what is current.
    package private(set) var windowsDecide = false

    package init(restored: Activity? = nil) {
        activity = restored
        source = restored.map { _ in .restore }
    }

    /// What `event` makes of this value, at `now`: the next value and what changed (nil: nothing).
    /// A request that cannot be met throws, and changes nothing.
    package func next(
        _ event: Event, now: Timestamp, deviceID: String?, limits: ActivityLimits
    ) throws(DaemonError) -> (next: CurrentActivity, change: Change?) {
        var next = self
        switch event {
        case .put(let request):
            if let id = request.id {
                guard let existing = activity, existing.id == id else {
                    throw DaemonError(.activityChanged, "activity \(id.lowercasedString) is no longer current; start a new one instead of updating it")
                }
                // An update keeps who set it (a script may update a window's activity by its id).
                let change = try next.update(existing, to: request.content, now: now, deviceID: deviceID, limits: limits, source: source ?? .request)
                return (next, change)
            }
            next.windowsDecide = false
            let change = try next.become(UUID(), request.content, now: now, deviceID: deviceID, limits: limits, source: .request)
            return (next, change)
        case .resign:
            let change = next.withdraw(reason: .resigned, source: .request)
            return (next, change)
        case .windows(let focused, let focusChanged):
            if focusChanged { next.windowsDecide = true }
            guard next.windowsDecide else { return (next, nil) }
            guard let focused, let shown = focused.activity else {
                // The user looks at something that cannot be continued: a window's activity
                // goes; one a request set stays.
                guard case .window = source else { return (next, nil) }
                let change = next.withdraw(reason: .resigned, source: focused.map { .window(registration: $0.registration, window: $0.window) } ?? .noFocusedWindow)
                return (next, change)
            }
            let from = Source.window(registration: focused.registration, window: focused.window)
            if let existing = activity, existing.id == shown.id, source == from {
                // Another window changed, or this one's activity: what is current is this
                // window's already.
                guard existing.content != shown.content else { return (next, nil) }
                let change = try next.update(existing, to: shown.content, now: now, deviceID: deviceID, limits: limits, source: from)
                return (next, change)
            }
            let change = try next.become(shown.id, shown.content, now: now, deviceID: deviceID, limits: limits, source: from)
            return (next, change)
        case .windowRefused(let focused, let focusChanged):
            if focusChanged { next.windowsDecide = true }
            guard next.windowsDecide, case .window = source else { return (next, nil) }
            let change = next.withdraw(reason: .resigned, source: focused.map { .window(registration: $0.registration, window: $0.window) } ?? .noFocusedWindow)
            return (next, change)
        case .expire:
            guard let existing = activity, existing.isExpired(at: now) else { return (next, nil) }
            let change = next.withdraw(reason: .expired, source: .expiry)
            return (next, change)
        case .stopOfferingStreams(let id):
            guard let existing = activity, existing.id == id, existing.content.supportsContinuationStreams else { return (next, nil) }
            var content = existing.content
            content.supportsContinuationStreams = false
            let change = try next.update(existing, to: content, now: now, deviceID: deviceID, limits: limits, source: .streamsGone)
            return (next, change)
        }
    }

    private mutating func become(
        _ id: UUID, _ content: ActivityContent, now: Timestamp, deviceID: String?, limits: ActivityLimits, source: Source
    ) throws(DaemonError) -> Change {
        let made = Activity(id: id, content: content, createdAt: now, updatedAt: now, originDevice: deviceID)
        let size = try Self.validate(made, now: now, limits: limits)
        activity = made
        self.source = source
        return .became(made, size: size, update: false, source: source)
    }

    private mutating func update(
        _ existing: Activity, to content: ActivityContent, now: Timestamp, deviceID: String?, limits: ActivityLimits, source: Source
    ) throws(DaemonError) -> Change {
        guard existing.type == content.type else {
            throw DaemonError(.typeImmutable, "an activity's type cannot change (\(existing.type) → \(content.type)); start a new activity instead")
        }
        let made = Activity(id: existing.id, content: content, createdAt: existing.createdAt, updatedAt: max(now, existing.updatedAt), originDevice: deviceID)
        let size = try Self.validate(made, now: now, limits: limits)
        activity = made
        // Whoever set it still owns it; a daemon's own update (`streamsGone`) is said as such.
        if source != .streamsGone { self.source = source }
        return .became(made, size: size, update: true, source: source)
    }

    private mutating func withdraw(reason: LocalEvent.ResignReason, source: Source) -> Change? {
        guard let existing = activity else { return nil }
        activity = nil
        self.source = nil
        return .withdrawn(existing, reason: reason, source: source)
    }

    private static func validate(_ activity: Activity, now: Timestamp, limits: ActivityLimits) throws(DaemonError) -> Int {
        do {
            return try activity.validate(now: now, limits: limits)
        } catch {
            throw DaemonError(error)
        }
    }
}
