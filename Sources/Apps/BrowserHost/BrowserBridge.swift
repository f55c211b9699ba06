#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffClient
import HandoffKit
import HandoffModel
import HandoffSystem

/// The host's work (docs/browser.md, "The host"): the extension's messages, in order, become a
/// HandoffKit app — one window per browser window, the focused window's page the device's
/// current activity — and what handoffd asks of that app (save the position, open a page)
/// becomes messages to the extension. It ends when the browser closes its end.
public actor BrowserBridge: ContinuationReceiver {
    /// How long the extension has to say where the user is on the page; past it the page goes
    /// as it was last saved (a save must fit in handoffd's second).
    package static let saveDeadline: Duration = .milliseconds(700)
    /// How long the extension has to open a page: less than HandoffKit gives a receiver.
    static let openDeadline: Duration = .milliseconds(3500)
    /// Opens waiting for the extension at once; more are refused (handoffd allows far fewer).
    static let maximumOpens = 16
    /// The popup's requests (offers, continue) running at once; more are refused.
    static let maximumRequests = 8

    private let send: @Sendable (HostMessage) -> Void
    private let socketPath: String?
    private let environment: [String: String]
    private var app: HandoffApp?
    /// Each browser window's page activity, and what it shows.
    private var windows: [String: (activity: UserActivity, page: ExtensionMessage.Page)] = [:]
    /// Pages of windows that are not focused: they become current when their window is focused.
    private var waiting: [String: ExtensionMessage.Page] = [:]
    private var delegates: [String: PageDelegate] = [:]
    /// Saves waiting for the extension's answer, by request number.
    private var saves: [Int: CheckedContinuation<Void, Never>] = [:]
    private var nextSave = 0
    private var opens: [UUID: CheckedContinuation<String, any Error>] = [:]
    private var requests = 0
    /// The popup's requests go to handoffd through it.
    private let client: HandoffClient
    /// The browser closed its end: nothing more is asked of it.
    private var ended = false

    /// How long this bridge waits for a save's answer (`saveDeadline`; tests wait longer).
    private let saveDeadline: Duration

    /// `send` writes a message to the browser; `socketPath` is handoffd's (nil: the user's).
    public init(socketPath: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment, send: @escaping @Sendable (HostMessage) -> Void) {
        self.init(socketPath: socketPath, environment: environment, saveDeadline: Self.saveDeadline, send: send)
    }

    package init(socketPath: String?, environment: [String: String], saveDeadline: Duration, send: @escaping @Sendable (HostMessage) -> Void) {
        self.saveDeadline = saveDeadline
        self.socketPath = socketPath
        self.environment = environment
        client = HandoffClient(socketPath: socketPath ?? HandoffPaths.defaultSocketPath(environment: environment), timeoutSeconds: 30)
        self.send = send
    }

    /// Serves `messages` (each a message the browser sent, or the reason the framing broke) until
    /// they end; the registration, and with it every page handed over, ends then too.
    public func serve(_ messages: AsyncStream<Result<[UInt8], NativeMessaging.FramingError>>) async {
        await withDiscardingTaskGroup { group in
            for await message in messages {
                let bytes: [UInt8]
                switch message {
                case .success(let received): bytes = received
                case .failure(let error):
                    send(.refused(reason: error.description))
                    endEverything()
                    group.cancelAll()
                    return
                }
                let decoded: ExtensionMessage
                switch Result(catching: { () throws(ExtensionMessage.Refusal) in try ExtensionMessage.decode(bytes) }) {
                case .success(let message): decoded = message
                case .failure(let refusal):
                    send(.refused(reason: refusal.description))
                    continue
                }
                if case .hello(let browser) = decoded {
                    guard app == nil else {
                        send(.refused(reason: "hello: already registered"))
                        continue
                    }
                    let app = HandoffApp(appID: browser.appID, continues: [PageActivity.type], socketPath: socketPath)
                    self.app = app
                    // The popup says whether pages go: as handoffd comes and goes, not only at the start.
                    group.addTask { [send] in
                        for await problem in app.registrationChanges { send(problem.map { .offline(reason: $0.description) } ?? .ready) }
                    }
                    group.addTask { await app.run(receiver: self) }
                    continue
                }
                guard let app else {
                    send(.refused(reason: "the first message is hello"))
                    continue
                }
                switch decoded {
                case .offers(let request), .continue(let request, _):
                    // Round trips to handoffd (and a continuation up to its deadline): beside the page messages.
                    guard requests < Self.maximumRequests else {
                        send(.continued(request: request, handler: nil, error: "too many requests at once; try again"))
                        continue
                    }
                    requests += 1
                    group.addTask {
                        await self.answer(decoded, request: request)
                        await self.requestEnded()
                    }
                default:
                    await handle(decoded, app: app)
                }
            }
            // Before the group waits for HandoffKit's run, which waits for these.
            endEverything()
            group.cancelAll()
        }
    }

    /// The browser is gone: nobody answers what is waiting for it.
    private func endEverything() {
        for waiter in saves.values { waiter.resume() }
        saves.removeAll()
        for (_, waiter) in opens { waiter.resume(throwing: BrowserBridgeError("the browser closed")) }
        opens.removeAll()
        ended = true
    }

    private func requestEnded() { requests -= 1 }

    private func handle(_ message: ExtensionMessage, app: HandoffApp) async {
        switch message {
        case .hello, .offers, .continue: return
        case .page(let window, let page, let focused):
            // The same page: only its window's focus changed, which `focus` (sent first) told.
            if let shown = windows[window], shown.page == page { return }
            guard focused else {
                // Not current; it becomes so when its window is focused.
                waiting[window] = page
                if let shown = windows.removeValue(forKey: window) { try? await shown.activity.resignCurrent() }
                return
            }
            await show(page, in: window, app: app)
        case .clear(let window):
            waiting[window] = nil
            delegates[window] = nil
            if let shown = windows.removeValue(forKey: window) { await shown.activity.invalidate() }
        case .focus(let window):
            if let page = waiting.removeValue(forKey: window) {
                await show(page, in: window, app: app)
            } else {
                try? await app.focus(window: window)
            }
        case .close(let window):
            waiting[window] = nil
            delegates[window] = nil
            windows[window] = nil
            try? await app.close(window: window)
        case .saved(let window, let request, let page, let position):
            // A late answer (past the deadline) is for a save that went without it.
            guard let waiter = saves.removeValue(forKey: request) else { return }
            if let shown = windows[window], shown.page.url == page.url {
                shown.activity.userInfo = PageActivity.content(page, position: position).userInfo
            }
            waiter.resume()
        case .opened(let id, let window, let error):
            guard let waiter = opens.removeValue(forKey: id) else { return }
            if let window {
                waiter.resume(returning: window)
            } else {
                waiter.resume(throwing: BrowserBridgeError(error ?? "the browser did not open the page"))
            }
        }
    }

    /// A new activity for `page`, made current: a page is a new activity, as on a Mac, so the
    /// other devices see its title and address at once (a changed `needsSave` activity would
    /// send only the flag).
    private func show(_ page: ExtensionMessage.Page, in window: String, app: HandoffApp) async {
        waiting[window] = nil
        let previous = windows[window]
        let activity = UserActivity(activityType: PageActivity.type, app: app, window: window)
        let content = PageActivity.content(page, position: nil, keeping: previous.map { PageActivity.content(of: $0.activity) })
        activity.title = content.title
        activity.webpageAddress = content.webpageURL
        activity.targetContentIdentifier = content.targetContentIdentifier
        activity.userInfo = content.userInfo
        activity.needsSave = true
        let delegate = PageDelegate(bridge: self, window: window)
        activity.delegate = delegate
        delegates[window] = delegate
        windows[window] = (activity, page)
        do {
            try await activity.becomeCurrent()
        } catch {
            // handoffd is not running: HandoffKit hands it over once it is back. Anything else
            // (handoffd refused the page) is for the extension's console.
            if error.code != .handoffdNotRunning { send(.refused(reason: "handoffd refused the page: \(error.description)")) }
        }
        if let previous { await previous.activity.invalidate() }
    }

    /// What `window`'s page activity carries now (where the user was at the last save).
    package func pageUserInfo(window: String) -> [String: ActivityValue]? {
        windows[window]?.activity.userInfo
    }

    // MARK: What handoffd asks

    /// Another device is about to take `window`'s page: ask the extension where the user is.
    package func save(window: String) async {
        guard !ended, windows[window] != nil else { return }
        nextSave = nextSave == Int(Int32.max) ? 1 : nextSave + 1
        let request = nextSave
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                try? await QuietSleep.sleep(for: self.saveDeadline)
                // Also when cancelled: answered already (nothing to end), or the browser is gone.
                await self.endSave(request)
            }
            // The waiter is there before the question goes, so no answer comes too early.
            await withCheckedContinuation { waiter in
                saves[request] = waiter
                send(.save(window: window, request: request))
            }
            group.cancelAll()
        }
    }

    private func endSave(_ request: Int) {
        saves.removeValue(forKey: request)?.resume()
    }

    public func continueUserActivity(_ continuation: IncomingContinuation) async throws -> String {
        guard let opening = PageActivity.opening(PageActivity.content(of: continuation.userActivity)) else { throw BrowserBridgeError("the activity has no http(s) page to open") }
        guard !ended else { throw BrowserBridgeError("the browser closed") }
        guard opens.count < Self.maximumOpens else { throw BrowserBridgeError("the browser is busy opening other pages") }
        let id = continuation.id
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try? await QuietSleep.sleep(for: Self.openDeadline)
                // Also when cancelled: answered already (nothing to end), or the browser is gone.
                await self.endOpen(id, BrowserBridgeError("the browser did not open the page in time"))
            }
            defer { group.cancelAll() }
            return try await withCheckedThrowingContinuation { waiter in
                opens[id] = waiter
                send(.open(id: id, url: opening.url, title: opening.title, position: opening.position, device: continuation.device))
            }
        }
    }

    private func endOpen(_ id: UUID, _ error: BrowserBridgeError) {
        opens.removeValue(forKey: id)?.resume(throwing: error)
    }

    // MARK: The popup

    private func answer(_ message: ExtensionMessage, request: Int) async {
        switch message {
        case .offers:
            do {
                let offers = try await client.send(.offers).offers
                send(.offers(request: request, offers: offers.map {
                    HostMessage.OfferItem(peer: $0.peer.id.description, device: $0.peer.name, title: $0.activity.title, type: $0.activity.type, target: $0.target.name)
                }))
            } catch {
                send(.continued(request: request, handler: nil, error: error.description))
            }
        case .continue(_, let peer):
            do {
                let response = try await client.send(.continueActivity(ContinueRequest(peer: peer, delivery: .dispatch, environment: SessionEnvironment.pick(environment))))
                send(.continued(request: request, handler: response.delivered?.handler ?? response.peerName, error: nil))
            } catch {
                send(.continued(request: request, handler: nil, error: error.description))
            }
        default: return
        }
    }
}

/// What the host could not do for the browser, as the user is told it.
struct BrowserBridgeError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A page activity's delegate: willSave asks the extension for the position.
final class PageDelegate: UserActivityDelegate {
    let bridge: BrowserBridge
    let window: String

    init(bridge: BrowserBridge, window: String) {
        self.bridge = bridge
        self.window = window
    }

    func userActivityWillSave(_ userActivity: UserActivity) async {
        await bridge.save(window: window)
    }

    /// Saving cleared `needsSave`, and the extension does not report scrolling: set it again, so
    /// that the next device to take the page asks for where the user is then.
    func userActivityWasContinued(_ userActivity: UserActivity) async {
        userActivity.needsSave = true
    }
}
