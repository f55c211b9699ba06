import Foundation
import HandoffAPI
import HandoffModel
import HandoffTestSupport
import Testing
@testable import DaemonApps
@testable import DaemonCore

/// `AppRegistry` against a real `ActivityRegistry` and `RestorationStore`: windows' focus makes the
/// device's current activity, closing and quitting withdraw it, a script's `PUT` stands until a
/// window is focused again, and restoration activities come back at the next registration.
@Suite struct AppRegistryTests {
    struct Desk {
        let dir: String
        let registry: ActivityRegistry
        let desk: AppRegistry

        init(dir: String? = nil) throws {
            self.dir = try dir ?? TempDirectory.make()
            registry = ActivityRegistry(stateDirectory: self.dir, limits: ActivityLimits(), events: EventHub(), logger: TestLogger.make("registry"))
            let restoration = RestorationStore(stateDirectory: self.dir, limits: ActivityLimits(), logger: TestLogger.make("restoration"))
            desk = AppRegistry(registry: registry, restoration: restoration, attachments: Attachments(events: EventHub()), limits: ActivityLimits(), logger: TestLogger.make("apps"))
        }

        var currentTitle: String? { get async { await registry.currentActivity()?.title } }
    }

    static func content(_ title: String, type: String = "org.example.note", target: String? = nil) -> ActivityContent {
        ActivityContent(type: type, title: title, targetContentIdentifier: target)
    }

    @Test func theFocusedWindowsActivityIsCurrentAcrossApps() async throws {
        let d = try Desk()
        defer { TempDirectory.remove(d.dir) }
        let (notes, _) = try await d.desk.register(appID: "org.example.Notes", continues: ["org.example.note"])
        let (viewer, _) = try await d.desk.register(appID: "org.example.Viewer", continues: ["org.example.item"])
        let groceries = try await d.desk.setActivity(Self.content("Groceries"), window: "1", of: notes).id
        #expect(await d.currentTitle == nil, "not focused yet")
        try await d.desk.focus(window: "1", of: notes)
        #expect(await d.registry.currentActivity()?.id == groceries, "the window's activity, with its id")

        _ = try await d.desk.setActivity(Self.content("Item 7", type: "org.example.item"), window: "7", of: viewer)
        #expect(await d.currentTitle == "Groceries", "an unfocused window changes nothing")
        try await d.desk.focus(window: "7", of: viewer)
        #expect(await d.currentTitle == "Item 7")

        // Back to the notes window: the same activity, the same id.
        try await d.desk.focus(window: "1", of: notes)
        #expect(await d.registry.currentActivity()?.id == groceries)
        // An update of the focused window's activity updates the current one in place.
        #expect(try await d.desk.setActivity(Self.content("Groceries and milk"), window: "1", of: notes).id == groceries)
        #expect(await d.registry.currentActivity()?.id == groceries)
        #expect(await d.currentTitle == "Groceries and milk")

        // The viewer quits while focused: the notes window is current again.
        try await d.desk.focus(window: "7", of: viewer)
        await d.desk.unregister(viewer)
        #expect(await d.currentTitle == "Groceries and milk")
        try await d.desk.close(window: "1", of: notes)
        #expect(await d.currentTitle == nil, "closing the last window withdraws its activity")
    }

    @Test func aScriptsActivityStandsUntilAWindowIsFocused() async throws {
        let d = try Desk()
        defer { TempDirectory.remove(d.dir) }
        let (notes, _) = try await d.desk.register(appID: "org.example.Notes", continues: [])
        _ = try await d.desk.setActivity(Self.content("Groceries"), window: "1", of: notes)
        try await d.desk.focus(window: "1", of: notes)
        _ = try await d.registry.becomeCurrent(PutCurrentActivityRequest(content: Self.content("From a script")))
        _ = try await d.desk.setActivity(Self.content("Groceries 2"), window: "1", of: notes)
        #expect(await d.currentTitle == "From a script", "a window's change does not take it back")
        try await d.desk.withdrawActivity(window: "1", of: notes)
        #expect(await d.currentTitle == "From a script", "nor does withdrawing a window's activity")
        _ = try await d.desk.setActivity(Self.content("Groceries 3"), window: "1", of: notes)
        try await d.desk.focus(window: "1", of: notes)
        #expect(await d.currentTitle == "Groceries 3", "focusing the window does")
    }

    /// A window focused while it is still loading, whose activity comes after: current as soon
    /// as it has one, and again after it withdrew and set a new one.
    @Test func aFocusedWindowsActivityIsCurrentEvenWhenItComesAfterTheFocus() async throws {
        let d = try Desk()
        defer { TempDirectory.remove(d.dir) }
        let (notes, _) = try await d.desk.register(appID: "org.example.Notes", continues: [])
        try await d.desk.focus(window: "1", of: notes)
        _ = try await d.desk.setActivity(Self.content("Loaded"), window: "1", of: notes)
        #expect(await d.currentTitle == "Loaded")
        try await d.desk.withdrawActivity(window: "1", of: notes)
        #expect(await d.currentTitle == nil)
        _ = try await d.desk.setActivity(Self.content("Loaded again"), window: "1", of: notes)
        #expect(await d.currentTitle == "Loaded again")
    }

    @Test func aWindowsActivityThatExpiredIsNeverMadeCurrent() async throws {
        let d = try Desk()
        defer { TempDirectory.remove(d.dir) }
        let (notes, _) = try await d.desk.register(appID: "org.example.Notes", continues: [])
        _ = try await d.desk.setActivity(Self.content("Groceries"), window: "1", of: notes)
        try await d.desk.focus(window: "1", of: notes)
        let soon = ActivityContent(type: "org.example.note", title: "Soon gone", expirationDate: .now().adding(seconds: 1))
        _ = try await d.desk.setActivity(soon, window: "2", of: notes)
        try await Task.sleep(for: .milliseconds(1100))
        try await d.desk.focus(window: "2", of: notes)
        #expect(await d.currentTitle == nil, "neither the expired one nor the window focused before")
    }

    @Test func anAppsWindowsAndTheirActivitiesAreBounded() async throws {
        let d = try Desk()
        defer { TempDirectory.remove(d.dir) }
        let (a, _) = try await d.desk.register(appID: "org.example.A", continues: [])
        for i in 0..<AppRegistry.windowsPerRegistrationAtMost { try await d.desk.focus(window: "w\(i)", of: a) }
        do {
            try await d.desk.focus(window: "one more", of: a)
            Issue.record("window \(AppRegistry.windowsPerRegistrationAtMost + 1) was kept")
        } catch {
            #expect(error.code == .tooManyWindows)
        }
        let (b, _) = try await d.desk.register(appID: "org.example.B", continues: [])
        let big = ActivityContent(type: "org.example.note", title: "big", userInfo: ["blob": .string(String(repeating: "x", count: 60_000))])
        var kept = 0
        do {
            for i in 0..<20 {
                _ = try await d.desk.setActivity(big, window: "w\(i)", of: b)
                kept += 1
            }
            Issue.record("20 windows of 60 KB were kept")
        } catch {
            #expect(error.code == .tooManyWindows)
        }
        #expect(kept * 60_000 <= AppRegistry.activityBytesPerRegistrationAtMost && kept >= 7)
    }

    @Test func aFocusedWindowWithoutAnActivityLeavesNothingCurrent() async throws {
        let d = try Desk()
        defer { TempDirectory.remove(d.dir) }
        let (notes, _) = try await d.desk.register(appID: "org.example.Notes", continues: [])
        _ = try await d.desk.setActivity(Self.content("Groceries"), window: "1", of: notes)
        try await d.desk.focus(window: "1", of: notes)
        try await d.desk.focus(window: "settings", of: notes)
        #expect(await d.currentTitle == nil)
        try await d.desk.focus(window: "1", of: notes)
        #expect(await d.currentTitle == "Groceries")
    }

    @Test func restorationActivitiesComeBackAtTheNextRegistration() async throws {
        let d = try Desk()
        defer { TempDirectory.remove(d.dir) }
        let (first, none) = try await d.desk.register(appID: "org.example.Viewer", continues: ["org.example.item"])
        #expect(none.isEmpty)
        try await d.desk.saveRestoration(Self.content("Item 7", type: "org.example.item", target: "item-7"), window: "a", of: first)
        try await d.desk.saveRestoration(Self.content("Item 8", type: "org.example.item"), window: "b", of: first)
        try await d.desk.close(window: "b", of: first)  // closed by the user: not restored
        await d.desk.unregister(first)

        let again = try Desk(dir: d.dir)  // handoffd restarted
        let (_, restored) = try await again.desk.register(appID: "org.example.Viewer", continues: ["org.example.item"])
        #expect(Set(restored.keys) == ["a"])
        #expect(restored["a"]?.content.targetContentIdentifier == "item-7")
    }

    @Test func whatAnyProcessCanAskForIsRefusedWhenItIsWrongOrTooMuch() async throws {
        let d = try Desk()
        defer { TempDirectory.remove(d.dir) }
        await #expect(throws: DaemonError.self) { _ = try await d.desk.register(appID: "../x", continues: []) }
        await #expect(throws: DaemonError.self) { _ = try await d.desk.register(appID: "org.example.A", continues: ["not a type"]) }
        await #expect(throws: DaemonError.self) { try await d.desk.focus(window: "1", of: UUID()) }
        let (a, _) = try await d.desk.register(appID: "org.example.A", continues: [])
        await #expect(throws: DaemonError.self) { try await d.desk.focus(window: "", of: a) }
        await #expect(throws: DaemonError.self) {
            _ = try await d.desk.setActivity(ActivityContent(type: "org.example.note", title: String(repeating: "x", count: 300)), window: "1", of: a)
        }
        for i in 1..<AppRegistry.registrationsAtMost { _ = try await d.desk.register(appID: "org.example.A\(i)", continues: []) }
        do {
            _ = try await d.desk.register(appID: "org.example.Z", continues: [])
            Issue.record("a 65th registration was taken")
        } catch {
            #expect(error.code == .tooManyApps)
        }
    }
}
