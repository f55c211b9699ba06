#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffModel
import HandoffSystem
import Logging

/// The device's one current activity (docs/activity-encoding.md): replaced by `becomeCurrent`, withdrawn by
/// `resignCurrent` or by its expiration date, and kept on disk so that it survives a restart.
///
/// Every change is saved before it is made visible: if the disk refuses, the request fails and the
/// previous state stands.
public actor ActivityRegistry {
    public static let fileName = "current-activity"

    private let path: String
    private let limits: ActivityLimits
    private let events: EventHub
    private let logger: Logger
    private var current: Activity?
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
        self.current = ActivityRegistry.load(path: path, now: clock.now(), logger: logger)
        if let current {
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

    private func withdrawIfExpired() async {
        let now = clock.now()
        guard let current, current.isExpired(at: now) else { return }
        do {
            _ = try await withdraw(reason: .expired, now: now)
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

    /// What the current activity must be for a change to be made (`AppDesk`, which decides from
    /// what it read before): anything, or exactly this id (nil: none).
    public enum Expectation: Sendable {
        case anything
        case current(UUID?)
    }

    /// Makes `request` the current activity (new, or an update of the current one when it names its id).
    /// `newID`: the id a new activity takes (a window's, which keeps it each time the window is
    /// focused again: `AppDesk`); a fresh one if nil. `expecting`: refused with
    /// `activity_changed` when the current activity is not what the caller saw.
    public func becomeCurrent(
        _ request: PutCurrentActivityRequest, now given: Timestamp? = nil, newID: UUID? = nil, expecting: Expectation = .anything
    ) async throws(DaemonError) -> CurrentActivityResponse {
        try check(expecting)
        let now = given ?? clock.now()
        let activity: Activity
        if let id = request.id {
            guard let existing = current, existing.id == id else {
                throw DaemonError(
                    .activityChanged,
                    "activity \(id.lowercasedString) is no longer current; start a new one instead of updating it"
                )
            }
            guard existing.type == request.content.type else {
                throw DaemonError(
                    .typeImmutable,
                    "an activity's type cannot change (\(existing.type) → \(request.content.type)); start a new activity instead"
                )
            }
            activity = Activity(
                id: id,
                content: request.content,
                createdAt: existing.createdAt,
                updatedAt: max(now, existing.updatedAt),
                originDevice: deviceID
            )
        } else {
            activity = Activity(id: newID ?? UUID(), content: request.content, createdAt: now, updatedAt: now, originDevice: deviceID)
        }

        let size: Int
        do {
            size = try activity.validate(now: now, limits: limits)
        } catch {
            throw DaemonError(error)
        }
        try save(activity)
        current = activity
        scheduleExpiry()
        events.publish(LocalEvent(at: now, .currentActivityChanged(activity)))
        changed()
        announce(.currentActivityChanged(activity))
        logger.info(
            "activity became current",
            metadata: ["activity": "\(activity.id.lowercasedString)", "type": "\(activity.type)", "bytes": "\(size)"]
        )
        var warnings: [String] = []
        if size > ActivityLimits.warningEncodedSize {
            warnings.append(
                "the activity encodes to \(size) bytes, more than \(ActivityLimits.warningEncodedSize / 1024) KiB; keep activities small and move bulk data into a continuation stream"
            )
        }
        return CurrentActivityResponse(activity: activity, encodedSize: size, warnings: warnings)
    }

    /// The app that served `id`'s continuation streams left: the activity stays current (an
    /// activity whose app detaches stays: docs/local-api.md, "The originating app: attach"), updated to no longer offer streams, so that
    /// other devices are not promised streams nobody would serve.
    package func stopOfferingStreams(_ id: UUID) async {
        guard let activity = current, activity.id == id, activity.content.supportsContinuationStreams else { return }
        var content = activity.content
        content.supportsContinuationStreams = false
        do {
            _ = try await becomeCurrent(PutCurrentActivityRequest(id: id, content: content))
            logger.notice("the app serving the activity's streams left; it no longer offers them", metadata: ["activity": "\(id.lowercasedString)"])
        } catch {
            logger.error("cannot update the activity after its stream server left", metadata: ["error": "\(error)"])
        }
    }

    /// Withdraws the current activity. Idempotent: with none, nothing happens.
    public func resignCurrent(now: Timestamp? = nil, expecting: Expectation = .anything) async throws(DaemonError) -> Activity? {
        try check(expecting)
        return try await withdraw(reason: .resigned, now: now ?? clock.now())
    }

    private func check(_ expectation: Expectation) throws(DaemonError) {
        guard case .current(let id) = expectation, current?.id != id else { return }
        throw DaemonError(.activityChanged, "the current activity changed meanwhile")
    }

    private func withdraw(reason: LocalEvent.ResignReason, now: Timestamp) async throws(DaemonError) -> Activity? {
        guard let resigned = current else { return nil }
        try save(nil)
        current = nil
        expiryTask?.cancel()
        expiryTask = nil
        events.publish(LocalEvent(at: now, .currentActivityResigned(activityID: resigned.id, reason: reason)))
        changed()
        announce(.currentActivityChanged(nil))
        logger.info("activity withdrawn", metadata: ["activity": "\(resigned.id.lowercasedString)", "reason": "\(reason.rawValue)"])
        return resigned
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
        let now = clock.now()
        guard let activity = current, activity.id == id, activity.isExpired(at: now) else {
            scheduleExpiry()  // woke early (clock change): try again
            return
        }
        do {
            _ = try await withdraw(reason: .expired, now: now)
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
