#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffModel

/// The local API, as calls. Used by `handoffctl` and by Swift apps; speaks only to the socket, so it
/// links neither OpenSSL nor dns_sd.
public struct HandoffClient: Sendable {
    public var socketPath: String
    /// Seconds to wait for an answer (not applied to the event stream).
    public var timeoutSeconds: Int

    public init(socketPath: String = HandoffPaths.defaultSocketPath(), timeoutSeconds: Int = 30) {
        self.socketPath = socketPath
        self.timeoutSeconds = timeoutSeconds
    }

    public func status() throws(HandoffClientError) -> DaemonStatus {
        try call("GET", LocalAPIRoute.status)
    }

    public func currentActivity() throws(HandoffClientError) -> CurrentActivityResponse {
        try call("GET", LocalAPIRoute.currentActivity)
    }

    public func becomeCurrent(_ request: PutCurrentActivityRequest) throws(HandoffClientError) -> CurrentActivityResponse {
        let body: [UInt8]
        do {
            body = Array(try LocalAPIJSON.encoder().encode(request))
        } catch {
            throw HandoffClientError(.protocolError, "cannot encode the activity: \(error)")
        }
        return try call("PUT", LocalAPIRoute.currentActivity, body: body)
    }

    public func resignCurrent() throws(HandoffClientError) -> ResignResponse {
        try call("DELETE", LocalAPIRoute.currentActivity)
    }

    /// Subscribes to the daemon's events. Returns once the daemon has accepted the subscription,
    /// so nothing that happens after this call is missed.
    public func events() throws(HandoffClientError) -> EventSubscription {
        let connection = try UnixHTTPConnection(socketPath: socketPath, timeoutSeconds: nil)
        try connection.send(method: "GET", path: LocalAPIRoute.events, body: nil)
        let (status, headers) = try connection.readHead()
        guard status == 200 else {
            let body = (try? connection.readRemainingBody(headers: headers)) ?? []
            throw HandoffClient.apiError(status: status, body: body)
        }
        return EventSubscription(connection: connection, chunked: headers.contains { $0.0 == "transfer-encoding" })
    }

    // MARK: Plumbing

    private func call<Response: Decodable>(_ method: String, _ path: String, body: [UInt8]? = nil)
        throws(HandoffClientError) -> Response
    {
        let connection = try UnixHTTPConnection(socketPath: socketPath, timeoutSeconds: timeoutSeconds)
        try connection.send(method: method, path: path, body: body)
        let response = try connection.readResponse()
        guard (200..<300).contains(response.status) else {
            throw HandoffClient.apiError(status: response.status, body: response.body)
        }
        do {
            return try LocalAPIJSON.decoder().decode(Response.self, from: Data(response.body))
        } catch {
            throw HandoffClientError(
                .protocolError,
                "handoffd's answer to \(method) \(path) is not what this handoffctl expects; are both the same version?",
                cause: CauseText("\(error)")
            )
        }
    }

    static func apiError(status: Int, body: [UInt8]) -> HandoffClientError {
        if let decoded = try? LocalAPIJSON.decoder().decode(APIErrorBody.self, from: Data(body)) {
            return HandoffClientError(.api(decoded.error.code), decoded.error.message)
        }
        return HandoffClientError(.protocolError, "handoffd answered HTTP \(status) without an explanation")
    }
}

/// A live `GET /v1/events` stream. Blocking: `next()` waits for the next event.
/// One reader at a time: calls to `next` must not overlap (the stream is a single connection).
public final class EventSubscription: @unchecked Sendable {
    private let connection: UnixHTTPConnection
    private let chunked: Bool
    private var pending: [UInt8] = []
    private var ended = false

    init(connection: UnixHTTPConnection, chunked: Bool) {
        self.connection = connection
        self.chunked = chunked
    }

    /// The next event line exactly as the daemon sent it, or nil when the stream ends.
    public func nextLine() throws(HandoffClientError) -> [UInt8]? {
        while true {
            if let nl = pending.firstIndex(of: 0x0A) {
                let line = Array(pending[..<nl])
                pending.removeFirst(nl + 1)
                if line.isEmpty { continue }
                return line
            }
            if ended { return nil }
            let more = chunked ? try connection.readChunk(endOnClose: true) : try connection.readAvailable()
            guard let more else {
                ended = true
                return nil
            }
            pending += more
        }
    }

    /// The next event, or nil when the stream ends (daemon stopped).
    public func next() throws(HandoffClientError) -> LocalEvent? {
        guard let line = try nextLine() else { return nil }
        do {
            return try LocalAPIJSON.decoder().decode(LocalEvent.self, from: Data(line))
        } catch {
            throw HandoffClientError(.protocolError, "handoffd sent an event this handoffctl cannot read", cause: CauseText("\(error)"))
        }
    }
}

/// A cause that is only text (what a decoder said), for `HandoffClientError.cause`.
public struct CauseText: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

extension UnixHTTPConnection {
    func readRemainingBody(headers: [(String, String)]) throws(HandoffClientError) -> [UInt8] {
        if let length = headers.first(where: { $0.0 == "content-length" }).flatMap({ Int($0.1) }) {
            var body: [UInt8] = []
            while body.count < length, let more = try readAvailable() { body += more }
            return Array(body.prefix(length))
        }
        return []
    }
}
