import Foundation
import HandoffAPI
import HandoffClient
import HandoffDaemon
import HandoffKit
import HandoffModel
import HandoffTestSupport
import Synchronization
import Testing

/// HandoffKit (docs/handoffkit.md) between two daemons in this process: an app's `UserActivity`
/// on desk, seen and continued from laptop, where another app receives it with `HandoffApp`.
@Suite(.timeLimit(.minutes(3))) struct HandoffKitTests {
    static let note = "org.example.note"

    /// What a delegate or receiver heard, in order.
    final class Journal: Sendable {
        private let lines = Mutex<[String]>([])
        func add(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }

        func wait(for line: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
            try await waitUntil("\(line) heard", sourceLocation: sourceLocation) { self.all.contains(line) }
        }
    }

    final class Notes: UserActivityDelegate, ContinuationReceiver {
        let journal = Journal()
        let onSave: @Sendable (UserActivity) async -> Void
        let take: @Sendable (IncomingContinuation) async throws -> String

        init(onSave: @escaping @Sendable (UserActivity) async -> Void = { _ in }, take: @escaping @Sendable (IncomingContinuation) async throws -> String = { $0.window ?? "new" }) {
            self.onSave = onSave
            self.take = take
        }

        func userActivityWillSave(_ userActivity: UserActivity) async {
            journal.add("willSave")
            await onSave(userActivity)
        }

        func userActivityWasContinued(_ userActivity: UserActivity) async { journal.add("wasContinued") }

        func userActivity(_ userActivity: UserActivity, didReceive stream: ContinuationStream) async {
            journal.add("stream")
            try? await stream.write(Array("attachment bytes".utf8))
            stream.finishWriting()
            _ = try? await stream.readToEnd()
        }

        func willContinueUserActivity(withType type: String, from device: String) async { journal.add("willContinue \(type) \(device)") }

        func continueUserActivity(_ continuation: IncomingContinuation) async throws -> String {
            journal.add("continue \(continuation.userActivity.title) \(continuation.window ?? "-")")
            return try await take(continuation)
        }

        func didFailToContinueUserActivity(withType type: String, error: HandoffError) async { journal.add("failed \(type) \(error.code)") }
    }

    /// A paired desk and laptop, and a HandoffApp on each running until the test ends.
    static func withApps(
        deskTypes: [String] = [], laptopTypes: [String] = [note], deskReceiver: Notes? = nil, laptopReceiver: Notes,
        configure: (inout DaemonConfiguration) -> Void = { _ in },
        _ body: (TestDaemon, TestDaemon, HandoffApp, HandoffApp) async throws -> Void
    ) async throws {
        let (desk, laptop) = try await PeerDiscoveryTests.pair(configure: configure)
        let deskApp = HandoffApp(appID: "org.example.Notes", continues: deskTypes, socketPath: desk.socketPath)
        let laptopApp = HandoffApp(appID: "org.example.Notes", continues: laptopTypes, socketPath: laptop.socketPath)
        try await deskApp.connect()
        try await laptopApp.connect()
        try await withThrowingTaskGroup { group in
            group.addTask { await deskApp.run(receiver: deskReceiver) }
            group.addTask { await laptopApp.run(receiver: laptopReceiver) }
            defer { group.cancelAll() }
            try await body(desk, laptop, deskApp, laptopApp)
        }
        try await desk.finish()
        try await laptop.finish()
    }

    static func seen(by laptop: TestDaemon, _ condition: @escaping (PeerInfo?) -> Bool) async throws {
        _ = try await PeerDiscoveryTests.waitForPeers(laptop, "desk's activity") { condition($0.peers.first { $0.name == "desk" && $0.reachable }) }
    }

    /// A note "Draft" made current by desk's app, once laptop sees it.
    static func draftSeen(_ desk: TestDaemon, _ laptop: TestDaemon, _ deskApp: HandoffApp) async throws {
        let activity = UserActivity(activityType: note, app: deskApp)
        activity.title = "Draft"
        try await activity.becomeCurrent()
        let id = try await desk.client.send(.currentActivity).activity.id
        try await seen(by: laptop) { $0?.activity?.id == id }
    }

    @Test func becomeCurrentShowsTheActivityAndItsChangesToTheOtherDevice() async throws {
        let receiver = Notes()
        try await Self.withApps(laptopReceiver: receiver) { desk, laptop, deskApp, _ in
            let activity = UserActivity(activityType: Self.note, app: deskApp)
            activity.title = "Groceries"
            activity.userInfo = ["items": .int(3)]
            activity.requiredUserInfoKeys = ["items"]
            activity.webpageURL = URL(string: "https://example.org/notes/1")
            activity.targetContentIdentifier = "note-1"
            activity.keywords = ["food"]
            try await activity.becomeCurrent()
            let current = try await desk.client.send(.currentActivity).activity
            #expect(current.title == "Groceries" && current.content.userInfo["items"] == .int(3) && current.content.requiredUserInfoKeys == ["items"])
            #expect(current.content.webpageURL == "https://example.org/notes/1" && current.content.targetContentIdentifier == "note-1")
            try await Self.seen(by: laptop) { $0?.activity?.id == current.id }

            // A change reaches the other device without another becomeCurrent, same activity.
            activity.title = "Groceries and milk"
            try await waitUntil("the change given") { (try? await desk.client.send(.currentActivity).activity.title) == "Groceries and milk" }
            #expect(try await desk.client.send(.currentActivity).activity.id == current.id)

            // Not eligible: the window has no activity for other devices, until it is again.
            activity.isEligibleForHandoff = false
            try await waitUntil("the activity withdrawn") { (try? await desk.client.send(.currentActivity)) == nil }
            let expiry = Date(timeIntervalSinceNow: 3600)
            activity.expirationDate = expiry
            activity.persistentIdentifier = "notes/1"
            activity.isEligibleForHandoff = true
            try await waitUntil("the activity given again") { (try? await desk.client.send(.currentActivity).activity.content.persistentIdentifier) == "notes/1" }
            let again = try await desk.client.send(.currentActivity).activity.content
            #expect(abs(Double(again.expirationDate?.microsecondsSinceEpoch ?? 0) / 1_000_000 - expiry.timeIntervalSince1970) < 0.001)

            try await activity.resignCurrent()
            await expectFailure(.noCurrentActivity) { _ = try await desk.client.send(.currentActivity) }
            await activity.invalidate()
            do {
                try await activity.becomeCurrent()
                Issue.record("an invalidated activity cannot become current")
            } catch let error as HandoffError {
                #expect(error.code == .invalidated)
            }
        }
    }

    /// `addUserInfoEntries` merges into what the activity has (a key given again takes the new
    /// value) and reaches handoffd without another becomeCurrent; `becomeCurrent` returns
    /// handoffd's advice on size.
    @Test func userInfoEntriesAreAddedAndAdviceReturned() async throws {
        let d = try await TestDaemon.start()
        let app = HandoffApp(appID: "org.example.Notes", socketPath: d.socketPath)
        try await app.connect()
        try await withThrowingTaskGroup { group in
            group.addTask { await app.run() }
            defer { group.cancelAll() }
            let activity = UserActivity(activityType: Self.note, app: app)
            activity.title = "Groceries"
            activity.userInfo = ["items": .int(2), "list": .string("milk")]
            #expect(try await activity.becomeCurrent() == [])
            activity.addUserInfoEntries(["list": .string("milk, eggs"), "shop": .string("corner")])
            #expect(activity.userInfo == ["items": .int(2), "list": .string("milk, eggs"), "shop": .string("corner")])
            try await waitUntil("the entries given") { (try? await d.client.send(.currentActivity).activity.content.userInfo["shop"]) == .string("corner") }
            #expect(try await d.client.send(.currentActivity).activity.content.userInfo == activity.userInfo)
            activity.addUserInfoEntries(["notes": .string(String(repeating: "x", count: 4096))])
            let advice = try await activity.becomeCurrent()
            #expect(advice.count == 1 && advice[0].contains("continuation stream"), "\(advice)")
        }
        try await d.finish()
    }

    @Test func needsSaveAsksTheDelegateAndTheOtherDeviceGetsWhatItSaved() async throws {
        let originator = Notes(onSave: { $0.userInfo = ["text": .string("typed just now")] })
        let receiver = Notes()
        try await Self.withApps(laptopReceiver: receiver) { desk, laptop, deskApp, _ in
            let activity = UserActivity(activityType: Self.note, app: deskApp)
            activity.title = "Draft"
            activity.supportsContinuationStreams = true
            activity.delegate = originator
            try await activity.becomeCurrent()
            activity.needsSave = true
            activity.userInfo = ["text": .string("not sent yet")]
            try await waitUntil("needsSave given") { (try? await desk.client.send(.currentActivity).activity.content.needsSave) == true }
            #expect(try await desk.client.send(.currentActivity).activity.content.userInfo["text"] == nil, "changes wait for willSave")
            let id = try await desk.client.send(.currentActivity).activity.id
            try await Self.seen(by: laptop) { $0?.activity?.id == id }

            let response = try await laptop.client.send(.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch)))
            #expect(response.activity.content.userInfo["text"] == .string("typed just now"))
            #expect(response.delivered?.kind == .app && response.delivered?.window == "new")
            try await originator.journal.wait(for: "wasContinued")
            #expect(originator.journal.all == ["willSave", "wasContinued"])
            #expect(activity.needsSave == false, "cleared once saved")
            #expect(receiver.journal.all == ["willContinue \(Self.note) desk", "continue Draft -"])
        }
    }

    @Test func theReceiverTakesItInTheWindowShowingItsTargetAndOpensAStream() async throws {
        let originator = Notes()
        let streamed = Mutex<[UInt8]>([])
        let receiver = Notes(take: { continuation in
            let stream = try await continuation.openStream()
            stream.finishWriting()
            let bytes = try await stream.readToEnd()
            streamed.withLock { $0 = bytes }
            #expect(try await stream.completed())
            return continuation.window ?? "new"
        })
        try await Self.withApps(laptopReceiver: receiver) { desk, laptop, deskApp, laptopApp in
            // The laptop's app shows note 7 in window "seven" and note 8 in "eight".
            for (window, target) in [("seven", "note-7"), ("eight", "note-8")] {
                let shown = UserActivity(activityType: Self.note, app: laptopApp, window: window)
                shown.title = target
                shown.targetContentIdentifier = target
                try await shown.becomeCurrent()
            }
            let activity = UserActivity(activityType: Self.note, app: deskApp)
            activity.title = "Note 7"
            activity.targetContentIdentifier = "note-7"
            activity.supportsContinuationStreams = true
            activity.delegate = originator
            try await activity.becomeCurrent()
            let id = try await desk.client.send(.currentActivity).activity.id
            try await Self.seen(by: laptop) { $0?.activity?.id == id }
            let response = try await laptop.client.send(.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch)))
            #expect(response.delivered?.window == "seven")
            #expect(streamed.withLock { $0 } == Array("attachment bytes".utf8))
            #expect(receiver.journal.all.contains("continue Note 7 seven"))
            #expect(originator.journal.all.contains("stream"))
        }
    }

    /// Quick Note's calls: what the history keeps of a content (`savedActivity(for:)`), and a
    /// link opened by an app (`open(link:)`) reaching the app that continues its type.
    @Test func savedActivitiesAndLinksOpenedByAnApp() async throws {
        let receiver = Notes()
        try await Self.withApps(laptopReceiver: receiver) { desk, laptop, deskApp, laptopApp in
            let activity = UserActivity(activityType: Self.note, app: deskApp)
            activity.title = "Saved note"
            activity.persistentIdentifier = "notes/9"
            try await activity.becomeCurrent()
            let id = try await desk.client.send(.currentActivity).activity.id
            try await waitUntil("desk's history") { try await deskApp.savedActivity(for: "notes/9") != nil }
            #expect(try await deskApp.savedActivity(for: "notes/9")?.title == "Saved note")
            #expect(try await laptopApp.savedActivity(for: "notes/9") == nil)
            try await Self.seen(by: laptop) { $0?.activity?.id == id }

            let link = try await desk.client.send(.link(LinkRequest())).link
            let opened = try await laptopApp.open(link: link, environment: [:])
            #expect(opened.source == .device && opened.continued.delivered?.kind == .app && opened.continued.activity.id == id)
            #expect(receiver.journal.all.contains { $0.hasPrefix("continue Saved note") }, "\(receiver.journal.all)")
            // Continued, it is kept on the laptop too.
            try await waitUntil("the laptop's history") { try await laptopApp.savedActivity(for: "notes/9")?.persistentIdentifier == "notes/9" }
            // Deleted by the laptop's app: gone there and on the desk.
            try await laptopApp.deleteSavedActivities(withPersistentIdentifiers: ["notes/9"])
            #expect(try await laptopApp.savedActivity(for: "notes/9") == nil)
            try await waitUntil("the desk to hear the deletion") { try await deskApp.savedActivity(for: "notes/9") == nil }
            // All of the app's: the types it continues, or made.
            let other = UserActivity(activityType: Self.note, app: deskApp)
            other.title = "Another"
            other.persistentIdentifier = "notes/10"
            try await other.becomeCurrent()
            try await waitUntil("desk's history") { try await deskApp.savedActivity(for: "notes/10") != nil }
            try await deskApp.deleteAllSavedActivities()
            #expect(try await desk.client.send(.history).entries.isEmpty)
            do {
                _ = try await laptopApp.open(link: "handoff:v1.nothing")
                Issue.record("a link that is not one opened")
            } catch let error as HandoffError {
                #expect(error.code == .refused(.invalidLink), "\(error)")
            }
        }
    }

    @Test func aReceiverThatRefusesFailsTheContinuationWithItsReason() async throws {
        struct Busy: Error, CustomStringConvertible { var description: String { "the editor is saving" } }
        let receiver = Notes(take: { _ in throw Busy() })
        try await Self.withApps(laptopReceiver: receiver) { desk, laptop, deskApp, _ in
            try await Self.draftSeen(desk, laptop, deskApp)
            do {
                _ = try await laptop.client.send(.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch)))
                Issue.record("a refusal must fail the continuation")
            } catch let error as HandoffClientError {
                #expect(error.code == .api(.handlerFailed) && error.message.contains("the editor is saving"))
            }
        }
    }

    @Test func errorsAreTypedAndSayWhatToDo() async throws {
        let dir = try TempDirectory.make()
        defer { TempDirectory.remove(dir) }
        let nobody = HandoffApp(appID: "org.example.Notes", socketPath: dir + "/handoffd.sock")
        do {
            try await nobody.connect()
            Issue.record("no handoffd is listening")
        } catch {
            #expect(error.code == .handoffdNotRunning)
        }
        let activity = UserActivity(activityType: Self.note, app: nobody)
        await #expect(throws: HandoffError.self) { try await activity.becomeCurrent() }

        let d = try await TestDaemon.start()
        let app = HandoffApp(appID: "org.example.Notes", socketPath: d.socketPath)
        try await app.connect()
        let bad = UserActivity(activityType: "no dots", app: app)
        do {
            try await bad.becomeCurrent()
            Issue.record("an invalid type is refused")
        } catch {
            #expect(error.code == .invalidActivity(.invalidType))
        }
        do {
            try await HandoffApp(appID: "../etc", socketPath: d.socketPath).connect()
            Issue.record("an invalid app id is refused")
        } catch {
            #expect(error.code == .invalidActivity(.invalidAppID))
        }
        try await d.finish()
    }

    /// handoffd restarts under a running app: HandoffKit registers again and hands over the
    /// window's activity and focus as the app left them.
    @Test func theAppReconnectsWhenHandoffdRestarts() async throws {
        let d = try await TestDaemon.start()
        let app = HandoffApp(appID: "org.example.Notes", socketPath: d.socketPath)
        var changes = app.registrationChanges.makeAsyncIterator()
        try await app.connect()
        #expect(await changes.next() == .some(nil), "registered")
        let activity = UserActivity(activityType: Self.note, app: app)
        activity.title = "Survives"
        try await withThrowingTaskGroup { group in
            group.addTask { await app.run() }
            defer { group.cancelAll() }
            try await activity.becomeCurrent()
            try await d.stop()
            // The app is told, once (by the first attempt to register again, not every one).
            #expect(await changes.next()??.code == .handoffdNotRunning)
            // Changed while handoffd is away: what comes back is the latest.
            activity.title = "Survives, edited"
            let again = try await TestDaemon.start(directory: d.directory)
            try await waitUntil("the activity given again") { (try? await again.client.send(.currentActivity).activity.title) == "Survives, edited" }
            #expect(await changes.next() == .some(nil), "registered again")
            try await again.finish()
        }
    }

    @Test func restorationActivitiesComeBackAtTheNextConnection() async throws {
        let d = try await TestDaemon.start()
        let first = HandoffApp(appID: "org.example.Viewer", socketPath: d.socketPath)
        try await first.connect()
        let window = UserActivity(activityType: "org.example.item", app: first, window: "w7")
        window.title = "Item 7"
        window.targetContentIdentifier = "item-7"
        try await first.saveRestoration(window)
        let second = HandoffApp(appID: "org.example.Viewer", socketPath: d.socketPath)
        try await second.connect()
        let restored = await second.restoredWindows
        #expect(restored.keys.sorted() == ["w7"] && restored["w7"]?.targetContentIdentifier == "item-7")
        let reopened = UserActivity(copying: try #require(restored["w7"]), app: second, window: "w7")
        try await reopened.becomeCurrent()
        #expect(try await d.client.send(.currentActivity).activity.title == "Item 7")
        // Closed keeping its restoration activity: the window's activity as the app has it —
        // here one never handed over (not eligible for Handoff) — comes back next time.
        let eight = UserActivity(activityType: "org.example.item", app: second, window: "w8")
        eight.title = "Item 8, private"
        eight.isEligibleForHandoff = false
        try await eight.becomeCurrent()
        try await second.close(window: "w8", keepingRestoration: true)
        let third = HandoffApp(appID: "org.example.Viewer", socketPath: d.socketPath)
        try await third.connect()
        #expect(await third.restoredWindows["w8"]?.title == "Item 8, private")
        try await d.finish()
    }

    @Test func aLaunchedAppReadsItsContinuationFromTheEnvironment() async throws {
        let dir = try TempDirectory.make()
        defer { TempDirectory.remove(dir) }
        let activity = Activity(content: ActivityContent(type: Self.note, title: "From the launcher"), createdAt: .now())
        try LocalAPIJSON.encoder().encode(activity).write(to: URL(fileURLWithPath: dir + "/a.json"))
        let id = UUID()
        let launched = try #require(
            try IncomingContinuation.launched(environment: [
                HandlerEnvironment.activityFile: dir + "/a.json", HandlerEnvironment.continuationID: id.uuidString,
                HandlerEnvironment.peerName: "desk", HandlerEnvironment.socket: dir + "/s",
            ])
        )
        #expect(launched.id == id && launched.userActivity.title == "From the launcher" && launched.device == "desk")
        #expect(try IncomingContinuation.launched(environment: [:]) == nil)
        // Through the receiver (what `run` does at start): willContinue first, as for a
        // running app, then the activity.
        let receiver = Notes()
        await HandoffApp.takeLaunched(
            receiver,
            environment: [HandlerEnvironment.activityFile: dir + "/a.json", HandlerEnvironment.continuationID: id.uuidString, HandlerEnvironment.peerName: "desk"]
        )
        #expect(receiver.journal.all == ["willContinue \(Self.note) desk", "continue From the launcher -"], "\(receiver.journal.all)")
    }

    /// A continuation the receiver heard `willContinue` for, which then fails (what desk showed
    /// changed as laptop asked for it): `didFailToContinueUserActivity`, with the typed error.
    @Test func aContinuationThatFailsAfterWillContinueReachesDidFailToContinue() async throws {
        let receiver = Notes()
        let deskSocket = Mutex<String>("")
        // At willSave, something else becomes current on desk: what laptop saw is gone.
        let changer = Notes(onSave: { _ in
            let client = HandoffClient(socketPath: deskSocket.withLock { $0 }, timeoutSeconds: 10)
            _ = try? await client.send(.becomeCurrent(PutCurrentActivityRequest(content: ActivityContent(type: Self.note, title: "A script's"))))
        })
        try await Self.withApps(laptopReceiver: receiver) { desk, laptop, deskApp, _ in
            deskSocket.withLock { $0 = desk.socketPath }
            let activity = UserActivity(activityType: Self.note, app: deskApp)
            activity.title = "Draft"
            activity.delegate = changer
            try await activity.becomeCurrent()
            activity.needsSave = true
            try await waitUntil("needsSave given") { (try? await desk.client.send(.currentActivity).activity.content.needsSave) == true }
            let id = try await desk.client.send(.currentActivity).activity.id
            try await Self.seen(by: laptop) { $0?.activity?.id == id }
            await expectFailure(.activityChanged) { _ = try await laptop.client.send(.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch))) }
            try await receiver.journal.wait(for: "failed \(Self.note) \(HandoffError.Code.refused(.activityChanged))")
            #expect(receiver.journal.all.first == "willContinue \(Self.note) desk")
        }
    }

    /// A receiver whose `continueUserActivity` hangs: HandoffKit refuses that continuation for
    /// it within handoffd's deadline, and the app stops receiving — the next continuation takes
    /// the launch path — until the call returns; then it receives again.
    @Test func aReceiverThatHangsFailsThatContinuationAndTheNextIsLaunchedUntilItReturns() async throws {
        // Hung: waits, deaf to cancellation, until the test lets it go (later calls return at once).
        // (A continuation handed over before the app registered again hangs too: several may wait.)
        let gate = Mutex<(open: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))
        let receiver = Notes(take: { _ in
            await withCheckedContinuation { continuation in
                let open = gate.withLock { g in
                    if !g.open { g.waiting.append(continuation) }
                    return g.open
                }
                if open { continuation.resume() }
            }
            return "main"
        })
        // The deadline this test is about, HandoffKit's for its receiver, short enough to wait
        // for (2 s) and far below handoffd's (the test daemons' minute): the two never race, as
        // a 10 s against 8 s pair did once on a loaded machine. What the app is given of
        // handoffd's deadline by default is a table below.
        #expect(AppEvent.receiverDeadline(answerWithin: .seconds(10)) == .seconds(8))
        #expect(AppEvent.receiverDeadline(answerWithin: .seconds(5)) == .seconds(4))
        #expect(AppEvent.receiverDeadline(answerWithin: .seconds(60)) == .seconds(48))
        try await Self.withApps(laptopReceiver: receiver) { desk, laptop, deskApp, laptopApp in
            await laptopApp.setReceiverDeadline(.seconds(2))
            try await Self.draftSeen(desk, laptop, deskApp)
            // Refused by HandoffKit (handler_failed, its words) before handoffd's own deadline (timeout).
            let message = await expectFailure(.handlerFailed) { _ = try await laptop.client.send(.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch))) }
            #expect(message.contains("did not take the activity in time"))
            // Registered again without its types: continuations are launched (no app is installed).
            try await waitUntil("the launch path") {
                do {
                    _ = try await laptop.client.send(.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch)))
                    return false
                } catch {
                    return (error as? HandoffClientError)?.code == .api(.noHandler)
                }
            }
            gate.withLock { g in
                g.open = true
                defer { g.waiting = [] }
                return g.waiting
            }.forEach { $0.resume() }
            try await waitUntil("the app receiving again") {
                (try? await laptop.client.send(.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch))))?.delivered?.kind == .app
            }
        }
    }
}
