import Synchronization

/// Where a program's tasks run. On Linux Swift's default executor is libdispatch's global
/// queues, whose first worker starts a monitor that wakes the process every second for good
/// (docs/platform.md, "Waiting without waking"). So a program that idles — handoffd on its NIO
/// event loop, handoff-desktop on a thread of its own — runs its whole `main` preferring an
/// executor that sleeps while there is nothing to do (`withTaskExecutorPreference`: child
/// tasks and actors without an executor of their own follow it).
///
/// An unstructured task does not inherit the preference, so the few a program keeps are made
/// with `Task(executorPreference: ProgramExecutor.current)`. Where no program chose (tests
/// embedding a daemon), that is nil: Swift's default.
public enum ProgramExecutor {
    private static let chosen = Mutex<(any TaskExecutor)?>(nil)

    /// The executor the program runs on, if it chose one.
    public static var current: (any TaskExecutor)? {
        chosen.withLock { $0 }
    }

    /// Runs the program's `main` on `executor`. It starts where its caller is (the main thread),
    /// so that not even the first hop goes to the default executor.
    nonisolated(nonsending) public static func run(on executor: any TaskExecutor, _ main: @Sendable () async -> Void) async {
        chosen.withLock { $0 = executor }
        await withTaskExecutorPreference(executor) { await main() }
    }
}
