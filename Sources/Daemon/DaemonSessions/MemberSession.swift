#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonAccounts
import DaemonCore
import DaemonDiscovery
import HandoffAPI
import HandoffModel
import HandoffPeer
import HandoffSystem
import HandoffTLS
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// An open, authenticated session with another device of the account.
package final class MemberSession: Sendable {
    package let peerID: DeviceID
    package let peerName: String
    let initiatedByUs: Bool
    let remote: String
    private let outbound: NIOAsyncChannelOutboundWriter<PeerMessage>
    private let channel: any Channel
    private let pending = Mutex<[UInt32: Once<Result<PeerMessage, any Error>>]>([:])
    private let nextID = Mutex<UInt32>(1)

    /// How long a request waits for its answer unless it says otherwise.
    private let requestTimeout: Duration

    init(
        peerID: DeviceID, peerName: String, initiatedByUs: Bool, remote: String, outbound: NIOAsyncChannelOutboundWriter<PeerMessage>, channel: any Channel,
        requestTimeout: Duration
    ) {
        self.requestTimeout = requestTimeout
        self.peerID = peerID
        self.peerName = peerName
        self.initiatedByUs = initiatedByUs
        self.remote = remote
        self.outbound = outbound
        self.channel = channel
    }

    var isOpen: Bool { channel.isActive }

    /// Returns once the connection has closed (ended by either side, replaced, or at shutdown).
    func closed() async {
        try? await channel.closeFuture.get()
    }

    package func send(_ message: PeerMessage) async throws {
        try await outbound.write(message)
    }

    /// Sends a request built around a fresh id and waits (at most `timeout`, else the daemon's
    /// `Deadlines.peerRequest`) for its answer.
    package func request(_ make: (UInt32) -> PeerMessage, timeout: Duration? = nil) async throws -> PeerMessage {
        let timeout = timeout ?? requestTimeout
        let id = nextID.withLock { n in
            defer { n &+= 1 }
            return n
        }
        let message = make(id)
        let answer = Once<Result<PeerMessage, any Error>>()
        pending.withLock { $0[id] = answer }
        defer { pending.withLock { _ = $0.removeValue(forKey: id) } }
        // The time allowed covers the write: a peer that stops reading fills the connection. A
        // timer of the session's event loop, not a sleeping task: arming and cancelling it wakes
        // no other thread (a request is on the path of every `continue`).
        let timer = channel.eventLoop.scheduleTask(in: TimeAmount(timeout)) { answer.settle(.failure(PeerRequestTimeout())) }
        defer { timer.cancel() }
        let outbound = self.outbound
        // Left unawaited, the write is cancelled when this returns (an answer, or the timer).
        async let _ = { do { try await outbound.write(message) } catch { answer.settle(.failure(error)) } }()
        guard let result = await answer.valueUnlessCancelled() else {
            throw CancellationError()
        }
        return try result.get()
    }

    /// Delivers an answer (or a failure) to whoever waits for request `id`; later ones are ignored.
    func settle(_ id: UInt32, _ result: Result<PeerMessage, any Error>) {
        pending.withLock { $0.removeValue(forKey: id) }?.settle(result)
    }

    func failAll(_ error: any Error) {
        let waiting = pending.withLock { p -> [Once<Result<PeerMessage, any Error>>] in
            defer { p.removeAll() }
            return Array(p.values)
        }
        waiting.forEach { $0.settle(.failure(error)) }
    }

    func close() {
        channel.close(promise: nil)
    }
}

package struct PeerRequestTimeout: Error, CustomStringConvertible {
    package init() {}
    package var description: String { "the other device did not answer in time" }
}
