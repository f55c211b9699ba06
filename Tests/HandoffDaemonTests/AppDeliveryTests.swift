import Foundation
import HandoffAPI
import HandoffClient
import HandoffModel
import HandoffTestSupport
import Testing

/// Continuations into running apps (docs/apps.md), between two daemons in this process: the
/// window showing the activity's target takes it in the app's own process; an app that hangs
/// fails that continuation and the next goes to the launch path; one that quits fails it at once.
@Suite(.timeLimit(.minutes(3))) struct AppDeliveryTests {
    static let type = "org.example.item"

    /// A paired A and B, B knowing A's current activity `content`.
    static func setUp(_ content: ActivityContent) async throws -> (TestDaemon, TestDaemon) {
        let (a, b) = try await PeerDiscoveryTests.pair()
        let aID = try await a.client.account().deviceID
        let put = try await a.client.becomeCurrent(PutCurrentActivityRequest(content: content))
        try await PeerDiscoveryTests.waitForPeers(b, "A's activity") { $0.peers.first { $0.id == aID && $0.reachable }?.activity?.id == put.activity.id }
        return (a, b)
    }

    @Test func theWindowShowingTheTargetTakesItInTheRunningApp() async throws {
        let (a, b) = try await Self.setUp(ActivityContent(type: Self.type, title: "Item 7", targetContentIdentifier: "item-7"))
        let app = try await b.client.registerApp(AppRegistration(appID: "org.example.Viewer", continues: [Self.type]))
        let (registration, _) = try await AppRoutesTests.registered(app)
        _ = try await b.client.setWindowActivity(
            ActivityContent(type: Self.type, title: "Item 7 here", targetContentIdentifier: "item-7"), window: "seven", registration: registration
        )
        _ = try await b.client.setWindowActivity(ActivityContent(type: Self.type, title: "Item 8 here", targetContentIdentifier: "item-8"), window: "eight", registration: registration)
        _ = try await b.client.focusWindow("eight", registration: registration)
        let client = b.client
        // The app: willContinue, then continue in window "seven"; it takes it there.
        let appSide = Task { () async throws -> (String?, String?) in
            guard case .willContinue(let id, let type, _) = try await app.next()?.body, type == Self.type else { throw TestFailure("no willContinue") }
            guard case .continue(let same, let activity, _, let window) = try await app.next()?.body, same == id else { throw TestFailure("no continue") }
            _ = try await client.answerContinuation(id, registration: registration, ContinuationAnswer(taken: true, window: window))
            return (window, activity.title)
        }
        let response = try await b.client.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch))
        let (window, title) = try await appSide.value
        #expect(window == "seven" && title == "Item 7")
        #expect(response.delivered?.kind == .app && response.delivered?.handler == "org.example.Viewer" && response.delivered?.window == "seven")
        try await a.finish()
        try await b.finish()
    }

    @Test func anAppThatHangsFailsTheContinuationAndTheNextOneIsLaunched() async throws {
        let (a, b) = try await Self.setUp(ActivityContent(type: Self.type, title: "Item 9"))
        let app = try await b.client.registerApp(AppRegistration(appID: "org.example.Viewer", continues: [Self.type]))
        _ = try await AppRoutesTests.registered(app)
        let started = ContinuousClock.now
        await expectFailure(.timeout) { _ = try await b.client.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch)) }
        #expect(ContinuousClock.now - started < .seconds(15))
        // Its registration ended: its events end, and the next continuation takes the launch
        // path (no app here handles the type, and the activity has no web page).
        var events: [String] = []
        while let event = try await app.next() { events.append(event.body.name) }  // ends: the daemon ended it
        #expect(events == ["willContinue", "continue"])
        await expectFailure(.noHandler) { _ = try await b.client.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch)) }
        try await a.finish()
        try await b.finish()
    }

    @Test func anAppThatQuitsMidContinuationFailsItAtOnce() async throws {
        let (a, b) = try await Self.setUp(ActivityContent(type: Self.type, title: "Item 10"))
        let app = try await b.client.registerApp(AppRegistration(appID: "org.example.Viewer", continues: [Self.type]))
        _ = try await AppRoutesTests.registered(app)
        let reader = app
        let quits = Task {
            while let event = try await reader.next() {
                if case .continue = event.body { return }
            }
        }
        let continuing = Task { try await b.client.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch)) }
        try await quits.value
        app.close()  // the app quits before answering
        let started = ContinuousClock.now
        do {
            _ = try await continuing.value
            Issue.record("the continuation succeeded")
        } catch let error as HandoffClientError {
            #expect(error.code == .api(.handlerFailed), "\(error)")
        }
        #expect(ContinuousClock.now - started < .seconds(4), "not at the deadline")
        try await a.finish()
        try await b.finish()
    }
}
