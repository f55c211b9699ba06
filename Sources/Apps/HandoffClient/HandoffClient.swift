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

    /// Sends a request and waits for its answer (`LocalAPICall` lists them all).
    public func send<Answer>(_ call: LocalAPICall<Answer>) throws(HandoffClientError) -> Answer {
        let body = try answerBody(of: call.request)
        do {
            return try LocalAPIJSON.decoder().decode(Answer.self, from: Data(body))
        } catch {
            let (method, path) = Self.request(call.request.endpoint, call.request.path)
            throw HandoffClientError(
                .protocolError,
                "handoffd's answer to \(method) \(path) is not what this handoffctl expects; are both the same version?",
                cause: CauseText("\(error)")
            )
        }
    }

    /// Sends a request and returns its answer's JSON as the daemon wrote it, undecoded: for a
    /// caller that only passes (part of) it on.
    public func answerBody<Answer>(_ call: LocalAPICall<Answer>) throws(HandoffClientError) -> [UInt8] {
        try answerBody(of: call.request)
    }

    /// The same for a request without its answer's type, such as `handoffctl continue --json`
    /// (`LocalAPIRequest` says why).
    public func answerBody(of call: LocalAPIRequest) throws(HandoffClientError) -> [UInt8] {
        let (method, path) = Self.request(call.endpoint, call.path)
        var body = call.bodyJSON
        if body == nil, let value = call.body { body = try encode(value) }
        let connection = try UnixHTTPConnection(socketPath: socketPath, timeoutSeconds: max(timeoutSeconds, call.patience))
        try connection.send(method: method, path: path, body: body)
        let response = try connection.readResponse()
        guard (200..<300).contains(response.status) else {
            throw HandoffClient.apiError(status: response.status, body: response.body)
        }
        return response.body
    }

    /// Subscribes, and returns once the daemon has accepted the subscription (its first line
    /// may still be on the way).
    public func subscribe<Element>(_ subscription: LocalAPISubscription<Element>) throws(HandoffClientError) -> NDJSONSubscription<Element> {
        let (method, path) = Self.request(subscription.endpoint, nil)
        let body = try subscription.body.map { body throws(HandoffClientError) in try encode(body) }
        let connection = try UnixHTTPConnection(socketPath: socketPath, timeoutSeconds: nil)
        try connection.send(method: method, path: path, body: body)
        let head = try connection.readHead()
        guard head.status == 200 else {
            let body = (try? connection.readRemainingBody(head)) ?? []
            throw HandoffClient.apiError(status: head.status, body: body)
        }
        return NDJSONSubscription(connection: connection, chunked: head.header("transfer-encoding") != nil)
    }

    /// A continuation stream as a byte pipe on the API socket.
    public func pipe(_ stream: LocalAPIStream) throws(HandoffClientError) -> StreamPipe {
        // Opening reaches the other device, which may take a TLS handshake or two.
        let connection = try UnixHTTPConnection(socketPath: socketPath, timeoutSeconds: max(timeoutSeconds, 30))
        try connection.send(method: LocalAPIEndpoints.method(of: stream.endpoint), path: stream.path, body: nil, upgrade: StreamUpgrade.protocolName)
        // Byte by byte: the stream's first bytes may follow the 101 at once, and belong to the app.
        let head = try connection.readHeadExactly()
        guard head.status == 101 else {
            let body = (try? connection.readRemainingBody(head)) ?? []
            throw HandoffClient.apiError(status: head.status, body: body)
        }
        guard let idText = head.header(StreamUpgrade.streamIDHeader), let id = UUID(uuidString: idText) else {
            throw HandoffClientError(.protocolError, "handoffd switched to a stream without naming it; are handoffctl and handoffd the same version?")
        }
        return StreamPipe(id: id, connection: connection)
    }

    /// A continuation stream whose end here is `file`, read (`send`) or written (`receive`) by
    /// handoffd (docs/local-api.md, "The file socket"). The descriptor is only lent: it stays
    /// the caller's to close.
    public func fileStream(_ stream: LocalAPIStream, file: Int32, role: FileStreamRequest.Role) throws(HandoffClientError) -> FileStream {
        try FileStream(socketPath: socketPath, request: FileStreamRequest(path: stream.path, role: role), file: file, timeoutSeconds: max(timeoutSeconds, 30))
    }

    // MARK: Plumbing

    private func encode(_ value: any Encodable) throws(HandoffClientError) -> [UInt8] {
        do {
            return Array(try LocalAPIJSON.encoder().encode(value))
        } catch {
            throw HandoffClientError(.protocolError, "cannot encode the request: \(error)")
        }
    }

    private static func request(_ endpoint: LocalAPIEndpoints.Endpoint, _ path: String?) -> (method: String, path: String) {
        (LocalAPIEndpoints.method(of: endpoint), path ?? LocalAPIEndpoints.path(of: endpoint) ?? "/")
    }

    static func apiError(status: Int, body: [UInt8]) -> HandoffClientError {
        if let decoded = try? LocalAPIJSON.decoder().decode(APIErrorBody.self, from: Data(body)) {
            return HandoffClientError(.api(decoded.error.code), decoded.error.message)
        }
        return HandoffClientError(.protocolError, "handoffd answered HTTP \(status) without an explanation")
    }
}

/// The daemon's event stream.
public typealias EventSubscription = NDJSONSubscription<LocalEvent>

/// A live NDJSON answer (events, an invite). Blocking: `next()` waits for the next line.
/// One reader at a time: calls to `next` must not overlap (the stream is a single connection).
public final class NDJSONSubscription<Element: Decodable & Sendable>: @unchecked Sendable {
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

    /// Ends the subscription now (an app quitting, a watcher stopping): handoffd sees the
    /// connection close; a `next` waiting on it returns nil.
    public func close() {
        connection.hangUp()
    }

    /// The next element, or nil when the stream ends (daemon stopped, invite settled).
    public func next() throws(HandoffClientError) -> Element? {
        guard let line = try nextLine() else { return nil }
        do {
            return try LocalAPIJSON.decoder().decode(Element.self, from: Data(line))
        } catch {
            throw HandoffClientError(.protocolError, "handoffd sent a line this handoffctl cannot read", cause: CauseText("\(error)"))
        }
    }
}

/// A cause that is only text (what a decoder said), for `HandoffClientError.cause`.
public struct CauseText: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

extension UnixHTTPConnection {
    func readRemainingBody(_ head: Head) throws(HandoffClientError) -> [UInt8] {
        if let length = head.contentLength {
            var body: [UInt8] = []
            while body.count < length, let more = try readAvailable() { body += more }
            return Array(body.prefix(length))
        }
        return []
    }
}

extension HandoffClient {
    /// Reads an event-stream answer — status line, headers, then NDJSON lines (chunked or not) —
    /// from a descriptor already connected to whatever sends it, as `events()` does from handoffd;
    /// returns how many events decoded before the end or the first error. For the fuzz harness
    /// (`make fuzz`), which feeds recorded and mutated answers through a socket pair.
    package static func readEventStream(connected fd: Int32, maximumEvents: Int) -> Int {
        let connection = UnixHTTPConnection(connected: fd, name: "fuzz")
        guard let head = try? connection.readHead(), head.status == 200 else { return 0 }
        let events = NDJSONSubscription<LocalEvent>(connection: connection, chunked: head.header("transfer-encoding") != nil)
        var count = 0
        while count < maximumEvents, (try? events.next()) != nil { count += 1 }
        return count
    }
}
