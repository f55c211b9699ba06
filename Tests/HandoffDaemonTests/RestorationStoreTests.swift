import Foundation
import HandoffModel
import HandoffTestSupport
import Testing
@testable import DaemonApps
@testable import DaemonCore

/// Windows' state-restoration activities (`RestorationStore`): kept per app id and window, 0600,
/// handed back whole; bad names, too many windows and unreadable files never hurt the rest.
@Suite struct RestorationStoreTests {
    static func activity(_ title: String, target: String? = nil, expires: Timestamp? = nil) -> Activity {
        Activity(content: ActivityContent(type: "org.example.item", title: title, targetContentIdentifier: target, expirationDate: expires), createdAt: .now())
    }

    static func store(_ directory: String) -> RestorationStore {
        RestorationStore(stateDirectory: directory, limits: ActivityLimits(), logger: TestLogger.make("restoration"))
    }

    @Test func windowsComeBackAsTheyWereSaved() async throws {
        let dir = try TempDirectory.make()
        defer { TempDirectory.remove(dir) }
        let store = Self.store(dir)
        let seven = Self.activity("Item 7", target: "item-7")
        try await store.save(seven, appID: "org.example.Viewer", window: "main")
        try await store.save(Self.activity("Item 9"), appID: "org.example.Viewer", window: "ünïcode/../window")
        try await store.save(Self.activity("Item 8"), appID: "org.example.Viewer", window: "main")  // replaces
        try await store.save(Self.activity("Note"), appID: "org.example.Notes", window: "main")

        // What a restarted daemon finds.
        let again = await Self.store(dir).restoration(of: "org.example.Viewer")
        #expect(Set(again.keys) == ["main", "ünïcode/../window"])
        #expect(again["main"]?.title == "Item 8" && again["ünïcode/../window"]?.title == "Item 9")
        #expect(await Self.store(dir).restoration(of: "org.example.Notes")["main"]?.title == "Note")

        let path = dir + "/restoration/org.example.Viewer/" + RestorationStore.fileName(of: "main")
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let dirMode = try FileManager.default.attributesOfItem(atPath: dir + "/restoration/org.example.Viewer")[.posixPermissions] as? Int
        #expect(dirMode == 0o700)

        try await store.remove(appID: "org.example.Viewer", window: "main")
        #expect(Set(await store.restoration(of: "org.example.Viewer").keys) == ["ünïcode/../window"])
    }

    @Test(arguments: ["", "../etc", ".hidden", "a/b", "org.example..x", String(repeating: "a", count: 256), "org example"])
    func appIDsThatAreNotReverseDNSNamesAreRefused(appID: String) async throws {
        let dir = try TempDirectory.make()
        defer { TempDirectory.remove(dir) }
        await #expect(throws: DaemonError.self) { try await Self.store(dir).save(Self.activity("x"), appID: appID, window: "w") }
        #expect(await Self.store(dir).restoration(of: appID).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: dir + "/etc"))
    }

    @Test func windowIDsAreBounded() async throws {
        let dir = try TempDirectory.make()
        defer { TempDirectory.remove(dir) }
        let store = Self.store(dir)
        await #expect(throws: DaemonError.self) { try await store.save(Self.activity("x"), appID: "org.example.A", window: "") }
        let long = String(repeating: "w", count: RestorationStore.maximumWindowIDBytes + 1)
        await #expect(throws: DaemonError.self) { try await store.save(Self.activity("x"), appID: "org.example.A", window: long) }
        for window in ["a", "ü", String(repeating: "z", count: RestorationStore.maximumWindowIDBytes)] {
            #expect(RestorationStore.window(ofFileName: RestorationStore.fileName(of: window)) == window)
        }
        #expect(RestorationStore.window(ofFileName: "zz.activity") == nil)
        #expect(RestorationStore.window(ofFileName: "616.activity") == nil)
    }

    @Test func anAppKeepsAtMost64Windows() async throws {
        let dir = try TempDirectory.make()
        defer { TempDirectory.remove(dir) }
        let store = Self.store(dir)
        for i in 0..<RestorationStore.windowsPerApp {
            try await store.save(Self.activity("w\(i)"), appID: "org.example.Many", window: "w\(i)")
        }
        do {
            try await store.save(Self.activity("one more"), appID: "org.example.Many", window: "extra")
            Issue.record("a 65th window was kept")
        } catch {
            #expect(error.code == .tooManyWindows)
        }
        try await store.save(Self.activity("replaced"), appID: "org.example.Many", window: "w0")  // replacing is fine
        #expect(await store.restoration(of: "org.example.Many").count == RestorationStore.windowsPerApp)
    }

    @Test func unreadableAndExpiredActivitiesAreLeftOut() async throws {
        let dir = try TempDirectory.make()
        defer { TempDirectory.remove(dir) }
        let store = Self.store(dir)
        try await store.save(Self.activity("good"), appID: "org.example.A", window: "good")
        try await store.save(Self.activity("soon", expires: .now().adding(seconds: 60)), appID: "org.example.A", window: "soon")
        let bad = dir + "/restoration/org.example.A/" + RestorationStore.fileName(of: "bad")
        try Data("not an activity".utf8).write(to: URL(fileURLWithPath: bad))
        let found = await store.restoration(of: "org.example.A", now: .now().adding(seconds: 120))
        #expect(Set(found.keys) == ["good"])
        #expect(FileManager.default.fileExists(atPath: bad + ".unreadable"))
    }

    @Test func anActivityOverTheCapIsRefused() async throws {
        let dir = try TempDirectory.make()
        defer { TempDirectory.remove(dir) }
        let store = RestorationStore(stateDirectory: dir, limits: ActivityLimits(maximumEncodedSize: 200), logger: TestLogger.make("restoration"))
        let big = Activity(content: ActivityContent(type: "org.example.item", title: String(repeating: "x", count: 250)), createdAt: .now())
        await #expect(throws: DaemonError.self) { try await store.save(big, appID: "org.example.A", window: "w") }
    }
}
