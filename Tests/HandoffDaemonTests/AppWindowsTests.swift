import Foundation
import HandoffModel
import Testing
@testable import DaemonApps

/// Apps, windows and focus (`AppWindows`), by tables: what the device's current activity is after
/// each step, and where a continuation goes — a window that prefers its target (or shows it),
/// else one that can take it, else the last-focused window that declared nothing, of the app for
/// its type focused last, else a new window of that app, else a launch.
@Suite struct AppWindowsTests {
    /// Registrations by letter: "n" a notes app, "v" and "w" two instances of a viewer.
    static let registrations: [String: UUID] = ["n": UUID(), "v": UUID(), "w": UUID()]
    static let types: [String: (appID: String, types: Set<String>)] = [
        "n": ("org.example.Notes", ["org.example.note"]),
        "v": ("org.example.Viewer", ["org.example.item"]),
        "w": ("org.example.Viewer", ["org.example.item"]),
    ]

    enum Step: Sendable {
        case register(String)
        case unregister(String)
        /// Window `window` of app `app` gets an activity titled `title` showing `target`.
        case activity(String, window: String, title: String, target: String? = nil)
        case withdraw(String, window: String)
        case focus(String, window: String)
        case close(String, window: String)
        /// Window `window` of app `app` declares what it takes.
        case conditions(String, window: String, can: [String] = [], prefers: [String] = [])
    }

    struct Ask: Sendable {
        var type: String
        var target: String?
    }

    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let steps: [Step]
        /// The current activity's title afterwards ("-" for none).
        let current: String
        let ask: Ask?
        /// "window v/7", "app n", or "launch".
        let receiver: String?
        var testDescription: String { name }

        init(_ name: String, _ steps: [Step], current: String, ask: Ask? = nil, receiver: String? = nil) {
            (self.name, self.steps, self.current, self.ask, self.receiver) = (name, steps, current, ask, receiver)
        }
    }

    static let item = "org.example.item"
    static let note = "org.example.note"

    static let rows: [Row] = [
        Row("nothing registered: no current activity, continuations launch", [], current: "-", ask: Ask(type: item), receiver: "launch"),
        Row(
            "the focused window's activity is current",
            [.register("n"), .activity("n", window: "1", title: "Groceries"), .focus("n", window: "1")], current: "Groceries"
        ),
        Row("an activity in a window never focused is not current", [.register("n"), .activity("n", window: "1", title: "Groceries")], current: "-"),
        Row(
            "focus moves across apps; the last focused wins",
            [
                .register("n"), .register("v"), .activity("n", window: "1", title: "Groceries"), .activity("v", window: "7", title: "Item 7"),
                .focus("n", window: "1"), .focus("v", window: "7"),
            ],
            current: "Item 7"
        ),
        Row(
            "a focused window without an activity: nothing is current",
            [.register("n"), .activity("n", window: "1", title: "Groceries"), .focus("n", window: "1"), .focus("n", window: "2")], current: "-"
        ),
        Row(
            "closing the focused window: the window focused before it is current again",
            [
                .register("n"), .activity("n", window: "1", title: "Groceries"), .activity("n", window: "2", title: "Todo"), .focus("n", window: "1"),
                .focus("n", window: "2"), .close("n", window: "2"),
            ],
            current: "Groceries"
        ),
        Row(
            "an app that quits takes its windows' activities with it",
            [
                .register("n"), .register("v"), .activity("n", window: "1", title: "Groceries"), .activity("v", window: "7", title: "Item 7"),
                .focus("n", window: "1"), .focus("v", window: "7"), .unregister("v"),
            ],
            current: "Groceries"
        ),
        Row(
            "withdrawing the focused window's activity leaves nothing current",
            [.register("n"), .activity("n", window: "1", title: "Groceries"), .focus("n", window: "1"), .withdraw("n", window: "1")], current: "-"
        ),
        Row(
            "the window showing the target takes it, though another has focus",
            [
                .register("v"), .activity("v", window: "a", title: "Item 7", target: "item-7"), .activity("v", window: "b", title: "Item 8", target: "item-8"),
                .focus("v", window: "b"),
            ],
            current: "Item 8", ask: Ask(type: item, target: "item-7"), receiver: "window v/a"
        ),
        Row(
            "no window shows the target: the last-focused window of the app for the type focused last",
            [.register("v"), .register("w"), .activity("v", window: "a", title: "Item 7", target: "item-7"), .focus("w", window: "x"), .focus("v", window: "a")],
            current: "Item 7", ask: Ask(type: item, target: "item-9"), receiver: "window v/a"
        ),
        Row(
            "prefers beats can, though the window that can had focus later",
            [
                .register("v"), .conditions("v", window: "a", prefers: ["item-7"]), .conditions("v", window: "b", can: ["item-*"]),
                .focus("v", window: "a"), .focus("v", window: "b"),
            ],
            current: "-", ask: Ask(type: item, target: "item-7"), receiver: "window v/a"
        ),
        Row(
            "a window that can take the target takes it when none prefers it",
            [.register("v"), .conditions("v", window: "a", prefers: ["item-7"]), .conditions("v", window: "b", can: ["item-*"]), .focus("v", window: "a")],
            current: "-", ask: Ask(type: item, target: "item-8"), receiver: "window v/b"
        ),
        Row(
            "no window declared it, all declared something: a new window",
            [.register("v"), .conditions("v", window: "a", prefers: ["item-7"]), .conditions("v", window: "b", can: ["item-*"]), .focus("v", window: "b")],
            current: "-", ask: Ask(type: item, target: "photo-9"), receiver: "app v"
        ),
        Row(
            "no window declared it: the last-focused window that declared nothing",
            [
                .register("v"), .conditions("v", window: "a", prefers: ["item-7"]), .focus("v", window: "c"), .focus("v", window: "d"),
                .focus("v", window: "a"),
            ],
            current: "-", ask: Ask(type: item, target: "photo-9"), receiver: "window v/d"
        ),
        Row(
            "* takes anything; prefers implies can; across apps, the window focused last",
            [
                .register("v"), .register("w"), .conditions("v", window: "a", can: ["*"]), .conditions("w", window: "c", prefers: ["photo-*"]),
                .focus("w", window: "c"), .focus("v", window: "a"),
            ],
            current: "-", ask: Ask(type: item, target: "photo-9"), receiver: "window w/c"
        ),
        Row(
            "a window showing the target counts as preferring it",
            [
                .register("v"), .activity("v", window: "a", title: "Item 8", target: "item-8"), .conditions("v", window: "b", can: ["item-*"]),
                .focus("v", window: "b"),
            ],
            current: "-", ask: Ask(type: item, target: "item-8"), receiver: "window v/a"
        ),
        Row(
            "without a target, a window that takes * is as one that declared nothing",
            [.register("v"), .conditions("v", window: "a", can: ["*"]), .conditions("v", window: "b", prefers: ["item-7"]), .focus("v", window: "a"), .focus("v", window: "b")],
            current: "-", ask: Ask(type: item), receiver: "window v/a"
        ),
        Row(
            "without a target, the app's last-focused window that declared nothing",
            [.register("v"), .conditions("v", window: "a", can: ["item-*"]), .focus("v", window: "b"), .focus("v", window: "a")],
            current: "-", ask: Ask(type: item), receiver: "window v/b"
        ),
        Row(
            "of two windows showing the target, the one focused last",
            [
                .register("v"), .register("w"), .activity("v", window: "a", title: "7 in v", target: "item-7"),
                .activity("w", window: "c", title: "7 in w", target: "item-7"), .focus("w", window: "c"), .focus("v", window: "a"),
            ],
            current: "7 in v", ask: Ask(type: item, target: "item-7"), receiver: "window v/a"
        ),
        Row(
            "of two windows showing the target, neither ever focused: the app registered last's",
            [
                .register("v"), .register("w"), .activity("v", window: "a", title: "7 in v", target: "item-7"),
                .activity("w", window: "c", title: "7 in w", target: "item-7"),
            ],
            current: "-", ask: Ask(type: item, target: "item-7"), receiver: "window w/c"
        ),
        Row(
            "a window of an app that does not continue the type never takes it",
            [.register("n"), .activity("n", window: "1", title: "Note about 7", target: "item-7"), .focus("n", window: "1")],
            current: "Note about 7", ask: Ask(type: item, target: "item-7"), receiver: "launch"
        ),
        Row(
            "an app registered but never focused still receives its type",
            [.register("n"), .register("v"), .focus("n", window: "1")], current: "-", ask: Ask(type: item), receiver: "app v"
        ),
        Row(
            "the app that registered last, when none was focused",
            [.register("v"), .register("w")], current: "-", ask: Ask(type: item), receiver: "app w"
        ),
        Row(
            "focus beats registration order",
            [.register("v"), .register("w"), .focus("v", window: "a")], current: "-", ask: Ask(type: item), receiver: "window v/a"
        ),
        Row(
            "a quit receiver no longer receives",
            [.register("v"), .register("w"), .focus("w", window: "a"), .unregister("w")], current: "-", ask: Ask(type: item), receiver: "app v"
        ),
        Row(
            "a closed window no longer takes its target",
            [.register("v"), .activity("v", window: "a", title: "Item 7", target: "item-7"), .close("v", window: "a")],
            current: "-", ask: Ask(type: item, target: "item-7"), receiver: "app v"
        ),
    ]

    @Test(arguments: rows)
    func windows(_ row: Row) {
        var windows = AppWindows()
        for step in row.steps {
            switch step {
            case .register(let app):
                windows.register(Self.registrations[app]!, appID: Self.types[app]!.appID, continues: Self.types[app]!.types)
            case .unregister(let app):
                windows.unregister(Self.registrations[app]!)
            case .activity(let app, let window, let title, let target):
                let type = Self.types[app]!.types.first!
                let content = ActivityContent(type: type, title: title, targetContentIdentifier: target)
                windows.setActivity(WindowActivity(id: UUID(), content: content), of: window, in: Self.registrations[app]!)
            case .withdraw(let app, let window):
                windows.setActivity(nil, of: window, in: Self.registrations[app]!)
            case .focus(let app, let window):
                windows.focus(window, in: Self.registrations[app]!)
            case .close(let app, let window):
                windows.close(window, in: Self.registrations[app]!)
            case .conditions(let app, let window, let can, let prefers):
                windows.setConditions(ActivationConditions(can: can, prefers: prefers), of: window, in: Self.registrations[app]!)
            }
        }
        #expect((windows.current?.content.title ?? "-") == row.current)
        if let ask = row.ask {
            let name = { (registration: UUID) in Self.registrations.first { $0.value == registration }!.key }
            let receiver: String
            switch windows.receiver(for: ask.type, target: ask.target) {
            case .window(let registration, let window): receiver = "window \(name(registration))/\(window)"
            case .app(let registration): receiver = "app \(name(registration))"
            case .launch: receiver = "launch"
            }
            #expect(receiver == row.receiver)
        }
    }

    /// A page of a claimed site goes to the running app whose claim covers its host and that had
    /// focus last; a claim turned off, or one that covers something else, takes nothing.
    @Test func aPageGoesToTheRunningAppThatClaimsItsSite() throws {
        var windows = AppWindows()
        let (shop, news) = (UUID(), UUID())
        let claims = { (texts: [String]) in texts.compactMap(WebDomainClaim.init) }
        windows.register(shop, appID: "org.example.Shop", continues: [], webDomains: claims(["example.com", "*.example.org"]))
        windows.register(news, appID: "org.example.News", continues: [], webDomains: claims(["*.example.org"]))
        #expect(windows.receiver(forWebHost: "example.com", off: []) == .app(shop))
        #expect(windows.receiver(forWebHost: "www.example.com", off: []) == .launch, "example.com claims only that host")
        #expect(windows.receiver(forWebHost: "a.example.org", off: []) == .app(news), "registered last")
        windows.focus("main", in: shop)
        #expect(windows.receiver(forWebHost: "a.example.org", off: []) == .app(shop), "focused last")
        #expect(windows.receiver(forWebHost: "example.org", off: []) == .launch)
        #expect(windows.receiver(forWebHost: "example.com", off: Set(claims(["example.com"]))) == .launch)
        #expect(windows.receiver(forWebHost: "a.example.org", off: Set(claims(["*.example.org"]))) == .launch)
        windows.unregister(shop)
        #expect(windows.receiver(forWebHost: "a.example.org", off: []) == .app(news))
    }

    @Test func focusingAWindowOfAnUnknownRegistrationChangesNothing() {
        var windows = AppWindows()
        windows.focus("1", in: UUID())
        #expect(windows.apps.isEmpty && windows.current == nil)
    }
}
