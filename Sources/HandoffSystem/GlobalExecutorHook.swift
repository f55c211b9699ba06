import CHandoffLinux

/// Where Swift Concurrency runs tasks that belong to no actor with an executor of its own: set
/// once, first thing in a program's entry point, before any task runs (docs/platform.md,
/// "Waiting without waking"). handoffd sends them to its NIO event loop.
public enum GlobalExecutorHook {
    /// The runtime's hook: the job, and the runtime's own enqueue (not used).
    public typealias Hook = @convention(thin) (UnownedJob, @convention(thin) (UnownedJob) -> Void) -> Void

    public static func install(_ hook: Hook) {
        withUnsafeTemporaryAllocation(of: Hook.self, capacity: 1) { slot in
            slot.baseAddress!.initialize(to: hook)
            slot.baseAddress!.withMemoryRebound(to: UnsafeMutableRawPointer.self, capacity: 1) { handoff_set_global_enqueue_hook($0.pointee) }
        }
    }
}
