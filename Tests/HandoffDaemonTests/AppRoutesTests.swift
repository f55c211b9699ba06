import Foundation
import HandoffAPI
@testable import HandoffClient
import HandoffModel
import HandoffTestSupport
import Testing

/// Apps and windows over the local API (docs/local-api.md, "Apps and windows"), on a daemon in
/// this process: registering, a window's activity made current by its focus, the app quitting
/// when its connection closes, restoration activities at the next registration, and the errors.
@Suite(.timeLimit(.minutes(2))) struct AppRoutesTests {
    static func registered(_ subscription: NDJSONSubscription<AppEvent>) async throws -> (UUID, [RestoredWindow]) {
        guard case .registered(let registration, let restored, _) = try await subscription.next()?.body else {
            throw TestFailure("the first line is not `registered`")
        }
        return (registration, restored)
    }

    @Test func aFocusedWindowsActivityIsCurrentUntilItsAppQuits() async throws {
        let d = try await TestDaemon.start()
        let client = d.client
        var app: NDJSONSubscription<AppEvent>? = try await client.subscribe(.registerApp(AppRegistration(appID: "org.example.Notes", continues: ["org.example.note"])))
        let (registration, restored) = try await Self.registered(app!)
        #expect(restored.isEmpty)
        let window = "list / ü"  // any id, percent-encoded in the path
        let set = try await client.send(.setWindowActivity(ActivityContent(type: "org.example.note", title: "Groceries"), window: window, registration: registration))
        #expect(set.window == window && set.activityID != nil)
        await #expect(throws: HandoffClientError.self) { _ = try await client.send(.currentActivity) }  // not focused yet
        _ = try await client.send(.focusWindow(window, registration: registration))
        #expect(try await client.send(.currentActivity).activity.id == set.activityID)

        app = nil  // the app quits: its connection closes
        let deadline = ContinuousClock.now + .seconds(5)
        while (try? await client.send(.currentActivity)) != nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect((try? await client.send(.currentActivity)) == nil, "its window's activity went with it")
        await #expect(throws: HandoffClientError.self) { _ = try await client.send(.focusWindow(window, registration: registration)) }
        try await d.finish()
    }

    @Test func restorationActivitiesComeBackAtTheNextRegistration() async throws {
        let d = try await TestDaemon.start()
        let client = d.client
        var first: NDJSONSubscription<AppEvent>? = try await client.subscribe(.registerApp(AppRegistration(appID: "org.example.Viewer", continues: ["org.example.item"])))
        let (registration, _) = try await Self.registered(first!)
        _ = try await client.send(.saveRestoration(
            ActivityContent(type: "org.example.item", title: "Item 7", targetContentIdentifier: "item-7"), window: "a", registration: registration
        ))
        _ = try await client.send(.saveRestoration(ActivityContent(type: "org.example.item", title: "Item 8"), window: "b", registration: registration))
        _ = try await client.send(.removeRestoration(window: "b", registration: registration))
        first = nil
        let again = try await client.subscribe(.registerApp(AppRegistration(appID: "org.example.Viewer", continues: ["org.example.item"])))
        let (_, restored) = try await Self.registered(again)
        #expect(restored.map(\.window) == ["a"])
        #expect(restored.first?.activity.content.targetContentIdentifier == "item-7")
        try await d.finish()
        _ = again
    }

    /// Registrations end with their connections, however soon the app leaves: the slots come back.
    @Test func registrationsEndWithTheirConnections() async throws {
        let d = try await TestDaemon.start()
        let client = d.client
        var apps: [NDJSONSubscription<AppEvent>] = []
        for i in 0..<64 { apps.append(try await client.subscribe(.registerApp(AppRegistration(appID: "org.example.App\(i)")))) }
        await #expect(throws: HandoffClientError.self) { _ = try await client.subscribe(.registerApp(AppRegistration(appID: "org.example.Later"))) }
        apps.removeAll()  // every app quits
        var again: NDJSONSubscription<AppEvent>?
        let deadline = ContinuousClock.now + .seconds(5)
        while again == nil, ContinuousClock.now < deadline {
            again = try? await client.subscribe(.registerApp(AppRegistration(appID: "org.example.Later")))
            if again == nil { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(again != nil, "the 64 registrations did not end")
        try await d.finish()
    }

    @Test func wrongRequestsGetErrorsThatSayWhy() async throws {
        let d = try await TestDaemon.start()
        let client = d.client
        func code(_ body: () async throws -> Void) async -> String {
            do {
                try await body()
                return "ok"
            } catch let error as HandoffClientError {
                if case .api(let code) = error.code { return code.rawValue }
                return "\(error)"
            } catch {
                return "\(error)"
            }
        }
        #expect(await code { _ = try await client.subscribe(.registerApp(AppRegistration(appID: "not an id"))) } == "invalid_app_id")
        #expect(await code { _ = try await client.subscribe(.registerApp(AppRegistration(appID: "org.example.A", continues: ["no spaces allowed"]))) } == "invalid_type")
        #expect(await code { _ = try await client.send(.focusWindow("1", registration: UUID())) } == "unknown_registration")
        let app = try await client.subscribe(.registerApp(AppRegistration(appID: "org.example.A")))
        let (registration, _) = try await Self.registered(app)
        #expect(await code { _ = try await client.send(.focusWindow(String(repeating: "w", count: 65), registration: registration)) } == "invalid_window_id")
        #expect(
            await code { _ = try await client.send(.setWindowActivity(ActivityContent(type: "org.example.note", title: String(repeating: "x", count: 300)), window: "1", registration: registration)) }
                == "invalid_title"
        )
        // Methods and paths that are not a window's (on a thread of its own: the in-process
        // daemon answers on the cooperative pool).
        let socketPath = d.socketPath
        func status(_ method: String, _ path: String) async throws -> (Int, String?) {
            try await onOwnThread {
                let c = try UnixHTTPConnection(socketPath: socketPath, timeoutSeconds: 10)
                try c.send(method: method, path: path, body: nil)
                let r = try c.readResponse()
                return (r.status, r.header("allow"))
            }
        }
        #expect(try await status("PUT", LocalAPIRoute.window("1", of: registration, .focus)) == (405, "POST"))
        #expect(try await status("POST", LocalAPIRoute.window("1", of: registration, .activity)) == (405, "PUT, DELETE"))
        #expect(try await status("POST", LocalAPIRoute.apps + "/" + registration.lowercasedString + "/elsewhere").0 == 404)
        #expect(try await status("GET", LocalAPIRoute.apps).0 == 405)
        // One window, one spelling: a malformed escape or bytes that are not UTF-8 name none.
        let base = LocalAPIRoute.apps + "/" + registration.lowercasedString + "/windows/"
        #expect(try await status("POST", base + "%zz/focus").0 == 404)
        #expect(try await status("POST", base + "%FF/focus").0 == 404)
        #expect(try await status("POST", base + "%41/focus").0 == 200)  // "A"
        try await d.finish()
        _ = app
    }
}
