#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonCore
import DaemonStreams
import HandoffAPI
import HandoffModel
import Logging

/// Registered apps and their windows (docs/apps.md), kept in `AppWindows`, and what follows from
/// them: after each change the registry hears which window has focus and what it shows, and
/// decides what is current (`CurrentActivity`: a focus gives the windows the say, a request
/// takes it back); windows' state-restoration activities are kept (`RestorationStore`) and
/// handed back at registration; continuations go to the running app that takes them.
package actor AppRegistry {
    private let registry: ActivityRegistry
    private let restoration: RestorationStore
    private let attachments: Attachments
    private let limits: ActivityLimits
    private let logger: Logger
    private var windows = AppWindows()
    /// Each registration's NDJSON lines (`POST /v1/apps`), until it ends.
    private var streams: [AppWindows.Registration: AsyncStream<AppEvent>.Continuation] = [:]
    /// The time events are stamped with and window activities expire by.
    private let clock: any DaemonClock
    /// How many times the registry was told about the windows (`follow`).
    private var followed: UInt64 = 0
    /// Continuations handed to a running app, waiting for its answer (nil: the app quit).
    private var waiting: [UUID: (registration: AppWindows.Registration, answer: Once<ContinuationAnswer?>)] = [:]
    /// Continuations a running app was told `willContinue` for, before their activity arrived.
    private var announced: [UUID: (registration: AppWindows.Registration, type: String)] = [:]
    /// How long an app has to take a continuation before it counts as hung.
    private let answerDeadline: Duration

    /// Bounds on what any process of the user can make us keep.
    package static let registrationsAtMost = 64
    package static let windowsPerRegistrationAtMost = 256
    package static let typesPerAppAtMost = 64
    /// The windows' activities of one registration, encoded, together.
    package static let activityBytesPerRegistrationAtMost = 512 * 1024

    package init(
        registry: ActivityRegistry, restoration: RestorationStore, attachments: Attachments, limits: ActivityLimits, answerDeadline: Duration = Deadlines().appAnswer,
        logger: Logger
    ) {
        self.registry = registry
        self.clock = registry.clock
        self.restoration = restoration
        self.attachments = attachments
        self.limits = limits
        self.answerDeadline = answerDeadline
        self.logger = logger
    }

    // MARK: Apps

    /// An app starts (`POST /v1/apps`): its events, the first of which names its registration
    /// and hands back its windows' restoration activities. The stream ends when the app is
    /// unregistered; whoever reads it unregisters the app when its reader leaves.
    package func register(_ request: AppRegistration) async throws(DaemonError) -> (AppWindows.Registration, AsyncStream<AppEvent>) {
        let (registration, restored) = try await register(appID: request.appID, continues: request.continues, webDomains: request.webDomains)
        let (stream, continuation) = AsyncStream.makeStream(of: AppEvent.self, bufferingPolicy: .bufferingOldest(256))
        let windows = restored.sorted { $0.key < $1.key }.map { RestoredWindow(window: $0.key, activity: $0.value) }
        continuation.yield(AppEvent(at: clock.now(), .registered(registration: registration, restored: windows, answerWithin: answerDeadline)))
        streams[registration] = continuation
        return (registration, stream)
    }

    /// An app starts: it continues `continues`; the answer has its registration and its windows'
    /// restoration activities, by window.
    package func register(appID: String, continues: [String], webDomains: [String] = []) async throws(DaemonError) -> (AppWindows.Registration, restored: [String: Activity]) {
        try RestorationStore.check(appID: appID)
        guard windows.apps.count < Self.registrationsAtMost else {
            throw DaemonError(.tooManyApps, "\(Self.registrationsAtMost) apps are registered already; one must quit first")
        }
        guard continues.count <= Self.typesPerAppAtMost else {
            throw DaemonError(.badRequest, "an app declares at most \(Self.typesPerAppAtMost) activity types")
        }
        for type in continues {
            do {
                try ActivityContent.validateType(type)
            } catch {
                throw DaemonError(error)
            }
        }
        guard webDomains.count <= Self.typesPerAppAtMost else {
            throw DaemonError(.badRequest, "an app claims at most \(Self.typesPerAppAtMost) web domains")
        }
        var claims: [WebDomainClaim] = []
        for text in webDomains {
            guard let claim = WebDomainClaim(text) else {
                throw DaemonError(.badRequest, "\(Self.oneLine(text)) is not a web domain an app can claim (e.g. example.com or *.example.org; *.com claims nothing)")
            }
            claims.append(claim)
        }
        let registration = UUID()
        windows.register(registration, appID: appID, continues: Set(continues), webDomains: claims)
        logger.info("app registered", metadata: ["app": "\(appID)", "registration": "\(registration.lowercasedString)", "types": "\(continues.count)"])
        return (registration, await restoration.restoration(of: appID))
    }

    /// The app quit (its registration's connection ended): its windows' activities go.
    package func unregister(_ registration: AppWindows.Registration) async {
        streams.removeValue(forKey: registration)?.finish()
        for (id, entry) in waiting where entry.registration == registration {
            waiting[id] = nil
            entry.answer.settle(nil)
        }
        guard let app = windows.apps[registration] else { return }
        windows.unregister(registration)
        logger.info("app left", metadata: ["app": "\(app.appID)", "registration": "\(registration.lowercasedString)"])
        await follow(focusChanged: false)
    }

    // MARK: Windows

    /// Sets `window`'s activity (a new one, or an update of the one it has: same id). It is the
    /// device's current activity while the window has focus. Returns its id and the advice on
    /// its size (`ActivityLimits.warnings`).
    package func setActivity(
        _ content: ActivityContent, window: String, of registration: AppWindows.Registration
    ) async throws(DaemonError) -> (id: UUID, warnings: [String]) {
        let app = try windowOK(window, registration)
        try admit(window, in: app)
        let existing = app.windows[window]?.activity
        let id = existing.map { $0.content.type == content.type ? $0.id : UUID() } ?? UUID()
        let size: Int
        do {
            let now = clock.now()
            size = try Activity(id: id, content: content, createdAt: now).validate(now: now, limits: limits)
        } catch {
            throw DaemonError(error)
        }
        let others = app.windows.filter { $0.key != window }.values.compactMap(\.activity?.encodedSize)
        guard others.reduce(size, +) <= Self.activityBytesPerRegistrationAtMost else {
            throw DaemonError(
                .tooManyWindows, "an app's windows' activities add up to at most \(Self.activityBytesPerRegistrationAtMost / 1024) KiB; keep them small"
            )
        }
        windows.setActivity(WindowActivity(id: id, content: content, encodedSize: size), of: window, in: registration)
        await follow(focusChanged: false)
        return (id, ActivityLimits.warnings(encodedSize: size))
    }

    package func withdrawActivity(window: String, of registration: AppWindows.Registration) async throws(DaemonError) {
        _ = try windowOK(window, registration)
        windows.setActivity(nil, of: window, in: registration)
        await follow(focusChanged: false)
    }

    /// The user focused `window`: its activity, if it has one, is the device's current one.
    package func focus(window: String, of registration: AppWindows.Registration) async throws(DaemonError) {
        try admit(window, in: try windowOK(window, registration))
        windows.focus(window, in: registration)
        await follow(focusChanged: true)
    }

    /// The user closed `window`: its activity goes, and its restoration activity — unless
    /// `keepingRestoration` (the app saved the one it wants for it just before: a scene's
    /// `stateRestorationActivity`, taken as it disconnects).
    package func close(window: String, of registration: AppWindows.Registration, keepingRestoration: Bool = false) async throws(DaemonError) {
        let app = try windowOK(window, registration)
        windows.close(window, in: registration)
        // Closed whatever comes of its restoration activity: the device's current activity
        // follows first.
        await follow(focusChanged: false)
        if !keepingRestoration { try await restoration.remove(appID: app.appID, window: window) }
    }

    /// Keeps `content` as `window`'s state-restoration activity, for the app's next registration.
    package func saveRestoration(_ content: ActivityContent, window: String, of registration: AppWindows.Registration) async throws(DaemonError) {
        let app = try windowOK(window, registration)
        try await restoration.save(Activity(content: content, createdAt: clock.now()), appID: app.appID, window: window)
    }

    package func removeRestoration(window: String, of registration: AppWindows.Registration) async throws(DaemonError) {
        let app = try windowOK(window, registration)
        try await restoration.remove(appID: app.appID, window: window)
    }

    /// Which running app a continuation goes to (docs/apps.md).
    package func receiver(for type: String, target: String?) -> AppWindows.Receiver {
        windows.receiver(for: type, target: target)
    }

    /// What the running apps claim (for `doctor`), each turned off when in `off`.
    package func webDomainClaims(off: Set<WebDomainClaim>) -> [WebDomainClaimStatus] {
        windows.apps.values.sorted { $0.appID < $1.appID }.flatMap { app in
            app.webDomains.map {
                WebDomainClaimStatus($0, app: app.appID, running: true, off: off)
            }
        }
    }

    /// The id of the running app an activity of `type` would go to, if any.
    package func receivingApp(for type: String) -> String? {
        switch windows.receiver(for: type, target: nil) {
        case .window(let registration, _), .app(let registration): windows.apps[registration]?.appID
        case .launch: nil
        }
    }

    // MARK: Continuations into running apps

    /// Hands `activity` to the running app that takes it (docs/apps.md, "Where a continuation
    /// goes"): `willContinue`, then `continue`, then its answer. Nil when no running app
    /// continues its type (the caller starts one). An app that does not answer within the
    /// deadline is taken for hung: the continuation fails and the app is no longer a receiver
    /// (its registration ends), so the next one goes elsewhere; one that quits first fails it too.
    /// `claimed`: `activity` is a web page (`org.handoff.browsing-web`) for the app that claims
    /// its host, except claims the user turned off.
    package func deliver(
        _ activity: Activity, continuationID: UUID, from peer: LocalEvent.PeerRef, claimed: (host: String, off: Set<WebDomainClaim>)? = nil
    ) async throws(DaemonError) -> DeliveryOutcome? {
        let told = announced.removeValue(forKey: continuationID)?.registration
        let registration: AppWindows.Registration?
        let window: String?
        let receiver = claimed.map { windows.receiver(forWebHost: $0.host, off: $0.off) } ?? windows.receiver(for: activity.type, target: activity.content.targetContentIdentifier)
        switch receiver {
        case .launch: (registration, window) = (nil, nil)
        case .app(let r): (registration, window) = (r, nil)
        case .window(let r, let w): (registration, window) = (r, w)
        }
        if let told, told != registration {
            // It goes elsewhere (another app's window shows its target, or the app told first
            // no longer takes its type): the one told first hears so.
            tell(told, .continueFailed(continuationID: continuationID, type: activity.type, code: .handlerFailed, reason: "it went to another app"))
        }
        guard let registration, let stream = streams[registration], let appID = windows.apps[registration]?.appID else { return nil }
        let answer = Once<ContinuationAnswer?>()
        waiting[continuationID] = (registration, answer)
        var events = [AppEvent(at: clock.now(), .continue(continuationID: continuationID, activity: activity, peer: peer, window: window))]
        if told != registration {
            events.insert(AppEvent(at: clock.now(), .willContinue(continuationID: continuationID, type: activity.type, peer: peer, window: window)), at: 0)
        }
        guard events.allSatisfy({ if case .enqueued = stream.yield($0) { true } else { false } }) else {
            // The app is so far behind its events that it would never see this one: it no
            // longer receives, and the continuation goes the way it would without it.
            waiting[continuationID] = nil
            logger.warning("a running app fell too far behind its events; it no longer receives", metadata: ["app": "\(appID)"])
            await unregister(registration)
            return nil
        }
        // An answer that came in while the wait was ending still counts: both happen on this
        // actor, so once the entry is gone here no later answer is taken.
        var answered = await answer.value(within: answerDeadline)
        if case .none = answered { answered = answer.settled }
        waiting[continuationID] = nil
        switch answered {
        case .none:
            if Task.isCancelled {
                throw DaemonError(.internalError, "handoffd is stopping; \(appID) had not taken the activity yet")
            }
            logger.warning("a running app did not take a continuation in time; it no longer receives", metadata: ["app": "\(appID)"])
            await unregister(registration)
            throw DaemonError(.timeout, "\(appID) did not take the activity within \(answerDeadline.components.seconds) s; it no longer receives continuations")
        case .some(.none):
            throw DaemonError(.handlerFailed, "\(appID) stopped receiving (it quit, or did not answer in time) before it took the activity")
        case .some(.some(let reply)) where !reply.taken:
            throw DaemonError(.handlerFailed, "\(appID) did not take the activity" + (reply.reason.map { ": " + Self.oneLine($0) } ?? ""))
        case .some(.some(let reply)):
            return DeliveryOutcome(kind: .app, handler: appID, command: [], window: reply.window ?? window)
        }
    }

    /// What an attached app hears about its activity, on `window`'s app's registration stream.
    /// Called by the registry, in the step that made the activity current: it takes what it
    /// needs from the desk beforehand.
    private static func attachWindow(
        _ window: String, activity: UUID, servingStreams: Bool, stream: AsyncStream<AppEvent>.Continuation?, attachments: Attachments, clock: any DaemonClock
    ) -> Int {
        return attachments.attachWindow(activityID: activity, serveStreams: servingStreams) { body in
            let event: AppEvent.Body
            switch body {
            case .willSave(let id, let peerID, let peerName):
                event = .willSave(window: window, activityID: id, peer: LocalEvent.PeerRef(id: peerID, name: peerName))
            case .wasContinued(let id, let peerID, let peerName):
                event = .wasContinued(window: window, activityID: id, peer: LocalEvent.PeerRef(id: peerID, name: peerName))
            case .streamRequested(let streamID, let peerID, let peerName):
                event = .streamRequested(window: window, activityID: activity, streamID: streamID, peer: LocalEvent.PeerRef(id: peerID, name: peerName))
            case .attached, .ended, .unknown:
                return false
            }
            guard let stream, case .enqueued = stream.yield(AppEvent(at: clock.now(), event)) else { return false }
            return true
        }
    }

    /// The user asked to continue an activity of `type`: the running app that would take it
    /// hears `willContinue` at once (docs/apps.md) — with the window that takes it when the
    /// activity's `target` is known already (the activity is here, or the other device's notice
    /// said it); else only the type is.
    package func willContinue(continuationID: UUID, type: String, target: String?, targetKnown: Bool, from peer: LocalEvent.PeerRef) {
        let registration: AppWindows.Registration
        var window: String?
        switch windows.receiver(for: type, target: target) {
        case .launch: return
        case .app(let r): registration = r
        case .window(let r, let w): (registration, window) = (r, w)
        }
        // The target not known, neither is the window.
        if !targetKnown { window = nil }
        guard announced.count < Self.registrationsAtMost * 4 else { return }
        if tell(registration, .willContinue(continuationID: continuationID, type: type, peer: peer, window: window)) {
            announced[continuationID] = (registration, type)
        }
    }

    /// Sets (nil: clears) what `window` declares it takes (`ActivationConditions`).
    package func setConditions(_ conditions: ActivationConditions?, window: String, of registration: AppWindows.Registration) throws(DaemonError) {
        let app = try windowOK(window, registration)
        if let problem = conditions?.problem { throw DaemonError(ActivityError(.invalidValue, "activation conditions: \(problem)")) }
        try admit(window, in: app)
        windows.setConditions(conditions, of: window, in: registration)
    }

    /// A continuation failed before it was handed over: the app told `willContinue` hears why.
    package func failed(continuationID: UUID, code: APIErrorCode, reason: String) {
        guard let told = announced.removeValue(forKey: continuationID) else { return }
        tell(told.registration, .continueFailed(continuationID: continuationID, type: told.type, code: code, reason: Self.oneLine(reason)))
    }

    @discardableResult
    private func tell(_ registration: AppWindows.Registration, _ body: AppEvent.Body) -> Bool {
        guard let stream = streams[registration], case .enqueued = stream.yield(AppEvent(at: clock.now(), body)) else { return false }
        return true
    }

    /// An app's words in a message for people: one line, 200 characters at most.
    static func oneLine(_ text: String) -> String {
        String(String(text.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : Character($0) }).prefix(200))
    }

    /// The app's answer to a continuation it was handed.
    package func answer(_ reply: ContinuationAnswer, continuationID: UUID, from registration: AppWindows.Registration) throws(DaemonError) {
        guard let entry = waiting[continuationID], entry.registration == registration else {
            throw DaemonError(.unknownContinuation, "continuation \(continuationID.lowercasedString) is not waiting for this app's answer (it timed out, or went elsewhere)")
        }
        if reply.taken, let window = reply.window { try RestorationStore.check(window: window) }
        waiting[continuationID] = nil
        entry.answer.settle(reply)
    }

    /// A window the app does not have yet is one more: within the bound?
    private func admit(_ window: String, in app: AppWindows.App) throws(DaemonError) {
        if app.windows[window] == nil, app.windows.count >= Self.windowsPerRegistrationAtMost {
            throw DaemonError(.tooManyWindows, "an app has at most \(Self.windowsPerRegistrationAtMost) windows here")
        }
    }

    private func windowOK(_ window: String, _ registration: AppWindows.Registration) throws(DaemonError) -> AppWindows.App {
        guard let app = windows.apps[registration] else {
            throw DaemonError(.unknownRegistration, "no app is registered as \(registration.lowercasedString) (it quit, or handoffd restarted): register again")
        }
        try RestorationStore.check(window: window)
        return app
    }

    // MARK: The device's current activity

    /// Tells the registry which window has focus now and what it shows; the registry decides
    /// what is current (docs/apps.md) and attaches the window's app to its activity when it
    /// becomes current. A window's activity whose expiry passed counts as none (and is dropped).
    /// The windows as they are now go with each call, numbered: should two calls reach the
    /// registry out of order, the older is ignored, so the last word is the windows' last state.
    private func follow(focusChanged: Bool) async {
        var focused: CurrentActivity.FocusedWindow?
        if let (registration, window) = windows.focusedWindow {
            var activity = windows.apps[registration]?.windows[window]?.activity
            if let expiry = activity?.content.expirationDate, expiry <= clock.now() {
                windows.setActivity(nil, of: window, in: registration)
                activity = nil
            }
            focused = CurrentActivity.FocusedWindow(registration: registration, window: window, activity: activity.map { ($0.id, $0.content) })
        }
        let (attachments, clock) = (attachments, clock)
        let attachment = focused.map { f in
            let stream = streams[f.registration]
            return ActivityRegistry.WindowAttachment(
                attach: { id, serves in
                    Self.attachWindow(f.window, activity: id, servingStreams: serves, stream: stream, attachments: attachments, clock: clock)
                },
                detach: { attachments.detach($0) }
            )
        }
        followed += 1
        await registry.followWindows(focused, focusChanged: focusChanged, sequence: followed, attachment: attachment)
    }
}

extension DaemonError.Code {
    /// The app (started, or running) could not take the activity.
    package static let handlerFailed = Self(.handlerFailed)
    package static let unknownRegistration = Self(.unknownRegistration)
    package static let tooManyApps = Self(.tooManyApps)
}
