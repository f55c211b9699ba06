#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffModel
import HandoffSystem
import Logging
import Synchronization

/// The device's one current activity (docs/activity-encoding.md): replaced by `becomeCurrent` or
/// the focused window (`followWindows`), withdrawn by `resignCurrent` or by its expiration date,
/// and kept on disk so that it survives a restart. What each event makes current is decided by a
/// value, `CurrentActivity`; this actor keeps it and carries the change out.
///
/// Every change is saved before it is made visible: if the disk refuses, the request fails and the
/// previous state stands.
public actor ActivityRegistry {
    public static let fileName = "current-activity"

    private let path: String
    private let limits: ActivityLimits
    private let events: EventHub
    private let logger: Logger
    private var state: CurrentActivity {
        didSet { published.withLock { [state] in $0 = state.activity } }
    }
    private var current: Activity? { state.activity }
    /// `current` as last set, for readers that must not wait for the disk thread this actor runs
    /// on (`currentActivityNow`).
    private nonisolated let published = Mutex<Activity?>(nil)
    /// The last of the desk's calls carried out (`followWindows`).
    private var windowsSequence: UInt64 = 0
    /// The window whose app is attached to the current activity (`followWindows`), and how.
    private var windowAttachment: (activity: UUID, serves: Bool, id: Int, detach: @Sendable (Int) -> Void)?
    private var expiryTask: Task<Void, Never>?
    /// Stamped on activities as `originDevice` once the device has an identity.
    private var deviceID: String?
    /// Tells the other features of every change (`.currentActivityChanged`).
    private let announce: Announce
    /// The time of day activities expire by.
    package nonisolated let clock: any DaemonClock
    /// Waiting for the next change (a needsSave activity being saved).
    private var changeWaiters: [UUID: Once<Void>] = [:]

    /// Every change is saved with fsync before it is visible: the actor runs on the disk thread,
    /// so a slow disk holds up activity changes, never the event loop serving peers and apps.
    public nonisolated var unownedExecutor: UnownedSerialExecutor { DiskThread.shared.asUnownedSerialExecutor() }

    /// Loads the saved activity, dropping it if it expired while the daemon was down.
    package init(
        stateDirectory: String,
        limits: ActivityLimits,
        events: EventHub,
        announce: @escaping Announce = { _ in },
        clock: any DaemonClock = SystemDaemonClock(),
        logger: Logger
    ) {
        self.clock = clock
        self.path = stateDirectory + "/" + ActivityRegistry.fileName
        self.limits = limits
        self.events = events
        self.announce = announce
        self.logger = logger
        self.state = CurrentActivity(restored: ActivityRegistry.load(path: path, now: clock.now(), logger: logger))
        published.withLock { [state] in $0 = state.activity }
        if let current = state.activity {
            logger.info("restored the current activity", metadata: ["activity": "\(current.id.lowercasedString)", "type": "\(current.type)"])
        }
    }

    private static func load(path: String, now: Timestamp, logger: Logger) -> Activity? {
        do {
            guard let bytes = try PrivateFiles.read(path, maximumSize: 16 * 1024 * 1024) else { return nil }
            let activity = try ActivityEncoding.decode(bytes, maximumSize: .max)
            if activity.isExpired(at: now) {
                PrivateFiles.remove(path)
                logger.info("dropped the saved activity: it expired while the daemon was down")
                return nil
            }
            return activity
        } catch {
            let aside = PrivateFiles.quarantine(path)
            logger.warning("the saved activity is unreadable; moved it aside", metadata: ["path": "\(aside)", "error": "\(error)"])
            return nil
        }
    }

    /// Announces what was restored and starts its expiry timer. Called once the daemon runs.
    public func start() {
        announce(.currentActivityChanged(current))
        scheduleExpiry()
    }

    public func setDeviceID(_ id: String?) {
        deviceID = id
    }

    /// The current activity — never one whose expiry has passed by the daemon's clock, however
    /// that clock got there (see `scheduleExpiry`).
    public func currentActivity() async -> Activity? {
        await withdrawIfExpired()
        return current
    }

    /// The current activity if there is one not expired, without a hop to the disk thread and
    /// back (two thread wake-ups): what another device's `continue` asks for. Nil: ask
    /// `currentActivity`, which also withdraws one that expired.
    public nonisolated func liveActivityNow() -> Activity? {
        guard let activity = published.withLock({ $0 }), !activity.isExpired(at: clock.now()) else { return nil }
        return activity
    }

    private func withdrawIfExpired() async {
        guard let current, current.isExpired(at: clock.now()) else { return }
        do {
            try apply(.expire)
        } catch {
            logger.error("cannot withdraw the expired activity", metadata: ["error": "\(error)"])
        }
    }

    /// Returns at the next change of the current activity (updated, replaced or withdrawn), or
    /// after `timeout`.
    package func waitForChange(within timeout: Duration) async {
        let key = UUID()
        let once = Once<Void>()
        changeWaiters[key] = once
        _ = await once.value(within: timeout)
        changeWaiters[key] = nil
    }

    private func changed() {
        let waiters = changeWaiters.values
        changeWaiters = [:]
        waiters.forEach { $0.settle(()) }
    }

    public func currentResponse() async throws(DaemonError) -> CurrentActivityResponse {
        await withdrawIfExpired()
        guard let current else {
            throw DaemonError(.noCurrentActivity, "there is no current activity (start one with: handoffctl become-current)")
        }
        return CurrentActivityResponse(activity: current, encodedSize: ActivityEncoding.encodedSize(of: current))
    }

    /// Makes `request` the current activity (new, or an update of the current one when it names
    /// its id).
    public func becomeCurrent(_ request: PutCurrentActivityRequest) async throws(DaemonError) -> CurrentActivityResponse {
        guard case .became(let activity, let size, _, _) = try apply(.put(request)) else {
            throw DaemonError(.internalError, "the activity did not become current")
        }
        return CurrentActivityResponse(activity: activity, encodedSize: size, warnings: ActivityLimits.warnings(encodedSize: size))
    }

    /// How a window's app hears about its activity while that is current (`Attachments`).
    package struct WindowAttachment: Sendable {
        /// Attaches the window to the activity (its id; whether it serves streams); the attachment's id.
        package var attach: @Sendable (UUID, Bool) -> Int
        package var detach: @Sendable (Int) -> Void

        package init(attach: @escaping @Sendable (UUID, Bool) -> Int, detach: @escaping @Sendable (Int) -> Void) {
            self.attach = attach
            self.detach = detach
        }
    }

    /// The windows changed (`AppRegistry`): the focused one, and whether the change was a focus;
    /// `sequence` orders the desk's calls (one older than the last is stale and ignored). When
    /// that makes the window's activity current, its app is attached to it (`attachment`) in the
    /// same step, so no other change can come between. A window's activity that cannot be
    /// current (the disk refused, or it is no longer valid) withdraws the window's one before it.
    package func followWindows(_ focused: CurrentActivity.FocusedWindow?, focusChanged: Bool, sequence: UInt64, attachment: WindowAttachment?) {
        guard sequence > windowsSequence else { return }
        windowsSequence = sequence
        let change: CurrentActivity.Change?
        do {
            change = try apply(.windows(focused, focusChanged: focusChanged))
        } catch {
            logger.warning("a window's activity could not become current", metadata: ["error": "\(error)"])
            _ = try? apply(.windowRefused(focused, focusChanged: focusChanged))
            return
        }
        guard case .became(let activity, _, let update, .window) = change, let attachment else { return }
        let serves = activity.content.supportsContinuationStreams
        if update, let held = windowAttachment, held.activity == activity.id {
            // An update: its attachment holds, unless it now serves streams or no longer does.
            guard held.serves != serves else { return }
            held.detach(held.id)
        }
        windowAttachment = (activity.id, serves, attachment.attach(activity.id, serves), attachment.detach)
    }

    /// The app that served `id`'s continuation streams left: the activity stays current (an
    /// activity whose app detaches stays: docs/local-api.md, "The originating app: attach"), updated to no longer offer streams, so that
    /// other devices are not promised streams nobody would serve.
    package func stopOfferingStreams(_ id: UUID) async {
        do {
            guard try apply(.stopOfferingStreams(id)) != nil else { return }
            logger.notice("the app serving the activity's streams left; it no longer offers them", metadata: ["activity": "\(id.lowercasedString)"])
        } catch {
            logger.error("cannot update the activity after its stream server left", metadata: ["error": "\(error)"])
        }
    }

    /// Withdraws the current activity. Idempotent: with none, nothing happens.
    public func resignCurrent() async throws(DaemonError) -> Activity? {
        guard case .withdrawn(let resigned, _, _) = try apply(.resign) else { return nil }
        return resigned
    }

    /// Withdraws the current activity only if it is still `id` (what the caller saw may have
    /// been replaced meanwhile): nil when it was not.
    public func resignCurrent(ifID id: UUID) async throws(DaemonError) -> Activity? {
        guard current?.id == id else { return nil }
        return try await resignCurrent()
    }

    /// Decides what `event` changes (`CurrentActivity`) and carries it out: saved first (if the
    /// disk refuses, nothing changes), then made visible, told and timed.
    @discardableResult
    private func apply(_ event: CurrentActivity.Event) throws(DaemonError) -> CurrentActivity.Change? {
        let now = clock.now()
        let (next, change) = try state.next(event, now: now, deviceID: deviceID, limits: limits)
        guard let change else {
            state = next
            return nil
        }
        try save(next.activity)
        state = next
        if windowAttachment?.activity != next.activity?.id { windowAttachment = nil }
        scheduleExpiry()
        changed()
        switch change {
        case .became(let activity, let size, _, let source):
            events.publish(LocalEvent(at: now, .currentActivityChanged(activity)))
            announce(.currentActivityChanged(activity))
            logger.info(
                "activity became current",
                metadata: ["activity": "\(activity.id.lowercasedString)", "type": "\(activity.type)", "bytes": "\(size)", "source": "\(source)"]
            )
        case .withdrawn(let activity, let reason, let source):
            events.publish(LocalEvent(at: now, .currentActivityResigned(activityID: activity.id, reason: reason)))
            announce(.currentActivityChanged(nil))
            logger.info("activity withdrawn", metadata: ["activity": "\(activity.id.lowercasedString)", "reason": "\(reason.rawValue)", "source": "\(source)"])
        }
        return change
    }

    private func save(_ activity: Activity?) throws(DaemonError) {
        do {
            if let activity {
                try PrivateFiles.writeAtomically(ActivityEncoding.encode(activity), to: path)
            } else {
                PrivateFiles.remove(path)
            }
        } catch {
            logger.error("cannot save the current activity", metadata: ["error": "\(error)"])
            throw DaemonError(.internalError, "the daemon cannot save the activity: \(error)")
        }
    }

    private func scheduleExpiry() {
        expiryTask?.cancel()
        expiryTask = nil
        guard let activity = current, let expiry = activity.expirationDate else { return }
        let (id, clock) = (activity.id, self.clock)
        expiryTask = Task(executorPreference: ProgramExecutor.current) { [weak self] in
            // On the wall clock: the kernel ends the wait when the clock is set forward past the
            // expiry (one set back wakes early and sleeps again). A clock only this process sees
            // move (a test's preloaded offset) moves no kernel timer; then whoever asks for the
            // activity finds it expired (`currentActivity`). Nothing polls.
            try? await clock.sleep(until: expiry)
            guard !Task.isCancelled else { return }
            await self?.expire(id: id)
        }
    }

    private func expire(id: UUID) async {
        guard let activity = current, activity.id == id, activity.isExpired(at: clock.now()) else {
            scheduleExpiry()  // woke early (clock change): try again
            return
        }
        do {
            try apply(.expire)
        } catch {
            logger.error("cannot withdraw the expired activity", metadata: ["error": "\(error)"])
        }
    }

    /// Stops the expiry timer (daemon shutdown).
    public func stop() {
        expiryTask?.cancel()
        expiryTask = nil
    }
}
