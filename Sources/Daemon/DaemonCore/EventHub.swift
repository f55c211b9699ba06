import HandoffAPI
import Synchronization

/// Fans local events out to every `GET /v1/events` subscriber.
///
/// A subscriber that falls more than `bufferLimit` events behind is disconnected rather than fed
/// a silently gappy stream: its stream ends, and a client that reconnects starts clean.
public final class EventHub: Sendable {
    private struct State {
        var subscribers: [Int: Subscriber] = [:]
        var nextID = 0
    }

    private struct Subscriber {
        var continuation: AsyncStream<LocalEvent>.Continuation
        var wants: (@Sendable (LocalEvent) -> Bool)?
    }

    private let state = Mutex(State())
    private let bufferLimit: Int

    public init(bufferLimit: Int = 1024) {
        self.bufferLimit = bufferLimit
    }

    /// `only`: the events this subscriber takes; the others are not given to it, so they never
    /// wake the thread it runs on (the history's, on every `continue`).
    public func subscribe(only wants: (@Sendable (LocalEvent) -> Bool)? = nil) -> AsyncStream<LocalEvent> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: LocalEvent.self,
            bufferingPolicy: .bufferingOldest(bufferLimit)
        )
        let id = state.withLock { s in
            defer { s.nextID += 1 }
            s.subscribers[s.nextID] = Subscriber(continuation: continuation, wants: wants)
            return s.nextID
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    public func publish(_ event: LocalEvent) {
        let subscribers = state.withLock { Array($0.subscribers.values) }
        for subscriber in subscribers where subscriber.wants?(event) ?? true {
            if case .dropped = subscriber.continuation.yield(event) {
                subscriber.continuation.finish()
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
        for subscriber in subscribers { subscriber.continuation.finish() }
    }
}
