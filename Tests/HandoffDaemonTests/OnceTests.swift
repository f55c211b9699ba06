import HandoffTestSupport
import Testing
@testable import DaemonCore

/// `Once.value(within:)`, the one way the daemon waits for something with a deadline.
@Suite(.timeLimit(.minutes(1))) struct OnceTests {
    @Test func aValueSetBeforeOrWhileWaitingIsReturned() async throws {
        let set = Once<Int>()
        set.settle(1)
        #expect(await set.value(within: .seconds(60)) == 1)
        let later = Once<Int>()
        async let waited = later.value(within: .seconds(60))
        try await waitUntil("the wait begun") { later.waiting == 1 }
        later.settle(2)
        later.settle(3)  // only the first counts
        #expect(await waited == 2)
        #expect(await later.value == 2)
    }

    @Test func noValueInTimeIsNil() async {
        #expect(await Once<Int>().value(within: .zero) == nil)
    }

    @Test func aCancelledWaitEndsAtOnce() async throws {
        let never = Once<Int>()
        let waiter = Task { await never.value(within: .seconds(3600)) }
        try await waitUntil("the wait begun") { never.waiting == 1 }
        waiter.cancel()
        #expect(await waiter.value == nil)
        #expect(never.waiting == 0)
        never.settle(4)  // nobody is left waiting
        #expect(await never.value(within: .zero) == 4)
    }
}
