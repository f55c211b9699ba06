#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonAccounts
import DaemonApps
import DaemonClipboard
import DaemonContinue
import DaemonCore
import DaemonDiscovery
import DaemonDocuments
import DaemonHistory
import DaemonSessions
import DaemonLocalAPI
import DaemonStreams
import HandoffAPI
import HandoffDiscovery
import HandoffModel
import HandoffSystem
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Starts what was restored from disk (the activity's expiry timer, the account's TLS contexts)
/// and stops the timer and the event streams on shutdown.
struct StateLifecycle: Service {
    let registry: ActivityRegistry
    let accounts: AccountStore
    let events: EventHub
    let attachments: Attachments
    let notifier: SystemdNotifier

    func run() async throws {
        await registry.start()
        await accounts.start()
        try? await gracefulShutdown()
        notifier.stopping()
        await registry.stop()
        attachments.finishAll()
        events.finishAll()
    }
}

/// Where each feature's announcements (`DaemonEvent`) go: the one place features reach those
/// above them, and the one `switch` that says what follows what.
final class EventRoute: Sendable {
    /// What the route reaches.
    struct Features: Sendable {
        let events: EventHub
        let attachments: Attachments
        let book: StreamBook
        let presence: Presence
        let sessions: MemberSessions
        let discovery: DiscoveryService
        let admission: AdmissionControl
        let accounts: AccountStore
        let history: HistoryStore
        let clipboard: SharedClipboard
    }

    private let features = Mutex<Features?>(nil)
    /// Nudges for systemd's STATUS line (`HandoffDaemon.superviseForSystemd`): discovery's state
    /// or the account changed. Only the newest is kept: the line is read afresh each time.
    let statusChanges: AsyncStream<Void>
    private let statusChanged: AsyncStream<Void>.Continuation

    init() {
        (statusChanges, statusChanged) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    func connect(_ features: Features) {
        self.features.withLock { $0 = features }
    }

    var announce: Announce {
        { [self] event in
            guard let features = features.withLock({ $0 }) else {
                assertionFailure("\(event) announced before the route was connected")
                return
            }
            Self.route(event, to: features, statusChanged: statusChanged)
        }
    }

    static func route(_ event: DaemonEvent, to f: Features, statusChanged: AsyncStream<Void>.Continuation) {
        switch event {
        case .currentActivityChanged(let activity):
            // Apps attached to an activity that is no longer current hear that it ended; devices
            // that continued it can no longer open its streams.
            f.attachments.currentChanged(to: activity?.id, reason: activity == nil ? "the activity was withdrawn or expired" : "another activity became current")
            f.book.keepGrants(for: activity?.id)
            // Peers with a session hear at once; the advert follows as fast as Avahi allows.
            let notice = f.presence.update(activity)
            let sessions = f.sessions
            sessions.spawn { await sessions.tell(notice) }
            f.discovery.advertise(notice)
        case .accountChanged:
            f.discovery.accountChanged()
            // Left (or never had) an account: its deletions are no other account's business.
            let (accounts, history) = (f.accounts, f.history)
            f.sessions.spawn { if await !accounts.isMember { await history.forgetDeletions() } }
            f.events.publish(LocalEvent(at: .now(), .statusChanged))
            statusChanged.yield()
        case .discoveryStateChanged:
            statusChanged.yield()
        case .invitesChanged:
            f.discovery.invitesChanged()
        case .memberSighted(let id, let fresh):
            let sessions = f.sessions
            sessions.spawn { await sessions.consider(id, fresh: fresh) }
        case .activityGiven(let peer, let activityID):
            f.book.grant(peer, activityID: activityID)
        case .settingsChanged(let settings):
            // Off: the sessions end and the advert goes; on: both come back at once.
            let notice = f.presence.share(settings.handoff)
            f.admission.open(settings.handoff)
            let sessions = f.sessions
            sessions.spawn { await sessions.switched(on: settings.handoff, notice: notice) }
            let clipboard = f.clipboard
            sessions.spawn { await clipboard.setEnabled(settings.clipboard) }
            f.discovery.advertise(notice)
            f.events.publish(LocalEvent(at: .now(), .statusChanged))
            statusChanged.yield()
        case .invitingNearbyChanged:
            f.events.publish(LocalEvent(at: .now(), .statusChanged))
        }
    }
}
