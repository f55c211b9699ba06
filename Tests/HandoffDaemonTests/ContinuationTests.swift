import Foundation
import HandoffAPI
import HandoffClient
import DaemonCore
@testable import HandoffDaemon
import HandoffDiscovery
import HandoffModel
import HandoffTestSupport
import Testing

/// Delivering continuations to apps, the originating app's attachment, and continuation streams,
/// between two daemons in this process (A originates, B resumes). Across simulated hosts with the
/// real binaries: EndToEndTests.
@Suite(.timeLimit(.minutes(3))) struct ContinuationTests {
    /// A and B paired, A's activity seen by B.
    /// `saveWindow`: how long A waits for its app to save, when a test is about that window (else
    /// the test daemons' generous one: an app in this process answers when the machine lets it).
    static func paired(
        _ content: ActivityContent, saveWindow: Duration? = nil, configureB: @escaping (inout DaemonConfiguration) -> Void = { _ in }
    ) async throws -> (TestDaemon, TestDaemon, Activity) {
        let (a, b) = try await pair(configureA: { if let saveWindow { $0.saveWindow = saveWindow } }, configureB: configureB)
        let put = try await a.client.send(.becomeCurrent(PutCurrentActivityRequest(content: content)))
        try await waitUntilSeen(put.activity, by: b)
        return (a, b, put.activity)
    }

    /// A ("desk", which made the account) and B ("laptop"), paired.
    static func pair(
        configureA: (inout DaemonConfiguration) -> Void = { _ in }, configureB: (inout DaemonConfiguration) -> Void = { _ in }
    ) async throws -> (TestDaemon, TestDaemon) {
        let network = DiscoveryNetwork()
        let a = try await TestDaemon.start(network: network, configure: configureA)
        _ = try await a.client.send(.createAccount(CreateAccountRequest(deviceName: "desk")))
        let b = try await TestDaemon.start(network: network, configure: configureB)
        let updates = try await a.client.subscribe(.invite)
        let code = try #require(try await updates.next()?.invite?.code)
        _ = try await b.client.send(.joinAccount(JoinAccountRequest(code: code, deviceName: "laptop")))
        _ = try await updates.next()
        return (a, b)
    }

    /// Until `b` sees `activity` as A's, with A reachable: the advert can bring the activity
    /// before the session is up.
    static func waitUntilSeen(_ activity: Activity, by b: TestDaemon) async throws {
        try await PeerDiscoveryTests.waitForPeers(b, "A's activity") { $0.peers.first.map { $0.reachable && $0.activity?.id == activity.id } == true }
    }

    /// The lifecycle events of continuations on `daemon`, until `count` of them arrived.
    static func lifecycle(_ events: EventSubscription, count: Int) async throws -> [LocalEvent.Body] {
        var seen: [LocalEvent.Body] = []
        while seen.count < count, let event = try await events.next() {
            switch event.body {
            case .willContinue, .continued, .continueFailed: seen.append(event.body)
            default: break
            }
        }
        return seen
    }

    /// The next event of an attachment other than wasContinued (which comes after each continue).
    static func nextStreamRequest(_ attachment: NDJSONSubscription<AttachEvent>) async throws -> AttachEvent {
        while let event = try await attachment.next() {
            if case .wasContinued = event.body { continue }
            return event
        }
        throw TestFailure("the attachment ended")
    }

    static func waitForFile(_ path: String) async throws -> Data {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if let data = FileManager.default.contents(atPath: path), !data.isEmpty { return data }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestFailure("\(path) never appeared")
    }

    static func script(_ path: String, _ body: String) throws {
        try ("#!/bin/sh\n" + body + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o755)
    }

    @Test func anInstalledAppReceivesTheActivityWithItsContinuationID() async throws {
        let content = ActivityContent(type: "org.example.Editor.edit", title: "Report", userInfo: ["page": .int(3)])
        let (a, b, activity) = try await Self.paired(content)
        let out = b.directory + "/handler-out"
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        try Self.script(b.directory + "/editor.sh", "cp \"$1\" \(out)/activity.json.tmp && env > \(out)/env && mv \(out)/activity.json.tmp \(out)/activity.json")
        let applications = b.directory + "/share/applications"
        try FileManager.default.createDirectory(atPath: applications, withIntermediateDirectories: true)
        try """
            [Desktop Entry]
            Type=Application
            Name=Editor
            Exec=\(b.directory)/editor.sh %f
            X-Handoff-ActivityTypes=org.example.Other;org.example.Editor.edit;
            """.write(toFile: applications + "/org.example.Editor.desktop", atomically: true, encoding: .utf8)

        let events = try await b.client.subscribe(.events)
        let response = try await b.client.send(.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch)))
        let delivered = try #require(response.delivered)
        #expect(delivered.kind == .handler)
        #expect(delivered.handler == "org.example.Editor.desktop")

        let received = try LocalAPIJSON.decoder().decode(Activity.self, from: try await Self.waitForFile(out + "/activity.json"))
        #expect(received == activity)
        let env = String(decoding: try await Self.waitForFile(out + "/env"), as: UTF8.self)
        #expect(env.contains("HANDOFF_CONTINUATION_ID=\(response.continuationID.lowercasedString)"))
        #expect(env.contains("HANDOFF_ACTIVITY_TYPE=org.example.Editor.edit"))
        #expect(env.contains("HANDOFF_PEER_NAME=desk"))

        let seen = try await Self.lifecycle(events, count: 2)
        guard case .willContinue(let cid, let type, _) = seen[0], case .continued(let cid2, _, _, let outcome) = seen[1] else {
            Issue.record("expected willContinue then continued: \(seen)")
            return
        }
        #expect(cid == response.continuationID && cid2 == cid && type == activity.type && outcome.kind == .handler)
        for d in [a, b] { try await d.finish() }
    }

    @Test func withNoAppTheWebPageGoesToTheConfiguredBrowser() async throws {
        let directory = try TempDirectory.make()
        defer { TempDirectory.remove(directory) }
        let record = directory + "/browser-args"
        let browser = directory + "/browser.sh"
        try Self.script(browser, "printf '%s\\n' \"$@\" > \(record).tmp && mv \(record).tmp \(record)")
        let content = ActivityContent(type: "org.example.Reader.read", title: "Page", webpageURL: "https://example.com/a?b=c")
        let (a, b, _) = try await Self.paired(content) { $0.browser = "\(browser) --new-tab" }
        let events = try await b.client.subscribe(.events)
        let response = try await b.client.send(.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch)))
        #expect(response.delivered?.kind == .browser)
        let args = String(decoding: try await Self.waitForFile(record), as: UTF8.self)
        #expect(args == "--new-tab\nhttps://example.com/a?b=c\n")
        let seen = try await Self.lifecycle(events, count: 2)
        #expect(seen.count == 2)
        if case .continued = seen[1] {} else { Issue.record("expected continued: \(seen)") }
        for d in [a, b] { try await d.finish() }
    }

    @Test func withNoAppAndNoWebPageItFailsOnceWithTheType() async throws {
        let content = ActivityContent(type: "org.example.Nobody.edit", title: "Orphan")
        let (a, b, _) = try await Self.paired(content) { $0.browser = "/bin/false" }
        let events = try await b.client.subscribe(.events)
        do {
            _ = try await b.client.send(.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch)))
            Issue.record("continued without an app")
        } catch {
            #expect(error.code == .api(.noHandler))
            #expect(error.message.contains("no application handles org.example.Nobody.edit"))
        }
        let seen = try await Self.lifecycle(events, count: 2)
        guard case .continueFailed(_, let type, _, let code, _) = seen[1] else {
            Issue.record("expected continueFailed: \(seen)")
            return
        }
        #expect(type == "org.example.Nobody.edit" && code == .noHandler)
        // And the browser failing is a failure too, not a success.
        for d in [a, b] { try await d.finish() }
    }

    @Test func aBrowserThatFailsIsAFailedContinuation() async throws {
        let content = ActivityContent(type: "org.example.Reader.read", title: "Page", webpageURL: "https://example.com/")
        let (a, b, _) = try await Self.paired(content) { $0.browser = "/bin/false" }
        do {
            _ = try await b.client.send(.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch)))
            Issue.record("a failing browser counted as success")
        } catch {
            #expect(error.code == .api(.handlerFailed), "\(error)")
        }
        for d in [a, b] { try await d.finish() }
    }

    @Test func willSaveLetsTheAppUpdateWhatLeavesAndWasContinuedReachesIt() async throws {
        var content = ActivityContent(type: "org.example.Editor.edit", title: "Draft", userInfo: ["text": .string("old")])
        content.needsSave = true
        let (a, b, activity) = try await Self.paired(content)
        let attachment = try await a.client.subscribe(.attach(AttachRequest(activityID: activity.id)))
        #expect(try await attachment.next()?.body == .attached(activityID: activity.id))

        let continuing = Task { try await b.client.send(.continueActivity(ContinueRequest(peer: "desk"))) }
        guard case .willSave(let id, _, let peerName) = try #require(try await attachment.next()).body else {
            Issue.record("expected willSave")
            return
        }
        #expect(id == activity.id && peerName == "laptop")
        var saved = content
        saved.userInfo["text"] = .string("saved just now")
        _ = try await a.client.send(.becomeCurrent(PutCurrentActivityRequest(id: activity.id, content: saved)))

        let response = try await continuing.value
        #expect(response.activity.content.userInfo["text"] == .string("saved just now"))
        guard case .wasContinued(let continuedID, _, let by) = try #require(try await attachment.next()).body else {
            Issue.record("expected wasContinued")
            return
        }
        #expect(continuedID == activity.id && by == "laptop")
        for d in [a, b] { try await d.finish() }
    }

    @Test func anAppThatDoesNotSaveInTimeSendsItsLastState() async throws {
        var content = ActivityContent(type: "org.example.Editor.edit", title: "Draft", userInfo: ["text": .string("last")])
        content.needsSave = true
        let (a, b, activity) = try await Self.paired(content, saveWindow: .seconds(1))
        let attachment = try await a.client.subscribe(.attach(AttachRequest(activityID: activity.id)))
        _ = try await attachment.next()
        // The save window ran out (the app heard willSave and said nothing): the activity as it
        // was goes — an answer, not a timeout (B waits for A far longer than A's window).
        let response = try await b.client.send(.continueActivity(ContinueRequest(peer: "desk")))
        #expect(response.activity.content.userInfo["text"] == .string("last"))
        guard case .willSave = try #require(try await attachment.next()).body else {
            Issue.record("the app was not asked to save")
            return
        }
        for d in [a, b] { try await d.finish() }
    }

    /// No stale promise: when the app that serves an activity's streams goes away, the activity
    /// stays current but no longer offers streams, and the other device sees that.
    @Test func anActivityWhoseStreamServerLeftNoLongerOffersStreams() async throws {
        var content = ActivityContent(type: "org.example.Editor.edit", title: "Served")
        content.supportsContinuationStreams = true
        let (a, b, activity) = try await ContinuationTests.paired(content)
        #expect(try await b.client.send(.peers).peers.first?.activity?.supportsContinuationStreams == true)
        var attachment: NDJSONSubscription<AttachEvent>? = try await a.client.subscribe(.attach(AttachRequest(activityID: activity.id, serveStreams: true)))
        _ = try await attachment?.next()
        // A second app attached without serving streams changes nothing when it leaves.
        var watcher: NDJSONSubscription<AttachEvent>? = try await a.client.subscribe(.attach(AttachRequest(activityID: activity.id)))
        _ = try await watcher?.next()
        watcher = nil
        try await waitUntil("the watcher's departure seen") { a.daemon.attachments.count == 1 }
        #expect(try await a.client.send(.currentActivity).activity.content.supportsContinuationStreams)

        attachment = nil  // the app quits
        try await PeerDiscoveryTests.waitForPeers(b, "the activity without streams") { $0.peers.first?.activity?.supportsContinuationStreams == false }
        let now = try await a.client.send(.currentActivity).activity
        #expect(now.id == activity.id && now.title == "Served" && !now.content.supportsContinuationStreams, "still current, same id")
        let response = try await b.client.send(.continueActivity(ContinueRequest(peer: "desk")))
        do {
            _ = try await b.client.pipe(.openStream(continuationID: response.continuationID))
            Issue.record("a stream was opened with nobody to serve it")
        } catch {
            #expect(error.code == .api(.streamsUnsupported), "\(error)")
        }
        for d in [a, b] { try await d.finish() }
    }

    /// A serving an activity with streams, attached; B continued it.
    struct StreamSetup {
        let a: TestDaemon
        let b: TestDaemon
        let attachment: NDJSONSubscription<AttachEvent>
        let continuationID: UUID

        static func make() async throws -> StreamSetup {
            var content = ActivityContent(type: "org.example.Editor.edit", title: "Big")
            content.supportsContinuationStreams = true
            let (a, b, activity) = try await ContinuationTests.paired(content)
            let attachment = try await a.client.subscribe(.attach(AttachRequest(activityID: activity.id, serveStreams: true)))
            _ = try await attachment.next()
            let response = try await b.client.send(.continueActivity(ContinueRequest(peer: "desk")))
            return StreamSetup(a: a, b: b, attachment: attachment, continuationID: response.continuationID)
        }

        /// B opens a stream, A's app takes it: (originator's pipe, resumer's pipe).
        func open() async throws -> (StreamPipe, StreamPipe) {
            let (b, continuationID) = (self.b, self.continuationID)
            let opening = Task { try await b.client.pipe(.openStream(continuationID: continuationID)) }
            let event = try await ContinuationTests.nextStreamRequest(attachment)
            guard case .streamRequested(let streamID, _, _) = event.body else { throw TestFailure("expected streamRequested, got \(event)") }
            let originator = try await a.client.pipe(.takeStream(streamID))
            let resumer = try await opening.value
            #expect(resumer.id == streamID)
            return (originator, resumer)
        }
    }

    @Test func aStreamCarriesBytesBothWaysWithHalfClose() async throws {
        let setup = try await StreamSetup.make()
        let (a, b) = (setup.a, setup.b)
        for round in 0..<2 {  // several streams per continuation
            let (originator, resumer) = try await setup.open()
            let streamID = resumer.id

            // The resumer sends and half-closes; the originator echoes it all, then its own end.
            let payload = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ round) }
            let sending = Task {
                try await resumer.write(payload)
                resumer.finishWriting()
            }
            let got = try await originator.readToEnd()
            try await sending.value
            #expect(got == payload)
            try await originator.write(Array(got.reversed()))
            originator.finishWriting()
            let back = try await resumer.readToEnd()
            #expect(back == Array(payload.reversed()))
            originator.close()
            resumer.close()
            let there = try await a.client.send(.stream(streamID, waitForOutcome: true))
            let here = try await b.client.send(.stream(streamID, waitForOutcome: true))
            #expect(there.state == .completed && here.state == .completed, "\(there) \(here)")
            #expect(here.bytesSent == Int64(payload.count) && here.bytesReceived == Int64(payload.count))
            #expect(there.role == .originating && here.role == .resuming)
        }
        for d in [a, b] { try await d.finish() }
    }

    @Test func streamsAreRefusedClearly() async throws {
        let plain = ActivityContent(type: "org.example.Editor.edit", title: "No streams")
        let (a, b, _) = try await Self.paired(plain)
        let response = try await b.client.send(.continueActivity(ContinueRequest(peer: "desk")))
        await expectFailure(.streamsUnsupported) { _ = try await b.client.pipe(.openStream(continuationID: response.continuationID)) }
        await expectFailure(.unknownContinuation) { _ = try await b.client.pipe(.openStream(continuationID: UUID())) }
        await expectFailure(.unknownStream) { _ = try await a.client.pipe(.takeStream(UUID())) }

        // Offered, but no app serves them right now.
        var streaming = plain
        streaming.supportsContinuationStreams = true
        let put = try await a.client.send(.becomeCurrent(PutCurrentActivityRequest(content: streaming)))
        try await PeerDiscoveryTests.waitForPeers(b, "the new activity") { $0.peers.first?.activity?.id == put.activity.id }
        let second = try await b.client.send(.continueActivity(ContinueRequest(peer: "desk")))
        await expectFailure(.streamRefused) { _ = try await b.client.pipe(.openStream(continuationID: second.continuationID)) }
        for d in [a, b] { try await d.finish() }
    }

    @Test func aStreamThatBreaksFailsOnBothSides() async throws {
        let setup = try await StreamSetup.make()
        let (a, b) = (setup.a, setup.b)
        let (originator, resumer) = try await setup.open()
        let streamID = resumer.id
        try await originator.write(Array(repeating: 7, count: 100_000))
        // The originating app dies without finishing: a broken stream, not a short one.
        originator.close()
        _ = try? await resumer.readToEnd()
        let here = try await b.client.send(.stream(streamID, waitForOutcome: true))
        let there = try await a.client.send(.stream(streamID, waitForOutcome: true))
        #expect(here.state == .failed && there.state == .failed, "\(here) \(there)")
        for d in [a, b] { try await d.finish() }
    }
}

