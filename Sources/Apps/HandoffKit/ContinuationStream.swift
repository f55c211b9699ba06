#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffClient

/// A byte stream between the app that continued an activity and the app it came from, inside
/// the devices' mutual TLS (docs/local-api.md, "Continuation streams"). Each direction ends on
/// its own: `finishWriting()` when done sending, then read until `read` returns nothing.
///
/// Back-pressured: `write` returns once the bytes are on their way, and waits while the other
/// app is not reading, so neither daemon holds more than its buffers.
public final class ContinuationStream: Sendable {
    public let id: UUID
    private let pipe: StreamPipe
    private let client: HandoffClient

    init(_ pipe: StreamPipe, client: HandoffClient) {
        id = pipe.id
        self.pipe = pipe
        self.client = client
    }

    /// Up to `maximum` bytes as they arrive; empty once the other app finished writing.
    public func read(maximum: Int = 64 * 1024) async throws(HandoffError) -> [UInt8] {
        do {
            return try await pipe.read(maximum: maximum)
        } catch {
            throw HandoffError(error)
        }
    }

    /// Everything until the other app finishes writing (at most `limit` bytes; more is an error).
    public func readToEnd(limit: Int = 64 * 1024 * 1024) async throws(HandoffError) -> [UInt8] {
        do throws(HandoffClientError) {
            let all = try await pipe.readToEnd(limit: limit)
            guard all.count <= limit else { throw HandoffClientError(.protocolError, "the stream carries more than \(limit) bytes") }
            return all
        } catch {
            throw HandoffError(error)
        }
    }

    public func write(_ bytes: [UInt8]) async throws(HandoffError) {
        do {
            try await pipe.write(bytes)
        } catch {
            throw HandoffError(error)
        }
    }

    /// Done sending; the other app reads to its end. Reading goes on.
    public func finishWriting() {
        pipe.finishWriting()
    }

    /// Ends both directions now. Closing before everything owed arrived fails the stream.
    public func close() {
        pipe.close()
    }

    /// Whether the stream ended whole: `completed` only if both directions ended in order
    /// (waits up to 10 s for the other side).
    public func completed() async throws(HandoffError) -> Bool {
        do {
            return try await client.send(.stream(id, waitForOutcome: true)).state == .completed
        } catch {
            throw HandoffError(error)
        }
    }
}
