#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DesktopCore
import DesktopJoinDialog
import DesktopNotifications
import HandoffAPI
import HandoffClient
import HandoffDBus
import HandoffModel
import HandoffSystem
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The status icon's half of the agent (docs/desktop.md, "The status icon"): it keeps
/// `TrayFacts` up to date from handoffd and from what the user does in the menu, shows the
/// `TrayMenu` made from them, and carries out the menu's items — inviting a device, joining an
/// account through `JoinDialog`, the device's handoff and clipboard switches. Continuing goes back to the agent,
/// which continues from notifications the same way.
package struct TrayAgent: Sendable {
    package let client: HandoffClient
    package let server: NotificationServer
    package let icon: StatusIcon
    package let dialog: JoinDialog
    package let options: AgentOptions
    package let logger: Logger

    package init(client: HandoffClient, server: NotificationServer, icon: StatusIcon, dialog: JoinDialog, options: AgentOptions, logger: Logger) {
        self.client = client
        self.server = server
        self.icon = icon
        self.dialog = dialog
        self.options = options
        self.logger = logger
    }

    package enum Input: Sendable {
        /// handoffd said something changed, or it is back: ask it again.
        case refresh
        case daemonGone
        case clicked(TrayMenu.Key)
        /// The StatusNotifierWatcher appeared (true) or went.
        case watcher(Bool)
        case hostCheck
        case invite(InviteUpdate)
        case inviteEnded(failure: String?)
        case dialog(JoinDialog.Outcome)
        case joined(AccountInfo?, failure: String?)
        /// The account key was taken (nil), or why not.
        case keyTaken(failure: String?)
        /// The user chose `action` in notification `id`, which is not one of the agent's offers.
        case noteInvoked(id: UInt32, action: String)
        case noteClosed(id: UInt32)
        case notificationServer(Bool)
    }

    /// The action of the "a device nearby is inviting" notification.
    static let joinAction = "join"
    /// The action of the "DEVICE offers this device the account key" notification.
    static let acceptKeyAction = "accept-key"

    /// What the tray's loop remembers besides the facts.
    private struct Notes {
        var invite: UInt32?
        var inviting: UInt32?
        var keyOffer: UInt32?
        var iconState = DesktopAgentStatus.StatusIcon.waiting
        var notifications = false
    }

    /// Runs until `inbox` ends; `continueOffer` hands a chosen offer to the agent.
    package func run(
        _ inbox: AsyncStream<Input>, post: AsyncStream<Input>.Continuation, refreshes: RefreshRequests, listening: StatusIcon.Listening,
        continueOffer: @escaping @Sendable (Offer) -> Void
    ) async {
        var facts = TrayFacts()
        var notes = Notes()
        notes.notifications = await server.owner() != nil
        let invitation = Invitation()
        await withDiscardingTaskGroup { group in
            group.addTask { await icon.serve(listening) { post.yield(.clicked($0)) } }
            group.addTask {
                for await change in listening.watchers where change.sender == "org.freedesktop.DBus" {
                    post.yield(.watcher(!(change.arguments.dropFirst(2).first?.stringValue ?? "").isEmpty))
                }
            }
            // The watcher may run already: try once, then follow it.
            group.addTask { post.yield(.watcher(await icon.watcherRuns())) }
            var lastShown: TrayMenu?
            var written: (icon: DesktopAgentStatus.StatusIcon, notifications: Bool)?
            for await input in inbox {
                switch input {
                case .refresh:
                    refreshes.taken()
                    guard let status = try? await client.send(.status) else {
                        facts.daemon = .notRunning
                        break
                    }
                    facts.daemon = .running
                    facts.account = status.account
                    facts.handoffOn = status.settings?.handoff ?? true
                    facts.clipboardOn = status.settings?.clipboard ?? true
                    facts.peers = (try? await client.send(.peers).peers) ?? []
                    facts.offers = (try? await client.send(.offers).offers) ?? []
                    let inviting = facts.account == nil ? status.invitingNearby ?? 0 : 0
                    if inviting > 0, facts.invitingNearby == 0, !facts.joining {
                        notes.inviting = await notify(
                            summary: "A device nearby is inviting",
                            body: "Join its handoff account to continue what you do there. You need the code it shows.",
                            actions: [Note.Action(key: "default", label: "Join…"), Note.Action(key: Self.joinAction, label: "Join…")]
                        )
                    } else if inviting == 0, let id = notes.inviting {
                        _ = try? await server.close(id)
                        notes.inviting = nil
                    }
                    facts.invitingNearby = inviting
                    if let offer = facts.account?.keyOffer, notes.keyOffer == nil {
                        notes.keyOffer = await notify(
                            summary: "\(offer.deviceName) offers this device the account key",
                            body: "With it, this device adds and removes your devices. Until \(Self.timeOfDay(offer.expiresAt)).",
                            actions: [Note.Action(key: "default", label: "Take the key"), Note.Action(key: Self.acceptKeyAction, label: "Take the key")]
                        )
                    } else if facts.account?.keyOffer == nil, let id = notes.keyOffer {
                        _ = try? await server.close(id)
                        notes.keyOffer = nil
                    }
                    // Switched off (here or by handoffctl): no device could join with the code.
                    if !facts.handoffOn, facts.invite != nil { invitation.cancel() }
                case .daemonGone:
                    facts.daemon = .notRunning
                case .clicked(let key):
                    switch key {
                    case .continueFrom(let peer, let activityID):
                        if let offer = facts.offers.first(where: { $0.peer.id == peer && $0.activity.id == activityID }) { continueOffer(offer) }
                    case .addDevice:
                        guard invitation.begin() else { break }
                        let creating = facts.account == nil
                        group.addTask { await invite(creating: creating, holder: invitation, post: post) }
                    case .cancelInvite where facts.invite != nil:
                        invitation.cancel()
                    case .acceptKey:
                        group.addTask { await acceptKey(post: post) }
                    case .join where !facts.joining:
                        facts.joining = true
                        group.addTask { post.yield(.dialog(await dialog.ask(refused: nil))) }
                    case .handoffSwitch(let on):
                        // What the item said when the user chose it, whatever changed since.
                        group.addTask { await change(SettingsChange(handoff: on), refreshes: refreshes) }
                    case .clipboardSwitch(let on):
                        group.addTask { await change(SettingsChange(clipboard: on), refreshes: refreshes) }
                    default:
                        break
                    }
                case .watcher(let present):
                    // A watcher without a panel to show its icons (a host) counts as none.
                    if present, await icon.register(), await icon.hostRegistered() {
                        notes.iconState = .shown
                        logger.info("the status icon is shown")
                    } else if notes.iconState == .shown || notes.iconState == .waiting {
                        notes.iconState = .waiting
                        let grace = options.statusIconGrace
                        group.addTask {
                            guard (try? await QuietSleep.sleep(for: grace)) != nil else { return }
                            post.yield(.hostCheck)
                        }
                    }
                case .hostCheck:
                    guard notes.iconState == .waiting else { break }
                    notes.iconState = .noHost
                    await noHost()
                case .invite(let update):
                    if let invite = update.invite {
                        facts.invite = TrayFacts.Invite(code: invite.code, expiresAt: invite.expiresAt)
                        notes.invite = await notify(
                            summary: "Add a device: type this code on it",
                            body: "\(invite.code)\nIn its Handoff menu: Join another device’s account… (or handoffctl account join CODE). Valid until \(Self.timeOfDay(invite.expiresAt)).",
                            replacing: notes.invite
                        )
                    } else if let joined = update.joined {
                        facts.invite = nil
                        notes.invite = await notify(summary: "\(joined.name) joined your handoff account", body: "", replacing: notes.invite)
                    } else if update.expired == true {
                        facts.invite = nil
                        notes.invite = await notify(summary: "The invite expired", body: "No device joined with its code. Add a device… makes a new one.", replacing: notes.invite)
                    }
                case .inviteEnded(let failure):
                    if let failure {
                        notes.invite = await notify(summary: "Cannot add a device", body: failure, replacing: notes.invite)
                    } else if facts.invite != nil, let id = notes.invite {
                        // Cancelled while its code showed: the code is no use any more.
                        _ = try? await server.close(id)
                        notes.invite = nil
                    }
                    facts.invite = nil
                case .dialog(.entered(let code)):
                    group.addTask {
                        do throws(HandoffClientError) {
                            post.yield(.joined(try await client.send(.joinAccount(JoinAccountRequest(code: code))), failure: nil))
                        } catch {
                            post.yield(.joined(nil, failure: error.message))
                        }
                    }
                case .dialog(.cancelled):
                    facts.joining = false
                case .dialog(.unavailable(let why)):
                    facts.joining = false
                    _ = await notify(summary: "Cannot show the join dialog", body: "\(why). In a terminal: handoffctl account join CODE")
                case .joined(let account?, _):
                    facts.joining = false
                    facts.account = account
                    _ = await notify(summary: "This device joined \(account.accountName)", body: "Your devices can continue each other’s activities now.")
                    refreshes.request()
                case .joined(nil, let failure):
                    // Asked again, saying why: the user may have mistyped.
                    let refused = failure ?? "handoffd did not say why"
                    logger.notice("a join from the dialog failed", metadata: ["error": "\(refused)"])
                    group.addTask { post.yield(.dialog(await dialog.ask(refused: refused))) }
                case .keyTaken(let failure):
                    if let failure {
                        _ = await notify(summary: "Cannot take the account key", body: failure)
                    } else {
                        _ = await notify(summary: "This device holds the account key now", body: "Add and remove your devices here.")
                    }
                    refreshes.request()
                case .noteInvoked(let id, let action) where id == notes.keyOffer:
                    notes.keyOffer = nil
                    if action == Self.acceptKeyAction || action == "default" { group.addTask { await acceptKey(post: post) } }
                case .noteInvoked(let id, let action):
                    if id == notes.inviting, action == Self.joinAction || action == "default" {
                        // The notification did its part: the dialog takes over.
                        _ = try? await server.close(id)
                        notes.inviting = nil
                        if !facts.joining {
                            facts.joining = true
                            group.addTask { post.yield(.dialog(await dialog.ask(refused: nil))) }
                        }
                    }
                case .noteClosed(let id):
                    if id == notes.inviting { notes.inviting = nil }
                    if id == notes.invite { notes.invite = nil }
                    if id == notes.keyOffer { notes.keyOffer = nil }
                case .notificationServer(let running):
                    notes.notifications = running
                    // A new server numbers its notifications afresh: ours are gone with the old.
                    notes.invite = nil
                    notes.inviting = nil
                    notes.keyOffer = nil
                }
                let menu = TrayMenu(facts, clock: Self.timeOfDay)
                if menu != lastShown {
                    icon.show(menu)
                    lastShown = menu
                }
                // Written when what it says changes, not at every input.
                if written?.icon != notes.iconState || written?.notifications != notes.notifications {
                    writeStatus(notes)
                    written = (notes.iconState, notes.notifications)
                }
            }
            invitation.cancel()
            if facts.invite != nil, let id = notes.invite { _ = try? await server.close(id) }
            group.cancelAll()
        }
        unlink(options.statusFile)
    }

    /// Creates the account first when there is none ("Start an account here…"), then invites and
    /// follows the invite until a device joins, it expires, or the user cancels it.
    private func invite(creating: Bool, holder: Invitation, post: AsyncStream<Input>.Continuation) async {
        do throws(HandoffClientError) {
            if creating {
                _ = try await client.send(.createAccount(CreateAccountRequest()))
                post.yield(.refresh)
            }
            let subscription = try await client.subscribe(.invite)
            guard holder.start(subscription) else {
                post.yield(.inviteEnded(failure: nil))
                return holder.end()
            }
            while let update = try await subscription.next() { post.yield(.invite(update)) }
            post.yield(.inviteEnded(failure: nil))
        } catch {
            // Closed by Cancel: not a failure to report.
            post.yield(.inviteEnded(failure: holder.wasCancelled ? nil : error.message))
        }
        holder.end()
    }

    /// No panel shows the icon: said once ever (a file remembers), and notifications go on.
    private func noHost() async {
        logger.notice("no panel in this session shows status icons; notifications go on (handoffctl doctor says what to install)")
        guard access(options.noHostNotedFile, F_OK) != 0 else { return }
        _ = await notify(
            summary: "Handoff runs without a status icon",
            body: "This desktop shows no status icons. Notifications still offer what your devices do; handoffctl doctor says what adds the icon."
        )
        let directory = String(options.noHostNotedFile[..<(options.noHostNotedFile.lastIndex(of: "/") ?? options.noHostNotedFile.startIndex)])
        Self.makeDirectory(directory)
        let fd = open(options.noHostNotedFile, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        if fd >= 0 { close(fd) }
    }

    /// A switch the user chose in the menu; the menu then shows what handoffd has.
    private func change(_ settings: SettingsChange, refreshes: RefreshRequests) async {
        do throws(HandoffClientError) {
            _ = try await client.send(.changeSettings(settings))
        } catch {
            logger.warning("cannot change a setting from the menu", metadata: ["error": "\(error)"])
        }
        refreshes.request()
    }

    /// Takes the account key offered to this device (the menu's item, or its notification).
    private func acceptKey(post: AsyncStream<Input>.Continuation) async {
        do throws(HandoffClientError) {
            _ = try await client.send(.acceptKey)
            post.yield(.keyTaken(failure: nil))
        } catch {
            post.yield(.keyTaken(failure: error.message))
        }
    }

    private func notify(summary: String, body: String, actions: [Note.Action] = [], replacing: UInt32? = nil) async -> UInt32? {
        let note = Note(appName: "Handoff", icon: nil, summary: summary, body: body, actions: actions, expireMilliseconds: 0, desktopEntry: "handoff-desktop")
        return try? await server.notify(note, replacing: replacing)
    }

    /// `desktop.json`, for `handoffctl doctor`: replaced whole, so a reader never sees half.
    private func writeStatus(_ notes: Notes) {
        let status = DesktopAgentStatus(
            pid: getpid(), statusIcon: notes.iconState, notifications: notes.notifications,
            joinDialog: ChildProcess.search(JoinDialog.program, path: dialog.environment["PATH"] ?? "/usr/bin:/bin") != nil,
            clipboard: options.clipboard
        )
        guard let data = try? JSONEncoder().encode(status) else { return }
        let path = options.statusFile
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        Self.makeDirectory(directory)
        try? data.write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    private static func makeDirectory(_ path: String) {
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    /// A time as the user reads it on this computer: `14:05`, local time.
    package static func timeOfDay(_ time: Timestamp) -> String {
        var seconds = time_t(time.microsecondsSinceEpoch / 1_000_000)
        var parts = tm()
        localtime_r(&seconds, &parts)
        let hour = parts.tm_hour < 10 ? "0\(parts.tm_hour)" : "\(parts.tm_hour)"
        let minute = parts.tm_min < 10 ? "0\(parts.tm_min)" : "\(parts.tm_min)"
        return "\(hour):\(minute)"
    }
}

/// The invite under way, one at a time: begun at the click (a second click before its code
/// arrives starts nothing), closed by "Cancel the invite" from the tray's loop.
final class Invitation: Sendable {
    private enum State {
        case idle
        /// Clicked; the code is not there yet.
        case starting
        case running(NDJSONSubscription<InviteUpdate>)
        case cancelled
    }

    private let state = Mutex(State.idle)

    /// False while one is under way.
    package func begin() -> Bool {
        state.withLock { s in
            guard case .idle = s else { return false }
            s = .starting
            return true
        }
    }

    /// False when it was cancelled before it started (then the subscription is closed).
    package func start(_ subscription: NDJSONSubscription<InviteUpdate>) -> Bool {
        let started = state.withLock { s in
            guard case .starting = s else { return false }
            s = .running(subscription)
            return true
        }
        if !started { subscription.close() }
        return started
    }

    /// Cancels the invite under way, if any.
    package func cancel() {
        let subscription: NDJSONSubscription<InviteUpdate>? = state.withLock { s in
            switch s {
            case .idle, .cancelled: return nil
            case .starting:
                s = .cancelled
                return nil
            case .running(let subscription):
                s = .cancelled
                return subscription
            }
        }
        subscription?.close()
    }

    var wasCancelled: Bool {
        state.withLock { s in
            if case .cancelled = s { return true }
            return false
        }
    }

    /// Ready for the next invite.
    package func end() { state.withLock { $0 = .idle } }
}

/// Asks the tray to read handoffd's state again, once however many changes come meanwhile: a
/// burst of events (a device changing fast, adverts flapping) costs one refresh, and the
/// tray's other inputs are never crowded out.
package final class RefreshRequests: Sendable {
    private let pending = Mutex(false)
    private let post: AsyncStream<TrayAgent.Input>.Continuation

    package init(_ post: AsyncStream<TrayAgent.Input>.Continuation) { self.post = post }

    package func request() {
        let first = pending.withLock { p in
            defer { p = true }
            return !p
        }
        if first { post.yield(.refresh) }
    }

    /// The tray starts reading: changes from now on ask again.
    package func taken() { pending.withLock { $0 = false } }
}
