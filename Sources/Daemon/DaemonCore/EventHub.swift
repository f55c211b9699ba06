import HandoffAPI
import Synchronization

/// Fans local events out to every `GET /v1/events` subscriber.
///
/// A subscriber that falls more than `bufferLimit` events behind is disconnected rather than fed
/// a silently gappy stream: its stream ends, and a client that reconnects starts clean.
public final class EventHub: Sendable {
    private struct State {
        var subscribers: [Int: AsyncStream<LocalEvent>.Continuation] = [:]
        var nextID = 0
    }

    private let state = Mutex(State())
    private let bufferLimit: Int

    public init(bufferLimit: Int = 1024) {
        self.bufferLimit = bufferLimit
    }

    public func subscribe() -> AsyncStream<LocalEvent> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: LocalEvent.self,
            bufferingPolicy: .bufferingOldest(bufferLimit)
        )
        let id = state.withLock { s in
            defer { s.nextID += 1 }
            s.subscribers[s.nextID] = continuation
            return s.nextID
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    public func publish(_ event: LocalEvent) {
        let subscribers = state.withLock { Array($0.subscribers.values) }
        for continuation in subscribers {
            if case .dropped = continuation.yield(event) {
                continuation.finish()
            }
        }
    }

    public var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// Ends every stream (daemon shutdown).
    public func finishAll() {
        let subscribers = state.withLock { s in
            defer { s.subscribers.removeAll() }
            return Array(s.subscribers.values)
        }
        for continuation in subscribers { continuation.finish() }
    }
}
