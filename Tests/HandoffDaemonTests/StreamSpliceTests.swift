import Foundation
import HandoffAPI
import HandoffModel
import HandoffTestSupport
import NIOCore
import NIOEmbedded
import Testing
@testable import DaemonCore
@testable import DaemonStreams

/// A splice's decisions by tables (`SpliceProgress`), then the glue that carries them out on NIO
/// testing channels: bytes both ways, an orderly end in each order, back-pressure, and a
/// connection lost early — each with exactly one outcome.
@Suite struct StreamSpliceTests {
    typealias Event = SpliceProgress.Event
    typealias Action = SpliceProgress.Action

    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let events: [Event]
        let actions: [Action]
        var testDescription: String { name }
    }

    static let flowing: [Event] = [.endAttached(.local), .endAttached(.peer)]

    static let rows: [Row] = [
        Row(name: "both ends in place start it", events: flowing, actions: [.nothing, .start]),
        Row(name: "one end alone waits", events: [.endAttached(.peer)], actions: [.nothing]),
        Row(
            name: "app ends first, then the device: complete once both are delivered",
            events: flowing + [.inputEnded(.local), .delivered(from: .local), .inputEnded(.peer), .delivered(from: .peer)],
            actions: [.nothing, .start, .nothing, .nothing, .nothing, .complete]
        ),
        Row(
            name: "device ends first, then the app",
            events: flowing + [.inputEnded(.peer), .delivered(from: .peer), .inputEnded(.local), .delivered(from: .local)],
            actions: [.nothing, .start, .nothing, .nothing, .nothing, .complete]
        ),
        Row(
            name: "a connection closing once both inputs ended is the orderly end",
            events: flowing + [.inputEnded(.local), .inputEnded(.peer), .closed(.peer), .delivered(from: .local), .delivered(from: .peer)],
            actions: [.nothing, .start, .nothing, .nothing, .nothing, .nothing, .complete]
        ),
        Row(
            name: "the device closing while it still sends fails it",
            events: flowing + [.inputEnded(.local), .delivered(from: .local), .closed(.peer)],
            actions: [.nothing, .start, .nothing, .nothing, .fail]
        ),
        Row(name: "the app closing mid-stream fails it", events: flowing + [.closed(.local)], actions: [.nothing, .start, .fail]),
        Row(name: "a connection closing before the other end is in place fails it", events: [.endAttached(.local), .closed(.local), .endAttached(.peer)], actions: [.nothing, .fail, .nothing]),
        Row(
            name: "one outcome: nothing after a failure",
            events: flowing + [.failed, .failed, .closed(.local), .delivered(from: .local), .delivered(from: .peer)],
            actions: [.nothing, .start, .fail, .nothing, .nothing, .nothing, .nothing]
        ),
        Row(
            name: "one outcome: nothing after completing",
            events: flowing + [.delivered(from: .local), .delivered(from: .peer), .closed(.local), .failed],
            actions: [.nothing, .start, .nothing, .complete, .nothing, .nothing]
        ),
        Row(name: "an error before anything flows fails it", events: [.failed, .endAttached(.local), .endAttached(.peer)], actions: [.fail, .nothing, .nothing]),
    ]

    @Test(arguments: rows) func decisions(row: Row) {
        var progress = SpliceProgress()
        #expect(row.events.map { progress.handle($0) } == row.actions)
    }

    // MARK: The glue on testing channels

    /// Stands in for what lets a real connection half-close (the TLS handler's close_notify, a
    /// TCP shutdown): an `EmbeddedChannel` would close altogether.
    final class HalfClose: ChannelOutboundHandler, @unchecked Sendable {
        typealias OutboundIn = Any
        var outputClosed = false
        var reads = 0

        func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
            guard mode == .output else { return context.close(mode: mode, promise: promise) }
            outputClosed = true
            promise?.succeed(())
        }

        func read(context: ChannelHandlerContext) {
            reads += 1
            context.read()
        }
    }

    struct Rig {
        let loop = EmbeddedEventLoop()
        let local: EmbeddedChannel
        let peer: EmbeddedChannel
        let localEnd = HalfClose()
        let peerEnd = HalfClose()
        let record: StreamRecord
        var released = false

        init() throws {
            local = EmbeddedChannel(handler: localEnd, loop: loop)
            peer = EmbeddedChannel(handler: peerEnd, loop: loop)
            for channel in [local, peer] {
                try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
            }
            let peerRef = LocalEvent.PeerRef(id: DeviceID(digest: Array(repeating: 7, count: 32)), name: "desk")
            record = StreamBook(events: EventHub()).makeRecord(id: UUID(), role: .resuming, peer: peerRef, activityID: UUID(), continuationID: UUID())
            let splice = StreamSplice(record: record, local: local, peer: peer, peerName: "desk", logger: TestLogger.make("splice"))
            let released = Once<Void>()
            splice.start { released.settle(()) }
            loop.run()
        }

        func inbound(_ channel: EmbeddedChannel, _ text: String) throws {
            try channel.writeInbound(ByteBuffer(string: text))
            loop.run()
        }

        func endInput(_ channel: EmbeddedChannel) {
            channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
            loop.run()
        }

        func written(_ channel: EmbeddedChannel) throws -> String {
            var text = ""
            while let buffer = try channel.readOutbound(as: ByteBuffer.self) { text += String(buffer: buffer) }
            return text
        }
    }

    @Test func bytesFlowBothWaysAndAreCounted() throws {
        let rig = try Rig()
        #expect(rig.record.info.state == .open)
        try rig.inbound(rig.local, "hello ")
        try rig.inbound(rig.local, "device")
        try rig.inbound(rig.peer, "hello app")
        #expect(try rig.written(rig.peer) == "hello device")
        #expect(try rig.written(rig.local) == "hello app")
        #expect(rig.record.info.bytesSent == 12 && rig.record.info.bytesReceived == 9)
    }

    @Test(arguments: [true, false]) func anOrderlyEndInEitherOrderCompletes(appFirst: Bool) throws {
        let rig = try Rig()
        try rig.inbound(rig.local, "question")
        try rig.inbound(rig.peer, "answer")
        let (first, second) = appFirst ? (rig.local, rig.peer) : (rig.peer, rig.local)
        let (firstOther, secondOther) = appFirst ? (rig.peerEnd, rig.localEnd) : (rig.localEnd, rig.peerEnd)
        rig.endInput(first)
        #expect(firstOther.outputClosed, "the other side's output is closed after the bytes before it")
        #expect(rig.record.info.state == .open, "a half-close is not the end")
        try rig.inbound(second, " still flowing")
        rig.endInput(second)
        #expect(secondOther.outputClosed)
        #expect(rig.record.info.state == .completed)
        #expect(!rig.local.isActive && !rig.peer.isActive, "both connections close once the stream completed")
        #expect(try rig.written(rig.peer).hasPrefix("question"))
    }

    @Test func theDeviceHangingUpEarlyFailsTheStreamOnce() throws {
        let rig = try Rig()
        try rig.inbound(rig.local, "half")
        try rig.peer.close().wait()
        rig.loop.run()
        #expect(rig.record.info.state == .failed)
        #expect(rig.record.info.error == "desk closed the stream before it ended")
        #expect(!rig.local.isActive, "the app's connection closes too")
    }

    @Test func aFullDeviceStopsTheAppsReadsUntilItDrains() throws {
        let rig = try Rig()
        rig.peer.isWritable = false
        let before = rig.localEnd.reads
        try rig.inbound(rig.local, "a lot")
        #expect(rig.localEnd.reads == before, "no read while the device cannot take more")
        rig.peer.isWritable = true
        rig.peer.pipeline.fireChannelWritabilityChanged()
        rig.loop.run()
        #expect(rig.localEnd.reads == before + 1, "one read once it drained")
        #expect(try rig.written(rig.peer) == "a lot")
    }
}
