import Foundation
import HandoffAPI
import HandoffClient
import HandoffDaemon
import HandoffModel
import HandoffTestSupport
import Testing

/// Continuations into running apps (docs/apps.md), between two daemons in this process: the
/// window showing the activity's target takes it in the app's own process; an app that hangs
/// fails that continuation and the next goes to the launch path; one that quits fails it at once.
@Suite(.timeLimit(.minutes(3))) struct AppDeliveryTests {
    static let type = "org.example.item"

    /// A paired A and B, B knowing A's current activity `content`.
    static func setUp(_ content: ActivityContent, configure: (inout DaemonConfiguration) -> Void = { _ in }) async throws -> (TestDaemon, TestDaemon) {
        let (a, b) = try await PeerDiscoveryTests.pair(configure: configure)
        let aID = try await a.client.send(.account).deviceID
        let put = try await a.client.send(.becomeCurrent(PutCurrentActivityRequest(content: content)))
        try await PeerDiscoveryTests.waitForPeers(b, "A's activity") { $0.peers.first { $0.id == aID && $0.reachable }?.activity?.id == put.activity.id }
        return (a, b)
    }

    @Test func theWindowShowingTheTargetTakesItInTheRunningApp() async throws {
        let (a, b) = try await Self.setUp(ActivityContent(type: Self.type, title: "Item 7", targetContentIdentifier: "item-7"))
        // The session's notice says the target too: the window is known before the activity.
        try await PeerDiscoveryTests.waitForPeers(b, "A's activity's target") { $0.peers.first?.activity?.targetContentIdentifier == "item-7" }
        let app = try await b.client.subscribe(.registerApp(AppRegistration(appID: "org.example.Viewer", continues: [Self.type])))
        let (registration, _) = try await AppRoutesTests.registered(app)
        _ = try await b.client.send(.setWindowActivity(
            ActivityContent(type: Self.type, title: "Item 7 here", targetContentIdentifier: "item-7"), window: "seven", registration: registration
        ))
        _ = try await b.client.send(.setWindowActivity(ActivityContent(type: Self.type, title: "Item 8 here", targetContentIdentifier: "item-8"), window: "eight", registration: registration))
        _ = try await b.client.send(.focusWindow("eight", registration: registration))
        let client = b.client
        // The app: willContinue, then continue in window "seven"; it takes it there.
        let appSide = Task { () async throws -> (String?, String?, String?) in
            guard case .willContinue(let id, let type, _, let named) = try await app.next()?.body, type == Self.type else { throw TestFailure("no willContinue") }
            guard case .continue(let same, let activity, _, let window) = try await app.next()?.body, same == id else { throw TestFailure("no continue") }
            _ = try await client.send(.answerContinuation(id, registration: registration, ContinuationAnswer(taken: true, window: window)))
            return (named, window, activity.title)
        }
        let response = try await b.client.send(.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch)))
        let (named, window, title) = try await appSide.value
        #expect(named == "seven" && window == "seven" && title == "Item 7", "\(String(describing: named))")
        #expect(response.delivered?.kind == .app && response.delivered?.handler == "org.example.Viewer" && response.delivered?.window == "seven")
        try await a.finish()
        try await b.finish()
    }

    @Test func anAppThatHangsFailsTheContinuationAndTheNextOneIsLaunched() async throws {
        // The deadline this test is about, short (the product's is 5 s).
        let (a, b) = try await Self.setUp(ActivityContent(type: Self.type, title: "Item 9")) { $0.deadlines.appAnswer = .seconds(1) }
        let app = try await b.client.subscribe(.registerApp(AppRegistration(appID: "org.example.Viewer", continues: [Self.type])))
        _ = try await AppRoutesTests.registered(app)
        let message = await expectFailure(.timeout) { _ = try await b.client.send(.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch))) }
        #expect(message.contains("did not take the activity within 1 s"), "\(message)")
        // Its registration ended: its events end, and the next continuation takes the launch
        // path (no app here handles the type, and the activity has no web page).
        var events: [String] = []
        while let event = try await app.next() { events.append(event.body.name) }  // ends: the daemon ended it
        #expect(events == ["willContinue", "continue"])
        await expectFailure(.noHandler) { _ = try await b.client.send(.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch))) }
        try await a.finish()
        try await b.finish()
    }

    @Test func anAppThatQuitsMidContinuationFailsItAtOnce() async throws {
        let (a, b) = try await Self.setUp(ActivityContent(type: Self.type, title: "Item 10"))
        let app = try await b.client.subscribe(.registerApp(AppRegistration(appID: "org.example.Viewer", continues: [Self.type])))
        _ = try await AppRoutesTests.registered(app)
        let reader = app
        let quits = Task {
            while let event = try await reader.next() {
                if case .continue = event.body { return }
            }
        }
        let continuing = Task { try await b.client.send(.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch))) }
        try await quits.value
        app.close()  // the app quits before answering
        // At once: the quitting app's own failure (handler_failed), never the 60 s deadline of the
        // test daemons (timeout), which would also outlast the client's wait.
        do {
            _ = try await continuing.value
            Issue.record("the continuation succeeded")
        } catch let error as HandoffClientError {
            #expect(error.code == .api(.handlerFailed), "\(error)")
        }
        try await a.finish()
        try await b.finish()
    }
}

extension AppDeliveryTests {
    /// The app says where it took it (a window of its own choosing wins over the suggestion), or
    /// that it did not (the continuation fails with its reason, on one line); nobody else can
    /// answer for it, nor answer twice.
    @Test func theAppsAnswerDecidesAndOnlyItsOwnCounts() async throws {
        let (a, b) = try await Self.setUp(ActivityContent(type: Self.type, title: "Item 11"))
        let app = try await b.client.subscribe(.registerApp(AppRegistration(appID: "org.example.Viewer", continues: [Self.type])))
        let (registration, _) = try await AppRoutesTests.registered(app)
        let other = try await b.client.subscribe(.registerApp(AppRegistration(appID: "org.example.Other")))
        let (stranger, _) = try await AppRoutesTests.registered(other)
        let client = b.client
        func appSide(_ answer: ContinuationAnswer) -> Task<[String], any Error> {
            Task { () async throws -> [String] in
                guard case .willContinue = try await app.next()?.body else { throw TestFailure("no willContinue") }
                guard case .continue(let id, _, _, let window) = try await app.next()?.body else { throw TestFailure("no continue") }
                #expect(window == nil, "no window shows a target: the app picks")
                var codes: [String] = []
                for (who, reply) in [(stranger, ContinuationAnswer(taken: true)), (registration, answer), (registration, answer)] {
                    do {
                        _ = try await client.send(.answerContinuation(id, registration: who, reply))
                        codes.append("ok")
                    } catch let error as HandoffClientError {
                        if case .api(let code) = error.code { codes.append(code.rawValue) } else { throw error }
                    }
                }
                return codes
            }
        }
        let taking = appSide(ContinuationAnswer(taken: true, window: "a new window"))
        let taken = try await b.client.send(.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch)))
        #expect(try await taking.value == ["unknown_continuation", "ok", "unknown_continuation"])
        #expect(taken.delivered?.kind == .app && taken.delivered?.window == "a new window")

        let refusing = appSide(ContinuationAnswer(taken: false, reason: "busy\nsaving"))
        do {
            _ = try await b.client.send(.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch)))
            Issue.record("a refused continuation succeeded")
        } catch {
            #expect(error.code == .api(.handlerFailed) && error.message.contains("busy saving") && !error.message.contains("\n"), "\(error)")
        }
        _ = try await refusing.value
        _ = other
        try await a.finish()
        try await b.finish()
    }

    /// The originating side of a window: its app hears willSave (and its update is what the
    /// other device gets), wasContinued, and a stream request it serves — on its registration's
    /// stream, named by window.
    @Test func aFocusedWindowsAppHearsWillSaveWasContinuedAndServesItsStreams() async throws {
        let (a, b) = try await PeerDiscoveryTests.pair()
        let aID = try await a.client.send(.account).deviceID
        let app = try await a.client.subscribe(.registerApp(AppRegistration(appID: "org.example.Notes")))
        let (registration, _) = try await AppRoutesTests.registered(app)
        let note = ActivityContent(type: "org.example.note", title: "Draft", supportsContinuationStreams: true, needsSave: true)
        let set = try await a.client.send(.setWindowActivity(note, window: "w1", registration: registration))
        _ = try await a.client.send(.focusWindow("w1", registration: registration))
        try await PeerDiscoveryTests.waitForPeers(b, "A's window's activity") { $0.peers.first { $0.id == aID && $0.reachable }?.activity?.id == set.activityID }

        let client = a.client
        let originator = Task { () async throws -> [String] in
            var heard: [String] = []
            guard case .willSave(let window, let id, _) = try await app.next()?.body, window == "w1", id == set.activityID else { throw TestFailure("no willSave") }
            heard.append("willSave")
            var saved = note
            saved.title = "Draft, saved"
            _ = try await client.send(.setWindowActivity(saved, window: "w1", registration: registration))
            guard case .wasContinued(let window2, _, let peer) = try await app.next()?.body, window2 == "w1", peer.name == "laptop" else {
                throw TestFailure("no wasContinued")
            }
            heard.append("wasContinued")
            guard case .streamRequested(let window3, let id3, let streamID, _) = try await app.next()?.body, window3 == "w1", id3 == set.activityID else {
                throw TestFailure("no streamRequested")
            }
            heard.append("streamRequested")
            let stream = try await client.pipe(.takeStream(streamID))
            try await stream.write(Array("attachment".utf8))
            stream.finishWriting()
            _ = try await stream.readToEnd()
            return heard
        }
        let response = try await b.client.send(.continueActivity(ContinueRequest(peer: "desk")))
        #expect(response.activity.title == "Draft, saved", "the other device gets what the window saved")
        let pipe = try await b.client.pipe(.openStream(continuationID: response.continuationID))
        pipe.finishWriting()
        #expect(try await pipe.readToEnd() == Array("attachment".utf8))
        #expect(try await originator.value == ["willSave", "wasContinued", "streamRequested"])
        try await a.finish()
        try await b.finish()
    }

    /// `willContinue` reaches the running app as soon as the user asks — before the activity
    /// arrives — and a continuation that then fails tells it why (`continueFailed`), once.
    @Test func theRunningAppHearsWillContinueFirstAndWhyItFailed() async throws {
        var content = ActivityContent(type: Self.type, title: "Item 3")
        content.needsSave = true
        let (a, b) = try await Self.setUp(content)
        let current = try await a.client.send(.currentActivity).activity
        let attachment = try await a.client.subscribe(.attach(AttachRequest(activityID: current.id)))
        _ = try await attachment.next()
        let app = try await b.client.subscribe(.registerApp(AppRegistration(appID: "org.example.Viewer", continues: [Self.type])))
        _ = try await AppRoutesTests.registered(app)
        let aClient = a.client
        // A's app answers willSave with another activity: what B saw is gone by the time it asks.
        let originator = Task { () async throws in
            guard case .willSave = try await attachment.next()?.body else { throw TestFailure("no willSave") }
            _ = try await aClient.send(.becomeCurrent(PutCurrentActivityRequest(content: ActivityContent(type: Self.type, title: "Item 4"))))
        }
        let receiver = Task { () async throws -> [String] in
            guard case .willContinue(let id, let type, let peer, _) = try await app.next()?.body, type == Self.type, peer.name == "desk" else {
                throw TestFailure("no willContinue")
            }
            guard case .continueFailed(let same, let failedType, let code, _) = try await app.next()?.body, same == id, failedType == Self.type else {
                throw TestFailure("no continueFailed")
            }
            return [code.rawValue]
        }
        await expectFailure(.activityChanged) { _ = try await b.client.send(.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch))) }
        try await originator.value
        #expect(try await receiver.value == ["activity_changed"])
        try await a.finish()
        try await b.finish()
    }
    /// Activation conditions over the local API: the window that prefers the target takes it
    /// over one that can; a link reopened here knows the activity before the app hears of it,
    /// so `willContinue` names that window; a window closed keeping its restoration activity
    /// comes back at the next registration (a window closed without keeping loses its own);
    /// bad conditions are refused.
    @Test func conditionsChooseTheWindowAndWillContinueNamesIt() async throws {
        let (a, b) = try await Self.setUp(ActivityContent(type: Self.type, title: "Item 7", targetContentIdentifier: "item-7"))
        let app = try await b.client.subscribe(.registerApp(AppRegistration(appID: "org.example.Viewer", continues: [Self.type])))
        let (registration, _) = try await AppRoutesTests.registered(app)
        _ = try await b.client.send(.setActivationConditions(ActivationConditions(prefers: ["item-7"]), window: "seven", registration: registration))
        _ = try await b.client.send(.setActivationConditions(ActivationConditions(can: ["item-*"]), window: "items", registration: registration))
        _ = try await b.client.send(.focusWindow("items", registration: registration))
        await expectFailure(.invalidValue) {
            _ = try await b.client.send(.setActivationConditions(ActivationConditions(can: [""]), window: "bad", registration: registration))
        }
        let link = try await b.client.send(.link(LinkRequest(peer: "desk"))).link
        let client = b.client
        let appSide = Task { () async throws -> (String?, String?) in
            guard case .willContinue(let id, _, _, let named) = try await app.next()?.body else { throw TestFailure("no willContinue") }
            guard case .continue(let same, _, _, let window) = try await app.next()?.body, same == id else { throw TestFailure("no continue") }
            _ = try await client.send(.answerContinuation(id, registration: registration, ContinuationAnswer(taken: true, window: window)))
            return (named, window)
        }
        let opened = try await b.client.send(.openLink(OpenLinkRequest(link: link)))
        let (named, window) = try await appSide.value
        #expect(named == "seven" && window == "seven" && opened.continued.delivered?.window == "seven", "\(String(describing: named)) \(String(describing: window))")

        // Closed keeping the restoration activity saved for it as it closed: it comes back.
        _ = try await b.client.send(.saveRestoration(ActivityContent(type: Self.type, title: "Item 7 here", targetContentIdentifier: "item-7"), window: "seven", registration: registration))
        _ = try await b.client.send(.closeWindow("seven", registration: registration, keepingRestoration: true))
        _ = try await b.client.send(.saveRestoration(ActivityContent(type: Self.type, title: "Items"), window: "items", registration: registration))
        _ = try await b.client.send(.closeWindow("items", registration: registration))
        app.close()
        let again = try await b.client.subscribe(.registerApp(AppRegistration(appID: "org.example.Viewer", continues: [Self.type])))
        let (_, restored) = try await AppRoutesTests.registered(again)
        #expect(restored.map(\.window) == ["seven"] && restored.first?.activity.title == "Item 7 here", "\(restored)")
        again.close()
        try await a.finish()
        try await b.finish()
    }
}
