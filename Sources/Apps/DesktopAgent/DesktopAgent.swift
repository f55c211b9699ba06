import DesktopClipboard
import DesktopCore
import DesktopDocuments
import DesktopJoinDialog
import DesktopNotifications
import DesktopTray
import HandoffAPI
import HandoffClient
import HandoffDBus
import HandoffModel
import HandoffSystem
import Logging
import Synchronization
import SessionClipboard

/// What `handoff-desktop` does in a graphical session (docs/desktop.md): it follows handoffd's
/// events, shows what the other devices are doing as notifications (`NotificationPlanner`
/// decides, this carries it out), and continues the activity whose notification the user
/// chooses. It runs until the session bus goes away or its task is cancelled; handoffd may come
/// and go meanwhile (it reconnects, and meanwhile the notifications stay as they were). It also
/// serves apps in any language over D-Bus (`DesktopInterface`, docs/dbus.md), and shows a status
/// icon with the devices and a menu (`TrayAgent`).
package struct DesktopAgent: Sendable {
    let bus: DBusConnection
    let client: HandoffClient
    /// The session's variables, for the app a continuation starts (`SessionEnvironment`).
    let session: [String: String]
    /// What the join dialog runs with: the session's variables and where to find programs.
    let dialogEnvironment: [String: String]
    let options: Options
    let logger: Logger

    /// Where the agent keeps what it says about itself, and how long it waits for a panel.
    package typealias Options = AgentOptions

    package init(bus: DBusConnection, client: HandoffClient, session: [String: String], options: Options, logger: Logger) {
        self.bus = bus
        self.client = client
        self.session = SessionEnvironment.pick(session)
        self.dialogEnvironment = session.filter { SessionEnvironment.names.contains($0.key) || ["PATH", "HOME", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_DATA_DIRS"].contains($0.key) }
        self.options = options
        self.logger = logger
    }

    enum Input: Sendable {
        /// What the other devices are doing may have changed: ask handoffd.
        case offersChanged
        case reply(NotificationServer.Reply)
        /// The notification server changed hands (new owner; "" for none).
        case serverChanged(String)
        case tick
        /// A continuation the user asked for failed.
        case failed(Offer, String)
        /// The user chose this offer in the status icon's menu.
        case continueOffer(Offer)
    }

    /// The agent's well-known name: one agent per session (a second one stops, saying so).
    package static let busName = "org.handoff.Desktop"

    /// Runs until the session bus goes away or the task is cancelled; throws only if it cannot
    /// start (another agent has the session, or the bus refuses what it needs).
    package func run() async throws(DBusError) {
        let server = NotificationServer(bus: bus)
        let signals = try await server.signals()
        let owners = try await server.ownerChanges()
        // Who may speak for the notification server: its owner, read here and kept up to date by
        // `drive`; what anyone else sends is dropped before it queues.
        let owner = SharedName(await server.owner() ?? "")
        let interface = DesktopInterface(bus: bus, client: client, logger: logger)
        let listening = try await interface.listen()
        let icon = StatusIcon(bus: bus, menu: TrayMenu(TrayFacts(), clock: TrayAgent.timeOfDay))
        let iconListening = try await icon.listen()
        let clipboard = connectClipboard()
        var options = self.options
        options.clipboard = clipboard?.backend.name
        let tray = TrayAgent(client: client, server: server, icon: icon, dialog: JoinDialog(environment: dialogEnvironment), options: options, logger: logger)
        // Unbounded: what handoffd's events add is one refresh at a time (`RefreshRequests`); the
        // rest are the user's clicks and what they started.
        let (trayInbox, trayPost) = AsyncStream.makeStream(of: TrayAgent.Input.self)
        let refreshes = RefreshRequests(trayPost)
        // Last: once the name is ours, the agent is ready (tests and scripts wait for it).
        try await bus.requestName(Self.busName)
        logger.info("ready", metadata: ["bus-name": "\(Self.busName)"])
        let (inbox, post) = AsyncStream.makeStream(of: Input.self, bufferingPolicy: .bufferingNewest(256))
        let alarm = Alarm()
        // Unbounded: each paste asked of the session must be answered (or the app waits), and what
        // comes is bounded where it is made (the backend's pending pastes, handoffd's events).
        let (clipboardInbox, clipboardPost) = AsyncStream.makeStream(of: ClipboardAgent.Input.self)
        await withDiscardingTaskGroup { group in
            group.addTask {
                await bus.closed()
                if !Task.isCancelled { logger.notice("the session bus went away") }
                post.finish()
                trayPost.finish()
                clipboardPost.finish()
            }
            group.addTask {
                await followHandoffd(post, tray: trayPost, refreshes: refreshes, switched: interface.handoffChanged) { input, changed in
                    // Apps hear of changes, not of the agent (re)connecting.
                    if changed, case .daemon(let state) = input { interface.clipboardChanged(state) }
                    clipboardPost.yield(input)
                }
            }
            let clipboardNote = SharedNote()
            if let clipboard {
                group.addTask { await clipboard.run(clipboardInbox, post: clipboardPost) }
            } else {
                let keeper = ClipboardKeeper(client: client, environment: dialogEnvironment, timeout: .seconds(10), logger: logger)
                let notes = ClipboardNotes(keeper: keeper, server: server, shown: clipboardNote, logger: logger)
                group.addTask { await notes.run(clipboardInbox, post: clipboardPost) }
            }
            group.addTask {
                await tray.run(trayInbox, post: trayPost, refreshes: refreshes, listening: iconListening) { post.yield(.continueOffer($0)) }
            }
            group.addTask {
                for await signal in signals where signal.sender == owner.value {
                    if let reply = NotificationServer.reply(from: signal) { post.yield(.reply(reply)) }
                }
            }
            group.addTask {
                for await change in owners where change.sender == "org.freedesktop.DBus" {
                    let new = change.arguments.dropFirst(2).first?.stringValue ?? ""
                    owner.value = new
                    post.yield(.serverChanged(new))
                    trayPost.yield(.notificationServer(!new.isEmpty))
                }
            }
            group.addTask { await alarm.run { post.yield(.tick) } }
            group.addTask { await interface.serve(listening) }
            group.addTask { await RecentDocuments(client: client, environment: dialogEnvironment, logger: logger).run() }
            await drive(inbox, server: server, alarm: alarm, post: post, tray: trayPost, clipboard: (clipboardPost, clipboardNote))
            trayPost.finish()
            clipboardPost.finish()
            group.cancelAll()
        }
    }

    /// The session's clipboard (docs/clipboard.md): a Wayland compositor's with data-control, else
    /// the X server's (Xwayland's too, which then reaches X11 apps only), else none.
    private func connectClipboard() -> ClipboardAgent? {
        var reasons: [String] = []
        if let wayland = session["WAYLAND_DISPLAY"], !wayland.isEmpty {
            do throws(ClipboardBackendError) {
                let backend = try WaylandClipboard.connect(display: wayland, maximumSize: ClipboardAgent.readLimit)
                return ClipboardAgent(client: client, backend: backend, environment: dialogEnvironment, logger: logger)
            } catch {
                reasons.append(error.description)
            }
        }
        if let display = session["DISPLAY"], !display.isEmpty {
            do throws(ClipboardBackendError) {
                let backend = try X11Clipboard.connect(display: display, maximumSize: ClipboardAgent.readLimit)
                return ClipboardAgent(client: client, backend: backend, environment: dialogEnvironment, logger: logger)
            } catch {
                reasons.append(error.description)
            }
        }
        logger.notice("the clipboard is not shared from this session", metadata: ["why": "\(reasons.isEmpty ? "no display" : reasons.joined(separator: "; "))"])
        return nil
    }

    /// handoffd's events, for as long as the agent runs: each change of a device is a reason to
    /// look at the offers again, and so is each (re)connection; the status icon also follows the
    /// device's own status (account, switch, devices inviting nearby); the clipboard its own.
    private func followHandoffd(
        _ post: AsyncStream<Input>.Continuation, tray: AsyncStream<TrayAgent.Input>.Continuation, refreshes: RefreshRequests,
        switched: @escaping @Sendable (Bool) -> Void, clipboard: @escaping @Sendable (ClipboardAgent.Input, _ changed: Bool) -> Void
    ) async {
        // The switch as handoffd has it: D-Bus apps following the `Handoff` property hear changes.
        let client = client
        let readSwitch = { @Sendable () async in if let on = try? await client.send(.settings).handoff { switched(on) } }
        var failures = 0
        while !Task.isCancelled {
            do throws(HandoffClientError) {
                let events = try await client.subscribe(.events)
                if failures > 0 { logger.info("handoffd is back") }
                failures = 0
                post.yield(.offersChanged)
                refreshes.request()
                await readSwitch()
                if let state = try? await client.send(.clipboard) { clipboard(.daemon(state), false) }
                let ended = await withTaskCancellationHandler { () async -> HandoffClientError? in
                    do throws(HandoffClientError) {
                        while let event = try await events.next() {
                            switch event.body {
                            case .peerChanged, .peerGone:
                                post.yield(.offersChanged)
                                refreshes.request()
                            case .statusChanged:
                                refreshes.request()
                                await readSwitch()
                            case .clipboardChanged(let state):
                                clipboard(.daemon(state), true)
                            default: break
                            }
                        }
                        return nil
                    } catch {
                        return error
                    }
                } onCancel: {
                    events.close()
                }
                if let ended { throw ended }
            } catch {
                if failures == 0 { logger.notice("handoffd is not reachable; trying again", metadata: ["error": "\(error)"]) }
            }
            // Its events ended (it stopped), or it cannot be reached: once per absence.
            if failures == 0 { tray.yield(.daemonGone) }
            let delay = AgentOptions.reconnectDelays[min(failures, AgentOptions.reconnectDelays.count - 1)]
            failures += 1
            guard (try? await QuietSleep.sleep(for: delay)) != nil else { return }
        }
    }

    /// `clipboard`: where replies about the clipboard's notification (`ClipboardNotes`) go.
    private func drive(
        _ inbox: AsyncStream<Input>, server: NotificationServer, alarm: Alarm, post: AsyncStream<Input>.Continuation, tray: AsyncStream<TrayAgent.Input>.Continuation,
        clipboard: (post: AsyncStream<ClipboardAgent.Input>.Continuation, note: SharedNote)
    ) async {
        var planner = NotificationPlanner()
        var capabilities: Set<String>?
        await withDiscardingTaskGroup { continuations in
            for await input in inbox {
                let now = Timestamp.now()
                var actions: [NotificationPlanner.Action] = []
                switch input {
                case .offersChanged:
                    do {
                        actions = planner.offers(try await client.send(.offers).offers, now: now)
                    } catch {
                        // handoffd went: what is shown stays until it is back and says otherwise.
                        continue
                    }
                case .tick:
                    actions = planner.tick(now: now)
                case .reply(.invoked(let id, let action)):
                    // The status icon's notifications (invites) are its own; so is the clipboard's.
                    guard planner.shownIDs.contains(id) else {
                        if id == clipboard.note.value {
                            clipboard.post.yield(.noteChosen(id: id))
                        } else {
                            tray.yield(.noteInvoked(id: id, action: action))
                        }
                        continue
                    }
                    actions = planner.invoked(id: id)
                case .reply(.closed(let id, let reason)):
                    guard planner.shownIDs.contains(id) else {
                        if id == clipboard.note.value {
                            clipboard.post.yield(.noteClosed(id: id))
                        } else {
                            tray.yield(.noteClosed(id: id))
                        }
                        continue
                    }
                    planner.closed(id: id, byUser: reason == 1 || reason == 2)
                case .continueOffer(let offer):
                    continuations.addTask { await continueActivity(offer, post: post) }
                case .serverChanged(let new):
                    capabilities = nil
                    logger.info("the notification server changed", metadata: ["running": "\(!new.isEmpty)"])
                    actions = new.isEmpty ? [] : planner.serverChanged(now: now)
                case .failed(let offer, let reason):
                    let known = await known(&capabilities, server)
                    let note = Note.failure(title: offer.activity.title, device: offer.peer.name, reason: reason, capabilities: known)
                    _ = try? await server.notify(note, replacing: nil)
                }
                for action in actions {
                    switch action {
                    case .show(let offer, let replacing):
                        let note = Note.offer(offer, capabilities: await known(&capabilities, server))
                        do {
                            planner.shown(device: offer.peer.id, id: try await server.notify(note, replacing: replacing))
                            logger.info("notification shown", metadata: ["device": "\(offer.peer.name)", "type": "\(offer.activity.type)"])
                        } catch {
                            planner.notShown(device: offer.peer.id)
                            logger.warning("the notification server did not show a notification", metadata: ["error": "\(error)"])
                        }
                    case .close(let id):
                        _ = try? await server.close(id)
                    case .continueActivity(let offer):
                        continuations.addTask { await continueActivity(offer, post: post) }
                    }
                }
                alarm.set(planner.nextDeadline)
            }
            continuations.cancelAll()
        }
        // Stopping: nobody would answer a click on what we showed.
        for id in planner.shownIDs { _ = try? await server.close(id) }
    }

    private func known(_ capabilities: inout Set<String>?, _ server: NotificationServer) async -> Set<String> {
        if let capabilities { return capabilities }
        guard let asked = try? await server.capabilities() else { return [] }
        capabilities = asked
        return asked
    }

    private func continueActivity(_ offer: Offer, post: AsyncStream<Input>.Continuation) async {
        let request = ContinueRequest(peer: offer.peer.id.text, delivery: .dispatch, environment: session, activityID: offer.activity.id)
        do throws(HandoffClientError) {
            let response = try await client.send(.continueActivity(request))
            logger.info("continued from a notification", metadata: ["device": "\(offer.peer.name)", "delivered": "\(response.delivered?.kind.rawValue ?? "")"])
        } catch {
            logger.notice("a continuation from a notification failed", metadata: ["device": "\(offer.peer.name)", "error": "\(error)"])
            post.yield(.failed(offer, error.message))
        }
    }
}

/// A name several tasks read and one sets.
final class SharedName: Sendable {
    private let name: Mutex<String>
    init(_ name: String) { self.name = Mutex(name) }
    var value: String {
        get { name.withLock { $0 } }
        set { name.withLock { $0 = newValue } }
    }
}
