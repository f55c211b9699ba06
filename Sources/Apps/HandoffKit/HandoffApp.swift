#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffClient
import HandoffModel
import HandoffSystem
import Synchronization

/// The app's connection to handoffd (docs/handoffkit.md): its registration, its windows'
/// activities, and the continuations handed to it — what `NSApplication` and its delegate do for
/// Handoff on a Mac.
///
/// ```swift
/// let app = HandoffApp(appID: "org.example.Notes", continues: ["org.example.note"])
/// try await app.connect()
/// async let served: Void = app.run(receiver: myReceiver)
/// ```
///
/// `run` keeps the registration for as long as it runs: when handoffd restarts it registers
/// again and hands handoffd the windows' activities and focus as the app left them.
public actor HandoffApp {
    /// The window an activity describes when the app does not name one.
    public static let mainWindow = "main"
    /// How long `ContinuationReceiver.continueUserActivity` has, as handoffd says it at each
    /// registration: a little less than handoffd gives the app (docs/apps.md, 5 s), so that
    /// HandoffKit answers for an app that hangs (`AppEvent.receiverDeadline`).
    public var continueDeadline: Duration { receiverDeadline }
    private var receiverDeadline: Duration { receiverDeadlineSet ?? derivedReceiverDeadline }
    private var derivedReceiverDeadline = AppEvent.receiverDeadline(answerWithin: nil)
    /// Set by a test that is about the receiver's deadline alone: one far below handoffd's, so
    /// that the two never race on a loaded machine (docs/testing.md).
    private var receiverDeadlineSet: Duration?

    package func setReceiverDeadline(_ deadline: Duration) {
        receiverDeadlineSet = deadline
    }

    public nonisolated let appID: String
    /// The activity types this app continues (declared once, at registration).
    public nonisolated let continuedTypes: [String]
    /// The sites whose pages it opens (`example.com`, `*.example.org`; Apple's associated
    /// domains): such a page continued here comes to its receiver as an activity of type
    /// `UserActivity.browsingWebType`, with `webpageURL` (docs/apps.md, "Web pages into apps").
    public nonisolated let webDomains: [String]
    nonisolated let client: HandoffClient
    /// Wakes `giveChanges` when a window's activity changed (`changedWindows` says which).
    private nonisolated let changes: AsyncStream<Void>.Continuation
    private let changed: AsyncStream<Void>
    private nonisolated let changedWindows = Mutex<Set<String>>([])

    private var subscription: NDJSONSubscription<AppEvent>?
    private var registration: UUID?
    /// Each window's activity, as the app set it.
    private var windows: [String: UserActivity] = [:]
    /// What handoffd has for each window: which activity, as it was given.
    private var given: [String: (activity: ObjectIdentifier, content: ActivityContent, warnings: [String])] = [:]
    private var focused: String?
    /// What each window declared it takes (`setActivationConditions`), given again whenever
    /// handoffd restarts.
    private var conditions: [String: ActivationConditions] = [:]
    /// Window requests go one at a time (`lockWindows`): each reads what handoffd has and
    /// changes it across awaits. The lock passes straight to the next waiter, in order.
    private var windowsLocked = false
    private var windowWaiters: [CheckedContinuation<Void, Never>] = []
    /// Calls of the receiver's `continueUserActivity` still running past the deadline: while
    /// there are any, the app does not receive (it is registered without its types), so
    /// continuations go the way they would if it were not running.
    private var hungCalls = 0
    private var running = false
    /// The continuation this process was started for went to a receiver (once per process,
    /// whichever `HandoffApp` runs first).
    private static let launchedTaken = Mutex(false)
    /// The windows' state-restoration activities handoffd kept from the app's last run.
    public private(set) var restoredWindows: [String: UserActivity] = [:]

    /// Whether handoffd has this app's registration, as it changes: nil once it has, else why
    /// not (HandoffKit keeps trying while `run` runs). For an app that shows whether what it
    /// does can be handed over. Only changes come (the latest, if the app reads late).
    public nonisolated let registrationChanges: AsyncStream<HandoffError?>
    private nonisolated let registrationChange: AsyncStream<HandoffError?>.Continuation
    /// What `registrationChanges` last said: registered (nil) or why not; nothing yet when unset.
    private var reported: HandoffError??

    /// `socketPath`: handoffd's local API (the default is the user's, as handoffctl's).
    public init(appID: String, continues types: [String] = [], webDomains: [String] = [], socketPath: String? = nil) {
        self.appID = appID
        continuedTypes = types
        self.webDomains = webDomains
        client = HandoffClient(socketPath: socketPath ?? HandoffPaths.defaultSocketPath(), timeoutSeconds: 10)
        (changed, changes) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        (registrationChanges, registrationChange) = AsyncStream.makeStream(of: HandoffError?.self, bufferingPolicy: .bufferingNewest(1))
    }

    private func report(_ problem: HandoffError?) {
        // Registered and not: a failed attempt of a second `connect` does not undo the first's success.
        if problem != nil, subscription != nil { return }
        guard reported.map({ $0?.code != problem?.code }) ?? true else { return }
        reported = .some(problem)
        registrationChange.yield(problem)
    }

    // MARK: Connecting

    /// Registers with handoffd: throws `handoffdNotRunning` when it is not there (`run` keeps
    /// trying), and what handoffd refused (a bad app id or type, too many apps).
    public func connect() async throws(HandoffError) {
        guard subscription == nil else { return }
        let subscription: NDJSONSubscription<AppEvent>
        let receiving = hungCalls == 0
        do {
            subscription = try await client.subscribe(
                .registerApp(AppRegistration(appID: appID, continues: receiving ? continuedTypes : [], webDomains: receiving ? webDomains : []))
            )
        } catch {
            report(HandoffError(error))
            throw HandoffError(error)
        }
        let first: AppEvent?
        do {
            first = try await subscription.next()
        } catch {
            subscription.close()
            report(HandoffError(error))
            throw HandoffError(error)
        }
        guard case .registered(let registration, let restored, let answerWithin) = first?.body else {
            subscription.close()
            let problem = HandoffError(.versionMismatch, "handoffd did not confirm the registration; are HandoffKit and handoffd the same version?")
            report(problem)
            throw problem
        }
        report(nil)
        self.subscription = subscription
        self.registration = registration
        derivedReceiverDeadline = AppEvent.receiverDeadline(answerWithin: answerWithin)
        // A hung receiver call started or returned while this registration was being made (its
        // close found none to close): this one has the wrong types; `run` registers again.
        if (hungCalls == 0) != receiving { subscription.close() }
        if restoredWindows.isEmpty {
            restoredWindows = Dictionary(restored.map { ($0.window, UserActivity(received: $0.activity.content)) }) { first, _ in first }
        }
    }

    /// Serves the registration until the task is cancelled: hands continuations to `receiver`,
    /// and willSave, wasContinued and streams to each activity's delegate; registers again
    /// whenever handoffd restarts. Returns once the delegate and receiver calls it made have
    /// returned. One `run` at a time (a second returns at once).
    ///
    /// A process handoffd started for a continuation (no app of its kind was running) hands it
    /// to `receiver` first, as one that was running hears it: `willContinueUserActivity`, then
    /// `continueUserActivity` (`IncomingContinuation.launched`; Apple's scene connection gives
    /// the type first too) — unless `takingLaunched` is false (the app reads it itself).
    public func run(receiver: (any ContinuationReceiver)? = nil, takingLaunched: Bool = true) async {
        guard !running else { return }
        running = true
        defer { running = false }
        await withDiscardingTaskGroup { group in
            group.addTask { await self.giveChanges() }
            if takingLaunched, let receiver, Self.launchedTaken.withLock({ taken in defer { taken = true }; return !taken }) {
                group.addTask { await Self.takeLaunched(receiver, environment: ProcessInfo.processInfo.environment) }
            }
            var wait = Duration.milliseconds(50)
            while !Task.isCancelled {
                guard let subscription else {
                    do {
                        try await connect()
                        wait = .milliseconds(50)
                        await giveEverything()
                    } catch {
                        // Quietly: an app waiting for handoffd should not wake every second (QuietSleep).
                        try? await QuietSleep.sleep(for: wait)
                        wait = min(wait * 2, .seconds(2))
                    }
                    continue
                }
                let event = await withTaskCancellationHandler {
                    try? await subscription.next()
                } onCancel: {
                    subscription.close()
                }
                guard let event else {
                    if self.subscription === subscription { lost() }
                    continue
                }
                // In order, except what may take long: a continuation, a stream.
                switch event.body {
                case .continue, .streamRequested: group.addTask { await self.handle(event, receiver: receiver) }
                default: await handle(event, receiver: receiver)
                }
            }
            lost()
        }
    }

    /// The registration ended (handoffd stopped, or this app was taken for hung): what handoffd
    /// had is gone, and is given again at the next registration.
    /// `registrationChanges` hears of it from the next attempt to register (none when it
    /// succeeds at once: the registration was ended on purpose, for a hung receiver).
    private func lost() {
        subscription?.close()
        subscription = nil
        registration = nil
        given.removeAll()
    }

    // MARK: Windows

    func becomeCurrent(_ activity: UserActivity) async throws(HandoffError) -> [String] {
        await lockWindows()
        defer { unlockWindows() }
        windows[activity.window] = activity
        focused = activity.window
        guard let registration else { throw Self.notConnected }
        let warnings = try await give(activity.window)
        try await call(registration) { _ = try await $0.send(.focusWindow(activity.window, registration: registration)) }
        return warnings
    }

    func resign(_ activity: UserActivity) async throws(HandoffError) {
        await lockWindows()
        defer { unlockWindows() }
        guard windows[activity.window] === activity else { return }
        windows[activity.window] = nil
        try await give(activity.window)
    }

    /// The user focused `window`: its activity (if it has one) is the device's current one.
    public func focus(window: String) async throws(HandoffError) {
        await lockWindows()
        defer { unlockWindows() }
        focused = window
        guard let registration else { throw Self.notConnected }
        try await call(registration) { _ = try await $0.send(.focusWindow(window, registration: registration)) }
    }

    /// The user closed `window`: its activity and its restoration activity go — unless
    /// `keepingRestoration`: then its activity as it is becomes its restoration activity (a
    /// scene's `stateRestorationActivity`, asked as it disconnects), handed back in
    /// `restoredWindows` next time.
    public func close(window: String, keepingRestoration: Bool = false) async throws(HandoffError) {
        await lockWindows()
        defer { unlockWindows() }
        // The window's activity as the app has it now (a change not yet given, what needsSave
        // holds back, one not eligible for Handoff): what it would show when reopened.
        let last = keepingRestoration ? windows[window]?.saved() : nil
        windows[window] = nil
        given[window] = nil
        conditions[window] = nil
        if focused == window { focused = nil }
        guard let registration else { throw Self.notConnected }
        if let last { try await call(registration) { _ = try await $0.send(.saveRestoration(last, window: window, registration: registration)) } }
        try await call(registration) { _ = try await $0.send(.closeWindow(window, registration: registration, keepingRestoration: keepingRestoration)) }
    }

    /// What `window` takes of the continuations of this app's types (a scene's
    /// `activationConditions`): the `targetContentIdentifier`s it can show and those it prefers
    /// to — exact ids, prefixes ending in `*`, or `*`. A continuation goes to a window that
    /// prefers its target (or shows it), else one that can, else to the window focused last of
    /// those that declared nothing, else to a new window (`IncomingContinuation.window` nil).
    /// Nil clears them. Kept across handoffd's restarts.
    public func setActivationConditions(_ conditions: ActivationConditions?, for window: String) async throws(HandoffError) {
        if let problem = conditions?.problem { throw HandoffError(.refused(.invalidValue), "activation conditions: \(problem)") }
        await lockWindows()
        defer { unlockWindows() }
        self.conditions[window] = conditions
        guard let registration else { return }
        try await call(registration) { _ = try await $0.send(.setActivationConditions(conditions, window: window, registration: registration)) }
    }

    /// Keeps `activity` as its window's state-restoration activity: handed back in
    /// `restoredWindows` when the app next connects (`stateRestorationActivity`). Needs handoffd.
    public func saveRestoration(_ activity: UserActivity) async throws(HandoffError) {
        guard let registration else { throw Self.notConnected }
        let content = activity.content
        try await call(registration) { _ = try await $0.send(.saveRestoration(content, window: activity.window, registration: registration)) }
    }

    public func removeRestoration(window: String) async throws(HandoffError) {
        guard let registration else { throw Self.notConnected }
        try await call(registration) { _ = try await $0.send(.removeRestoration(window: window, registration: registration)) }
    }

    // MARK: Saved activities and links (docs/apps.md, "History" and "Links")

    /// The activity this device last saw for the content `persistentIdentifier` names — this
    /// app's own or one continued from another device — as the history keeps it; nil when it
    /// keeps none (Quick Note's saved activity). Needs handoffd, not a registration.
    public func savedActivity(for persistentIdentifier: String) async throws(HandoffError) -> UserActivity? {
        let response: HistoryResponse
        do {
            response = try await client.send(.history(persistentIdentifier: persistentIdentifier))
        } catch {
            throw HandoffError(error)
        }
        return response.entries.first.map { UserActivity(received: $0.activity.content) }
    }

    /// Reopens what a `handoff:` link names, as handoffctl open does: in the app that takes it
    /// here (this one, if it continues its type), from the device it was current on if it still
    /// is there, else from the history, else its web page. `environment`: the graphical
    /// session's variables for an app that is started (by default this process's).
    public func open(link: String, environment: [String: String] = ProcessInfo.processInfo.environment) async throws(HandoffError) -> OpenLinkResponse {
        do {
            return try await client.send(.openLink(OpenLinkRequest(link: link, environment: SessionEnvironment.pick(environment))))
        } catch {
            throw HandoffError(error)
        }
    }

    /// Deletes this app's saved activities of these contents on every device of the account:
    /// history entries, restoration activities, the current activity if it is one of them
    /// (Apple's `deleteSavedUserActivities(withPersistentIdentifiers:)`; docs/apps.md, "Deleting
    /// saved activities"). The app's are those of its types (`ownTypes`): another app's content
    /// with the same id stays. Devices away hear it when they are back.
    public func deleteSavedActivities(withPersistentIdentifiers ids: [String]) async throws(HandoffError) {
        guard !ids.isEmpty else { return }
        let types = try await ownTypesOrRefuse()
        try await deleteSaved(DeleteSavedRequest(persistentIdentifiers: ids, types: types))
    }

    /// Deletes every saved activity of this app's types on every device of the account (Apple's
    /// `deleteAllSavedUserActivities`).
    public func deleteAllSavedActivities() async throws(HandoffError) {
        try await deleteSaved(DeleteSavedRequest(types: try await ownTypesOrRefuse()))
    }

    /// This app's activity types: those it continues, and those of the activities it made in
    /// this run or had restored.
    private func ownTypesOrRefuse() async throws(HandoffError) -> [String] {
        await lockWindows()
        defer { unlockWindows() }
        let made = Set(windows.values.map(\.activityType)).union(restoredWindows.values.map(\.activityType))
        let types = Array(made.union(continuedTypes)).sorted()
        guard !types.isEmpty else {
            throw HandoffError(.refused(.invalidValue), "this app has no activity types yet to delete saved activities of; declare them in HandoffApp(continues:)")
        }
        return types
    }

    private func deleteSaved(_ request: DeleteSavedRequest) async throws(HandoffError) {
        do {
            _ = try await client.send(.deleteSaved(request))
        } catch {
            throw HandoffError(error)
        }
    }

    nonisolated func activityChanged(window: String) {
        changedWindows.withLock { _ = $0.insert(window) }
        changes.yield()
    }

    /// Hands handoffd `window`'s activity as it is now, or withdraws it; nothing when handoffd
    /// has it already. While `needsSave` is set, only the flag goes: the content follows at
    /// willSave (`saving`). Callers hold `windowLock`.
    /// Returns handoffd's advice on what it was given (a large activity).
    @discardableResult
    private func give(_ window: String, saving: Bool = false) async throws(HandoffError) -> [String] {
        guard let registration else { return [] }
        let before = given[window]
        guard let activity = windows[window], activity.eligible else {
            guard before != nil else { return [] }
            given[window] = nil
            try await call(registration) { _ = try await $0.send(.withdrawWindowActivity(window: window, registration: registration)) }
            return []
        }
        var content = saving ? activity.saved() : activity.content
        if content.needsSave, let before, before.activity == ObjectIdentifier(activity) {
            content = before.content
            content.needsSave = true
        }
        if !saving, let before, before.content == content { return before.warnings }
        var warnings: [String] = []
        try await call(registration) { warnings = try await $0.send(.setWindowActivity(content, window: window, registration: registration)).warnings }
        // Only once it is taken: refused, handoffd still has what it had.
        given[window] = (ObjectIdentifier(activity), content, warnings)
        return warnings
    }

    /// Changes made to the windows' activities, handed over as they come (the latest of each).
    private func giveChanges() async {
        for await _ in changed {
            let windows = changedWindows.withLock { pending in
                defer { pending.removeAll() }
                return pending.sorted()
            }
            for window in windows {
                await lockWindows()
                do {
                    try await give(window)
                } catch {
                    unlockWindows()
                    if let activity = self.windows[window] { await activity.delegate?.userActivity(activity, couldNotUpdate: error) }
                    continue
                }
                unlockWindows()
            }
        }
    }

    /// After registering again: every window's activity, then the focus, as the app left them.
    private func giveEverything() async {
        await lockWindows()
        defer { unlockWindows() }
        if let registration {
            for (window, declared) in conditions.sorted(by: { $0.key < $1.key }) {
                try? await call(registration) { _ = try await $0.send(.setActivationConditions(declared, window: window, registration: registration)) }
            }
        }
        for window in windows.keys.sorted() where window != focused { _ = try? await give(window) }
        if let focused, let registration {
            _ = try? await give(focused)
            try? await call(registration) { _ = try await $0.send(.focusWindow(focused, registration: registration)) }
        }
    }

    // MARK: Events

    private func handle(_ event: AppEvent, receiver: (any ContinuationReceiver)?) async {
        switch event.body {
        case .registered, .unknown:
            return
        case .willContinue(_, let type, let peer, let window):
            await receiver?.willContinueUserActivity(withType: type, from: peer.name, window: window)
        case .continue(let id, let activity, let peer, let window):
            await deliver(IncomingContinuation(id: id, activity: activity.content, device: peer.name, window: window, client: client), to: receiver)
        case .continueFailed(_, let type, let code, let reason):
            await receiver?.didFailToContinueUserActivity(withType: type, error: HandoffError(HandoffError.code(of: code), reason))
        case .willSave(let window, _, _):
            guard let activity = windows[window] else { return }
            await activity.delegate?.userActivityWillSave(activity)
            await lockWindows()
            do {
                try await give(window, saving: true)
                unlockWindows()
            } catch {
                unlockWindows()
                await activity.delegate?.userActivity(activity, couldNotUpdate: error)
            }
        case .wasContinued(let window, _, _):
            guard let activity = windows[window] else { return }
            await activity.delegate?.userActivityWasContinued(activity)
        case .streamRequested(let window, _, let streamID, _):
            let stream: ContinuationStream
            do {
                stream = ContinuationStream(try await client.pipe(.takeStream(streamID)), client: client)
            } catch {
                return  // the other app hears that the stream was refused
            }
            guard let activity = windows[window], let delegate = activity.delegate else {
                stream.close()
                return
            }
            await delegate.userActivity(activity, didReceive: stream)
        }
    }

    /// The continuation this process was started for, if it was: `willContinue`, then the
    /// activity, to `receiver` (handoffd handed it over already; the window is the app's).
    package static func takeLaunched(_ receiver: any ContinuationReceiver, environment: [String: String]) async {
        let launched: IncomingContinuation?
        do {
            launched = try IncomingContinuation.launched(environment: environment)
        } catch {
            await receiver.didFailToContinueUserActivity(withType: "", error: error)
            return
        }
        guard let launched else { return }
        await receiver.willContinueUserActivity(withType: launched.userActivity.activityType, from: launched.device, window: nil)
        do {
            _ = try await receiver.continueUserActivity(launched)
        } catch {
            // handoffd handed it over already: there is nobody to refuse it to but the app.
        }
    }

    /// Hands `continuation` to the receiver and answers handoffd with what it said — or, when it
    /// has not said within `continueDeadline`, refuses it for the receiver and stops receiving
    /// until that call returns (docs/handoffkit.md, "What differs").
    private func deliver(_ continuation: IncomingContinuation, to receiver: (any ContinuationReceiver)?) async {
        guard let registration else { return }
        guard let receiver else {
            try? await call(registration) {
                _ = try await $0.send(.answerContinuation(continuation.id, registration: registration, ContinuationAnswer(taken: false, reason: "\(self.appID) continues no activities")))
            }
            return
        }
        await withTaskGroup(of: ContinuationAnswer?.self) { group in
            group.addTask {
                do {
                    return ContinuationAnswer(taken: true, window: try await receiver.continueUserActivity(continuation))
                } catch {
                    return ContinuationAnswer(taken: false, reason: "\(error)")
                }
            }
            let deadline = receiverDeadline
            group.addTask {
                try? await QuietSleep.sleep(for: deadline)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            let answer = first ?? ContinuationAnswer(taken: false, reason: "\(appID) did not take the activity in time")
            do throws(HandoffError) {
                try await call(registration) { _ = try await $0.send(.answerContinuation(continuation.id, registration: registration, answer)) }
            } catch {
                // Too late (handoffd gave up waiting), or handoffd went away.
                if answer.taken { await receiver.didFailToContinueUserActivity(withType: continuation.userActivity.activityType, error: error) }
            }
            if first == nil {
                stopReceiving()
                await group.waitForAll()  // the receiver's call, whenever it returns
                resumeReceiving()
            }
        }
    }

    /// Registers again without the app's types: continuations are launched instead.
    private func stopReceiving() {
        hungCalls += 1
        if hungCalls == 1 { subscription?.close() }
    }

    private func resumeReceiving() {
        hungCalls -= 1
        if hungCalls == 0 { subscription?.close() }
    }

    // MARK: Plumbing

    private func lockWindows() async {
        guard windowsLocked else {
            windowsLocked = true
            return
        }
        await withCheckedContinuation { windowWaiters.append($0) }
    }

    private func unlockWindows() {
        if windowWaiters.isEmpty {
            windowsLocked = false
        } else {
            windowWaiters.removeFirst().resume()
        }
    }

    private static let notConnected = HandoffError(
        .handoffdNotRunning, "handoffd is not running (start it: systemctl --user start handoffd); HandoffKit hands this over once it is back"
    )

    /// A local-API call for `registration`. If handoffd no longer knows it (it restarted) or is
    /// gone, and it is still this app's registration, it is lost: `run` registers again.
    private func call(_ registration: UUID, _ body: (HandoffClient) async throws -> Void) async throws(HandoffError) {
        do {
            try await body(client)
        } catch let error as HandoffClientError {
            var gone = false
            switch error.code {
            case .api(.unknownRegistration), .daemonNotRunning: gone = true
            default: break
            }
            if gone, self.registration == registration { lost() }
            if case .api(.unknownRegistration) = error.code { throw Self.notConnected }
            throw HandoffError(error)
        } catch {
            throw HandoffError(.versionMismatch, "\(error)")
        }
    }
}
