import NIOCore

/// NIO's event loops as a task executor. `handoffd` prefers it for its whole run, so every task
/// and every actor without an executor of its own runs on the loop — which waits in epoll —
/// and nothing starts libdispatch's global pool (docs/platform.md, "Waiting without waking").
/// A task need not stay on one loop; `handoffd` has one anyway (`tuneProcessForStreams`).
final class EventLoopTasks: TaskExecutor, Sendable {
    private let group: any EventLoopGroup

    init(_ group: any EventLoopGroup) {
        self.group = group
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        group.next().execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
