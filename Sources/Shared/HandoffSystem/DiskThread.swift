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
/// on it: `tasks` is the same thread as a task executor, which the program prefers for its whole
/// run (`ProgramExecutor`), for the same reason handoffd runs them on NIO's loop.
public final class DiskThread: SerialExecutor, Sendable {
    /// The process's one disk thread, started on first use.
    public static let shared = DiskThread(name: "handoff-disk")

    /// This thread as a task executor: tasks that prefer it run here when no actor of their own
    /// says otherwise.
    public let tasks: Tasks

    private let inbox: Inbox

    public init(name: String) {
        let inbox = Inbox()
        self.inbox = inbox
        self.tasks = Tasks(inbox)
        let started = BlockingThread.detach(name: name) { [self] in serve() }
        precondition(started, "cannot start the disk thread")
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        inbox.push(.job(UnownedJob(job)))
    }

    /// Runs `body` on the disk thread and returns what it returned.
    public func run<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            inbox.push(.closure { continuation.resume(returning: Result { () throws(E) -> T in try body() }) })
        }
        return try result.get()
    }

    private func serve() -> Never {
        while true {
            switch inbox.next() {
            case .job(let job): job.runSynchronously(on: asUnownedSerialExecutor())
            case .task(let job): job.runSynchronously(on: tasks.asUnownedTaskExecutor())
            case .closure(let body): body()
            }
        }
    }

    /// The thread's task-executor face: its jobs join the same queue.
    public final class Tasks: TaskExecutor, Sendable {
        private let inbox: Inbox

        fileprivate init(_ inbox: Inbox) {
            self.inbox = inbox
        }

        public func enqueue(_ job: consuming ExecutorJob) {
            inbox.push(.task(UnownedJob(job)))
        }
    }
}

private enum Work {
    /// An actor's job (the thread as its serial executor).
    case job(UnownedJob)
    /// A task's job (the thread as its preferred task executor).
    case task(UnownedJob)
    case closure(@Sendable () -> Void)
}

/// What waits for the thread, in order.
private final class Inbox: Sendable {
    /// UnownedJob is not Sendable; jobs only cross from `push` to the thread, under the lock.
    private struct Queue: @unchecked Sendable {
        var items: [Work] = []
        var head = 0
    }

    private let queue = Mutex(Queue())
    private let wake = DispatchSemaphore(value: 0)

    func push(_ work: Work) {
        queue.withLock { $0.items.append(work) }
        wake.signal()
    }

    func next() -> Work {
        wake.wait()
        return queue.withLock { q -> Work in
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
    }
}
