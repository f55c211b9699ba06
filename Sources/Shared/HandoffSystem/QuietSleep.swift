import Dispatch
import Glibc
import Synchronization

/// Waiting that wakes the process once, at the deadline.
///
/// Why not `Task.sleep`: on Linux, Swift's `Task.sleep` is a `dispatch_after` on libdispatch's
/// global queues, and their first worker starts libdispatch's pool monitor, a timer that wakes
/// the process every second for as long as it lives. handoffd runs its tasks on NIO's event
/// loops instead (handoffd's entry point), and waits with a timer on a serial queue, which never
/// starts the monitor (docs/platform.md, "Waiting without waking"). `ModuleGraphTests` keeps
/// `Task.sleep` out of the daemon's sources.
public enum QuietSleep {
    /// Waits `duration` on the monotonic clock; throws `CancellationError` when the task is
    /// cancelled first (at once, not at the deadline).
    ///
    /// The monotonic clock stops while the machine is suspended: a backoff of a minute begun
    /// before a suspend ends a minute of running time later. That suits waits between tries (on
    /// resume, a device's fresh advert is dialled at once whatever backoff runs, `DialPlan`);
    /// what must happen at a time of day waits with `sleep(untilWallClock:)`.
    public static func sleep(for duration: Duration) async throws {
        let (seconds, attoseconds) = duration.components
        // Beyond ~292 years, a day less: the deadline is as good as never.
        let nanoseconds = seconds >= Int64.max / 1_000_000_000 - 86_400 ? Int64.max / 2 : max(0, seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        try await wait(until: .monotonic(DispatchTime.now() + .nanoseconds(Int(nanoseconds))))
    }

    /// Waits until `instant` of the continuous clock (a deadline computed earlier).
    public static func sleep(until instant: ContinuousClock.Instant) async throws {
        try await sleep(for: ContinuousClock.now.duration(to: instant))
    }

    /// Waits until the wall clock reads `microsecondsSinceEpoch` (an activity's or an invite's
    /// expiry): time spent suspended counts, so what ran out during a suspend ends on resume,
    /// and a clock set forward ends the wait early, as the time of day says it should.
    public static func sleep(untilWallClock microsecondsSinceEpoch: Int64) async throws {
        // At least 1 µs after the epoch: libdispatch reads a wall time of 0 (or 1) ns as "forever".
        let clamped = max(1, min(microsecondsSinceEpoch, Int64.max / 1_000 - 1))
        let deadline = DispatchWallTime(timespec: timespec(tv_sec: Int(clamped / 1_000_000), tv_nsec: Int(clamped % 1_000_000) * 1_000))
        try await wait(until: .wallClock(deadline))
    }

    /// libdispatch makes one timerfd per clock, the first time a timer of that clock is armed,
    /// and keeps it; if the process is at its descriptor limit then, the timer is silently not
    /// armed and fires only when another timer is. A daemon calls this at start, before anyone
    /// can use up its descriptors: one short wait on each clock.
    public static func prepare() async {
        // Both at once: a daemon's start waits for this (~1 ms, not 2).
        async let monotonic: Void? = try? sleep(for: .milliseconds(1))
        async let wallClock: Void? = try? sleep(untilWallClock: wallClockMicroseconds() + 1_000)
        _ = await (monotonic, wallClock)
    }

    private static func wallClockMicroseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1_000
    }

    private static func wait(until deadline: TimerWait.Deadline) async throws {
        try Task.checkCancellation()
        let wait = TimerWait()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                wait.start(continuation, deadline: deadline)
            }
        } onCancel: {
            wait.finish(throwing: CancellationError())
        }
    }
}

/// One wait: its continuation is resumed exactly once, by the timer or by cancellation, and the
/// timer is cancelled either way (so a cancelled wait leaves nothing behind in libdispatch).
private final class TimerWait: Sendable {
    enum Deadline {
        case monotonic(DispatchTime)
        case wallClock(DispatchWallTime)
    }

    /// A serial queue (which libdispatch serves from its overcommit pool): the global queues'
    /// first use starts libdispatch's once-a-second worker monitor (docs/platform.md).
    static let queue = DispatchQueue(label: "handoff.quiet-sleep")

    private struct State {
        var continuation: CheckedContinuation<Void, any Error>?
        var timer: Timer?
        var finished: (any Error)??
    }

    /// libdispatch's sources may be used from any thread (dispatch_source_cancel is documented
    /// as thread-safe); the Swift overlay just does not say so.
    private struct Timer: @unchecked Sendable {
        let source: any DispatchSourceTimer
    }

    private let state = Mutex(State())

    func start(_ continuation: CheckedContinuation<Void, any Error>, deadline: Deadline) {
        // The source is made only for a wait that begins: libdispatch traps when a source that was
        // never activated is released.
        let started = state.withLock { s -> Result<Timer, any Error>? in
            if let finished = s.finished { return finished.map { .failure($0) } ?? nil }
            let timer = Timer(source: DispatchSource.makeTimerSource(queue: Self.queue))
            (s.continuation, s.timer) = (continuation, timer)
            return .success(timer)
        }
        switch started {
        case .success(let timer):
            timer.source.setEventHandler { [self] in finish(throwing: nil) }
            switch deadline {
            case .monotonic(let time): timer.source.schedule(deadline: time)
            case .wallClock(let time): timer.source.schedule(wallDeadline: time)
            }
            timer.source.activate()
        case .failure(let error):
            continuation.resume(throwing: error)  // cancelled before the wait began
        case nil:
            continuation.resume()
        }
    }

    func finish(throwing error: (any Error)?) {
        let (continuation, timer) = state.withLock { s in
            if s.finished == nil { s.finished = .some(error) }
            defer { (s.continuation, s.timer) = (nil, nil) }
            return (s.continuation, s.timer)
        }
        timer?.source.cancel()
        guard let continuation else { return }
        if let error { continuation.resume(throwing: error) } else { continuation.resume() }
    }
}
