import NIOCore
import NIOEmbedded
import Testing
@testable import DaemonLocalAPI

/// `RequestDeadline` on an embedded event loop, its clock moved by hand: a connection without a
/// whole request in time is closed; a request that arrived disarms it; and once the connection
/// has closed, no timer is left behind — not even one armed by the answer written last.
@Suite struct RequestDeadlineTests {
    let timeout = TimeAmount.seconds(10)

    /// A connected channel, its deadline, and the loop whose clock the test moves.
    func connection() throws -> (EmbeddedEventLoop, EmbeddedChannel, RequestDeadline) {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/deadline-test")).wait()
        return (loop, channel, RequestDeadline(channel: channel, timeout: timeout))
    }

    @Test func anArmedDeadlineClosesTheConnectionWhenItPasses() throws {
        let (loop, channel, deadline) = try connection()
        deadline.arm()
        loop.advanceTime(by: timeout - .milliseconds(1))
        #expect(channel.isActive)
        loop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
    }

    @Test func aDisarmedOrReplacedDeadlineDoesNotFire() throws {
        let (loop, channel, deadline) = try connection()
        deadline.arm()
        deadline.disarm()
        loop.advanceTime(by: timeout * 2)
        #expect(channel.isActive)
        // Armed again after an answer: the new deadline counts from then, the old one is gone.
        deadline.arm()
        loop.advanceTime(by: timeout - .seconds(1))
        deadline.arm()
        loop.advanceTime(by: .seconds(2))
        #expect(channel.isActive)
        loop.advanceTime(by: timeout)
        #expect(!channel.isActive)
    }

    @Test func anEndedDeadlineLeavesNoTimerAndCannotBeArmedAgain() throws {
        let (loop, channel, deadline) = try connection()
        deadline.arm()
        deadline.end()
        deadline.arm()  // the last answer's end, written as the connection closes
        var fired = false
        // Nothing scheduled before this one may still be due: the loop runs due tasks in order.
        let probe = loop.scheduleTask(in: timeout * 2) { fired = true }
        loop.advanceTime(by: timeout * 2)
        #expect(fired)
        #expect(channel.isActive, "a deadline fired after the connection ended")
        _ = probe
    }
}
