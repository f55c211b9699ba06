#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonCore
import DaemonStreams
import HandoffAPI
import HandoffSystem
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `Upgrade: handoff-stream` on a connection's first request: the stream is opened (or taken)
/// while the client waits, then `101 Switching Protocols` and the connection is spliced to the
/// other device. A refusal is kept for the HTTP handling that follows, which answers it.
///
/// NIO asks for the answer with a future; the opening itself runs in the connection's own task
/// (`openWhenAsked`), so shutting the server down ends it like any request.
final class StreamUpgrader: NIOTypedHTTPServerProtocolUpgrader, Sendable {
    typealias UpgradeResult = LocalAPIServer.Negotiated

    private enum Stage {
        case waiting
        case prepared(ContinuationStreams.Prepared)
        case refused(LocalAPIError)
        case spliced
        case closed
    }

    /// An upgrade NIO waits on.
    private struct Asked: Sendable {
        let request: HTTPRequestHead
        let headers: HTTPHeaders
        let answer: EventLoopPromise<HTTPHeaders>
    }

    let supportedProtocol = StreamUpgrade.protocolName
    let requiredUpgradeHeaders: [String] = []
    private let router: LocalAPIRouter
    private let peer: PeerCredentials
    private let logger: Logger
    private let stage = Mutex(Stage.waiting)
    private let headReceived: @Sendable () -> Void
    /// The one upgrade a connection may ask for, between NIO and the connection's task.
    private let ask = Mutex(Ask.none)

    private enum Ask {
        case none
        case asked(Asked)
        case waiting(CheckedContinuation<Asked?, Never>)
        case over
    }

    init(router: LocalAPIRouter, peer: PeerCredentials, logger: Logger, headReceived: @escaping @Sendable () -> Void) {
        self.router = router
        self.peer = peer
        self.logger = logger
        self.headReceived = headReceived
    }

    var refusal: LocalAPIError? {
        stage.withLock { s in
            if case .refused(let e) = s { return e }
            return nil
        }
    }

    func buildUpgradeResponse(channel: any Channel, upgradeRequest: HTTPRequestHead, initialResponseHeaders: HTTPHeaders) -> EventLoopFuture<HTTPHeaders> {
        // The request is whole (an upgrade has no body); opening the stream may take a while.
        headReceived()
        let promise = channel.eventLoop.makePromise(of: HTTPHeaders.self)
        let asked = Asked(request: upgradeRequest, headers: initialResponseHeaders, answer: promise)
        let taker = ask.withLock { a -> CheckedContinuation<Asked?, Never>?? in
            switch a {
            case .none:
                a = .asked(asked)
                return .some(nil)
            case .waiting(let taker):
                a = .over
                return taker
            case .asked, .over:
                return nil
            }
        }
        switch taker {
        case .some(.some(let taker)): taker.resume(returning: asked)
        case .some(.none): break
        case .none: promise.fail(ChannelError.ioOnClosedChannel)
        }
        return promise.futureResult
    }

    /// Run by the connection's task until the connection is negotiated: opens the stream if one
    /// is asked for, and answers NIO.
    func openWhenAsked() async {
        let next = await withTaskCancellationHandler {
            await withCheckedContinuation { (taker: CheckedContinuation<Asked?, Never>) in
                let now = ask.withLock { a -> Asked?? in
                    switch a {
                    case .none:
                        a = .waiting(taker)
                        return nil
                    case .asked(let asked):
                        a = .over
                        return .some(asked)
                    case .waiting, .over:
                        return .some(nil)
                    }
                }
                if let now { taker.resume(returning: now) }
            }
        } onCancel: {
            negotiated()
        }
        guard let next else { return }
        do {
            next.answer.succeed(try await open(next.request, headers: next.headers))
        } catch {
            next.answer.fail(error)
        }
    }

    /// The connection is HTTP or a stream now, or gone: nothing more will be asked, and what was
    /// asked and not taken is refused.
    func negotiated() {
        let left = ask.withLock { a -> Ask in
            defer { a = .over }
            return a
        }
        switch left {
        case .waiting(let taker): taker.resume(returning: nil)
        case .asked(let asked): asked.answer.fail(ChannelError.ioOnClosedChannel)
        case .none, .over: break
        }
    }

    private func open(_ request: HTTPRequestHead, headers initial: HTTPHeaders) async throws -> HTTPHeaders {
        let prepared: ContinuationStreams.Prepared
        do {
            prepared = try await router.streams.prepareStream(request, peer: peer)
        } catch {
            stage.withLock { $0 = .refused(error) }
            throw error
        }
        let kept = stage.withLock { s -> Bool in
            guard case .waiting = s else { return false }
            s = .prepared(prepared)
            return true
        }
        // The app hung up while the stream was being opened.
        guard kept else {
            prepared.abandon()
            throw ChannelError.ioOnClosedChannel
        }
        var headers = initial
        headers.add(name: StreamUpgrade.streamIDHeader, value: prepared.record.id.lowercasedString)
        return headers
    }

    func upgrade(channel: any Channel, upgradeRequest: HTTPRequestHead) -> EventLoopFuture<LocalAPIServer.Negotiated> {
        let prepared = stage.withLock { s -> ContinuationStreams.Prepared? in
            guard case .prepared(let p) = s else { return nil }
            s = .spliced
            return p
        }
        guard let prepared else { return channel.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel) }
        // Synchronously: bytes the app sent right after its request are handed on as soon as this returns.
        prepared.splice(to: channel, logger: logger)
        return channel.eventLoop.makeSucceededFuture(.stream)
    }

    /// A stream opened for a connection that closed before it became the pipe is given up.
    func connectionClosed() {
        negotiated()
        let orphan = stage.withLock { s -> ContinuationStreams.Prepared? in
            defer { if case .spliced = s {} else { s = .closed } }
            if case .prepared(let p) = s { return p }
            return nil
        }
        orphan?.abandon()
    }
}
