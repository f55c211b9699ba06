import Foundation
import Testing

/// The tests that load the machine — simulated hosts (a D-Bus, an avahi-daemon and daemons per
/// host), browsers, X servers and session buses, floods, gigabytes through streams — share one
/// limit: on a 2-core machine, all of them at once made everything else late (a load of 14, and
/// deadlines missed all over the suite). There are `HANDOFF_HEAVY_SLOTS` slots (2 unless set);
/// a `.heavy` test takes one, a `.heaviest` one (two browsers, floods, gigabytes: both cores
/// busy) takes them all. Unit and in-process tests go on in parallel around them
/// (docs/testing.md).
///
/// On a suite (`@Suite(.heavy)`), each of its tests takes the slot for its whole run — all its
/// arguments — and outside its time limit: a test that waits its turn is not a test that hangs.
public struct HeavyTrait: SuiteTrait, TestTrait, TestScoping {
    /// How many slots the test takes.
    let weight: Int

    public var isRecursive: Bool { true }

    /// Whether the calling task runs in a heavy test's slot: what builds hosts, browsers or
    /// desktops checks it (`Rig.up`, `DesktopSession`), so that none escapes the limit.
    @TaskLocal public static var holdsASlot = false

    /// Once per test function, around all its cases — not for the suite, whose tests take
    /// their own.
    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        test.isSuite || testCase != nil ? nil : self
    }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        // `.heavy` on a test of a `.heavy` suite would wait for a second slot while holding one:
        // with a `.heaviest` test queued, nobody would ever run again.
        guard !HeavyTrait.holdsASlot else {
            Issue.record("\(test.name) holds a heavy slot already: mark its suite or the test, not both (docs/testing.md)")
            return
        }
        let taken = await HeavySlots.shared.acquire(weight)
        defer { HeavySlots.shared.release(taken) }
        try await HeavyTrait.$holdsASlot.withValue(true) { try await function() }
    }

    /// Records an issue when called outside a heavy test.
    public static func mustHoldASlot(_ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        guard !holdsASlot else { return }
        Issue.record("\(what) outside a .heavy test: mark its suite @Suite(.heavy) (docs/testing.md)", sourceLocation: sourceLocation)
    }
}

extension Trait where Self == HeavyTrait {
    /// These tests load the machine: each takes one of the heavy tests' slots (`HeavyTrait`).
    public static var heavy: Self { HeavyTrait(weight: 1) }
    /// These tests keep both cores busy: each takes every slot, running alone among the heavy.
    public static var heaviest: Self { HeavyTrait(weight: .max) }
}

/// A counting semaphore for async code, first come first served (a test that needs every slot
/// is not overtaken for ever by ones that need one).
final class HeavySlots: @unchecked Sendable {
    static let shared = HeavySlots(count: ProcessInfo.processInfo.environment["HANDOFF_HEAVY_SLOTS"].flatMap(Int.init).map { max(1, $0) } ?? 2)

    private let lock = NSLock()
    private let count: Int
    private var free: Int
    private var waiting: [(weight: Int, continuation: CheckedContinuation<Void, Never>)] = []

    init(count: Int) {
        self.count = count
        free = count
    }

    /// Waits for `weight` slots (at most all of them); returns how many it took.
    func acquire(_ weight: Int) async -> Int {
        let weight = min(weight, count)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = lock.withLock { () -> Bool in
                guard waiting.isEmpty, free >= weight else {
                    waiting.append((weight, continuation))
                    return false
                }
                free -= weight
                return true
            }
            if now { continuation.resume() }
        }
        return weight
    }

    /// Gives back `weight` slots, and lets in whoever waits first while there is room for them.
    func release(_ weight: Int) {
        let next = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
            free += weight
            var admitted: [CheckedContinuation<Void, Never>] = []
            while let first = waiting.first, first.weight <= free {
                free -= first.weight
                admitted.append(waiting.removeFirst().continuation)
            }
            return admitted
        }
        next.forEach { $0.resume() }
    }
}
