import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffModel

/// The same requests for async code. The socket I/O is blocking, so it runs on its own dispatch
/// queue: blocking a thread of Swift's small cooperative pool could starve every other task in
/// the process (an app's UI work, or a daemon running in the same process, as in our tests).
extension HandoffClient {
    public func send<Answer>(_ call: LocalAPICall<Answer>) async throws(HandoffClientError) -> Answer {
        try await offloaded { () throws(HandoffClientError) in try self.send(call) }
    }

    public func subscribe<Element>(_ subscription: LocalAPISubscription<Element>) async throws(HandoffClientError) -> NDJSONSubscription<Element> {
        try await offloaded { () throws(HandoffClientError) in try self.subscribe(subscription) }
    }

    public func pipe(_ stream: LocalAPIStream) async throws(HandoffClientError) -> StreamPipe {
        try await offloaded { () throws(HandoffClientError) in try self.pipe(stream) }
    }

    public func fileStream(_ stream: LocalAPIStream, file: Int32, role: FileStreamRequest.Role) async throws(HandoffClientError) -> FileStream {
        try await offloaded { () throws(HandoffClientError) in try self.fileStream(stream, file: file, role: role) }
    }
}

extension FileStream {
    public func outcome(withinSeconds seconds: Int = 0) async throws(HandoffClientError) -> StreamInfo {
        try await offloaded { () throws(HandoffClientError) in try self.outcome(withinSeconds: seconds) }
    }
}

extension StreamPipe {
    /// Everything until the other app finishes, waiting on a dispatch queue.
    public func readToEnd(limit: Int = 1 << 30) async throws(HandoffClientError) -> [UInt8] {
        try await offloaded { () throws(HandoffClientError) in
            var all: [UInt8] = []
            while all.count <= limit {
                let chunk = try self.read(maximum: 256 * 1024)
                if chunk.isEmpty { break }
                all += chunk
            }
            return all
        }
    }

    /// Up to `maximum` bytes as they arrive (empty at the end), waiting on a dispatch queue.
    public func read(maximum: Int) async throws(HandoffClientError) -> [UInt8] {
        try await offloaded { () throws(HandoffClientError) in try self.read(maximum: maximum) }
    }

    public func write(_ bytes: [UInt8]) async throws(HandoffClientError) {
        try await offloaded { () throws(HandoffClientError) in try self.write(bytes) }
    }
}

extension NDJSONSubscription {
    /// The next element, waiting on a dispatch queue rather than a cooperative thread.
    public func next() async throws(HandoffClientError) -> Element? {
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
