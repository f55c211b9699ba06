import Dispatch
import Synchronization

/// One thread for work that blocks on the disk — saves with fsync — so that it never blocks the
/// event loop that serves peers and apps (handoffd runs all its other tasks on that one loop:
/// docs/platform.md, "Waiting without waking").
///
/// It is a serial executor: an actor that saves its state (the current activity, the account)
/// runs on it (`unownedExecutor`), so its saves keep their order and the actor needs no
/// reentrancy across a save; other code hands it a closure with `run`. Between jobs the thread
/// sleeps on a semaphore (a futex): no timer, no wakeups.
///
/// A program without an event loop (handoff-desktop) makes one of its own and runs all its tasks
/// on it (`GlobalExecutorHook`), for the same reason handoffd runs them on NIO's loop.
public final class DiskThread: SerialExecutor, Sendable {
    /// The process's one disk thread, started on first use.
    public static let shared = DiskThread(name: "handoff-disk")

    private enum Work {
        case job(UnownedJob)
        case closure(@Sendable () -> Void)
    }

    /// UnownedJob is not Sendable; jobs only cross from `enqueue` to this thread, under the lock.
    private struct Queue: @unchecked Sendable {
        var items: [Work] = []
        var head = 0
    }

    private let queue = Mutex(Queue())
    private let wake = DispatchSemaphore(value: 0)

    public init(name: String) {
        let started = BlockingThread.detach(name: name) { [self] in serve() }
        precondition(started, "cannot start the disk thread")
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        push(.job(UnownedJob(job)))
    }

    /// Runs `body` on the disk thread and returns what it returned.
    public func run<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            push(.closure { continuation.resume(returning: Result { () throws(E) -> T in try body() }) })
        }
        return try result.get()
    }

    private func push(_ work: Work) {
        queue.withLock { $0.items.append(work) }
        wake.signal()
    }

    private func serve() -> Never {
        while true {
            wake.wait()
            let work = queue.withLock { q -> Work in
                let work = q.items[q.head]
                q.head += 1
                if q.head == q.items.count {
                    (q.items, q.head) = ([], 0)
                } else if q.head >= 64, q.head * 2 >= q.items.count {
                    // Never empty under steady load: drop what was served now and then.
                    q.items.removeFirst(q.head)
                    q.head = 0
                }
                return work
            }
            switch work {
            case .job(let job): job.runSynchronously(on: asUnownedSerialExecutor())
            case .closure(let body): body()
            }
        }
    }
}
