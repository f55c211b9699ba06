#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffModel

/// The apps registered with handoffd and their windows (docs/apps.md), as a value: what each app
/// continues, each window's activity, which window had focus last — and from that, the device's
/// current activity and which running app a continuation goes to. `AppRegistry` tells it what
/// happened and does what follows; tests drive it by tables.
///
/// Focus is an order, not a clock: every focus takes the next number, so "most recently focused"
/// never depends on two events' timestamps.
package struct AppWindows {
    /// One registration: an app's connection while it runs (an app id may register twice, e.g.
    /// two instances; each is its own).
    package typealias Registration = UUID

    package struct Window: Equatable {
        /// The window's activity, if it has one: what becomes the device's current activity
        /// when the window has focus.
        var activity: WindowActivity?
        /// When it last had focus (the focus order), 0 if never.
        var focused: UInt64 = 0
        /// What it declared it takes; nil: anything (Apple's default), after the windows that
        /// declared they take the target.
        var conditions: ActivationConditions?

        /// What the window shows: its activity's `targetContentIdentifier`.
        var target: String? { activity?.content.targetContentIdentifier }
    }

    package struct App: Equatable {
        var appID: String
        /// Activity types it continues (declared at registration).
        var continues: Set<String>
        /// Sites whose pages it opens (declared at registration).
        var webDomains: [WebDomainClaim] = []
        var windows: [String: Window] = [:]
        /// When it registered, in the focus order: an app with no focused window ranks by this.
        var registered: UInt64
    }

    /// Where a continuation goes.
    package enum Receiver: Equatable {
        /// That window takes it.
        case window(Registration, window: String)
        /// The app that continues the type and had focus last, in a new window: none of its
        /// windows takes it.
        case app(Registration)
        /// No running app continues the type: start one (handler, `.desktop`, browser).
        case launch
    }

    private(set) var apps: [Registration: App] = [:]
    private var order: UInt64 = 0

    // MARK: What happens

    mutating func register(_ registration: Registration, appID: String, continues: Set<String>, webDomains: [WebDomainClaim] = []) {
        order += 1
        apps[registration] = App(appID: appID, continues: continues, webDomains: webDomains, registered: order)
    }

    /// The app quit or its connection ended: its windows and their activities go.
    mutating func unregister(_ registration: Registration) {
        apps[registration] = nil
    }

    /// Sets (or, with nil, withdraws) a window's activity; the window exists from then on.
    mutating func setActivity(_ activity: WindowActivity?, of window: String, in registration: Registration) {
        apps[registration]?.windows[window, default: Window()].activity = activity
    }

    mutating func focus(_ window: String, in registration: Registration) {
        guard apps[registration] != nil else { return }
        order += 1
        apps[registration]!.windows[window, default: Window()].focused = order
    }

    /// Sets (or, with nil, clears) what `window` declares it takes; the window exists from then on.
    mutating func setConditions(_ conditions: ActivationConditions?, of window: String, in registration: Registration) {
        apps[registration]?.windows[window, default: Window()].conditions = conditions
    }

    mutating func close(_ window: String, in registration: Registration) {
        apps[registration]?.windows[window] = nil
    }

    // MARK: What follows

    /// The window that had focus last, across apps, if any window ever had.
    var focusedWindow: (registration: Registration, window: String)? {
        var best: (Registration, String, UInt64)?
        for (registration, app) in apps {
            for (name, window) in app.windows where window.focused > 0 && window.focused > (best?.2 ?? 0) {
                best = (registration, name, window.focused)
            }
        }
        return best.map { ($0.0, $0.1) }
    }

    /// The device's current activity as the windows have it: the focused window's (nil when it
    /// has none — the user is looking at something that cannot be continued).
    var current: WindowActivity? {
        guard let (registration, window) = focusedWindow else { return nil }
        return apps[registration]?.windows[window]?.activity
    }

    /// Where a continuation of `type`, whose activity names `target`, goes — among the apps
    /// that declared `type`, as Apple routes to scenes:
    /// 1. a window that prefers `target`, or shows it (its activity names it);
    /// 2. else a window that declared it can take `target`;
    /// 3. else, in the app that had focus last, its last-focused window of those that declared
    ///    nothing or `*` (they take anything, also without a target);
    /// 4. else that app, in a new window; with no such app, `.launch`.
    /// Among several windows, the one focused last; among windows never focused, the app
    /// registered last, then the window's name: never the order of a dictionary.
    func receiver(for type: String, target: String?) -> Receiver {
        let candidates = apps.filter { $0.value.continues.contains(type) }
        if let target {
            for takes in [
                { (w: Window) in w.target == target || w.conditions?.prefersToActivate(for: target) == true },
                { (w: Window) in w.conditions?.canActivate(for: target) == true },
            ] {
                if let best = Self.focusedLast(windows: candidates, where: takes) { return best }
            }
        }
        guard case .app(let registration) = Self.focusedLast(candidates), let app = candidates[registration] else { return .launch }
        return Self.focusedLast(windows: [registration: app], where: { ($0.conditions?.takesAnything ?? true) && $0.focused > 0 }) ?? .app(registration)
    }

    /// Of the windows of `candidates` that `takes`, the one focused last, as a receiver.
    private static func focusedLast(windows candidates: [Registration: App], where takes: (Window) -> Bool) -> Receiver? {
        let taking = candidates.flatMap { (registration, app) in
            app.windows.filter { takes($0.value) }.map { (registration, $0.key, $0.value.focused, app.registered) }
        }
        return taking.max(by: { ($0.2, $0.3, $1.1) < ($1.2, $1.3, $0.1) }).map { .window($0.0, window: $0.1) }
    }

    /// Which running app takes a web page of `host` (as `org.handoff.browsing-web`): of the apps
    /// whose claims cover it, except claims in `off`, the one that had focus last; else `.launch`.
    func receiver(forWebHost host: String, off: Set<WebDomainClaim>) -> Receiver {
        Self.focusedLast(apps.filter { $0.value.webDomains.contains { $0.covers(host: host) && !$0.isTurnedOff(by: off) } })
    }

    /// Of `candidates`, the app that had focus last (or registered last, if none of its windows had).
    private static func focusedLast(_ candidates: [Registration: App]) -> Receiver {
        let ranked = candidates.map { (registration, app) in
            (registration, max(app.registered, app.windows.values.map(\.focused).max() ?? 0))
        }
        guard let app = ranked.max(by: { $0.1 < $1.1 }) else { return .launch }
        return .app(app.0)
    }
}

/// A window's activity: its id (kept across updates, as `PUT /v1/activity/current` keeps it) and
/// content.
package struct WindowActivity: Equatable, Sendable {
    var id: UUID
    var content: ActivityContent
    /// Its encoded size, as validated when it was set: a registration's bound adds these up.
    var encodedSize = 0
}
