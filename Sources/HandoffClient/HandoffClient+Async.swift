import Dispatch
import HandoffAPI

/// The same calls for async code. The socket I/O is blocking, so it runs on its own dispatch
/// queue: blocking a thread of Swift's small cooperative pool could starve every other task in
/// the process (an app's UI work, or a daemon running in the same process, as in our tests).
extension HandoffClient {
    public func status() async throws(HandoffClientError) -> DaemonStatus {
        try await offloaded { () throws(HandoffClientError) in try self.status() }
    }

    public func currentActivity() async throws(HandoffClientError) -> CurrentActivityResponse {
        try await offloaded { () throws(HandoffClientError) in try self.currentActivity() }
    }

    public func becomeCurrent(_ request: PutCurrentActivityRequest) async throws(HandoffClientError)
        -> CurrentActivityResponse
    {
        try await offloaded { () throws(HandoffClientError) in try self.becomeCurrent(request) }
    }

    public func resignCurrent() async throws(HandoffClientError) -> ResignResponse {
        try await offloaded { () throws(HandoffClientError) in try self.resignCurrent() }
    }

    public func events() async throws(HandoffClientError) -> EventSubscription {
        try await offloaded { () throws(HandoffClientError) in try self.events() }
    }
}

extension EventSubscription {
    /// The next event, waiting on a dispatch queue rather than a cooperative thread.
    public func next() async throws(HandoffClientError) -> LocalEvent? {
        try await offloaded { () throws(HandoffClientError) in try self.next() }
    }
}

func offloaded<T: Sendable>(_ body: @escaping @Sendable () throws(HandoffClientError) -> T) async throws(HandoffClientError) -> T {
    let result: Result<T, HandoffClientError> = await withCheckedContinuation { continuation in
        DispatchQueue(label: "handoff.client").async {
            continuation.resume(returning: Result { () throws(HandoffClientError) in try body() })
        }
    }
    return try result.get()
}
