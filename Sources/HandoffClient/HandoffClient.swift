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
        try call(.status)
    }

    /// The device's settings (the handoff switch).
    public func settings() throws(HandoffClientError) -> DeviceSettings {
        try call(.getSettings)
    }

    /// Changes the device's settings; answers them as they now are.
    public func changeSettings(_ change: SettingsChange) throws(HandoffClientError) -> DeviceSettings {
        try call(.putSettings, body: try encode(change))
    }

    public func currentActivity() throws(HandoffClientError) -> CurrentActivityResponse {
        try call(.getCurrent)
    }

    public func becomeCurrent(_ request: PutCurrentActivityRequest) throws(HandoffClientError) -> CurrentActivityResponse {
        let body: [UInt8]
        do {
            body = Array(try LocalAPIJSON.encoder().encode(request))
        } catch {
            throw HandoffClientError(.protocolError, "cannot encode the activity: \(error)")
        }
        return try call(.putCurrent, body: body)
    }

    public func resignCurrent() throws(HandoffClientError) -> ResignResponse {
        try call(.deleteCurrent)
    }

    /// Subscribes to the daemon's events. Returns once the daemon has accepted the subscription,
    /// so nothing that happens after this call is missed.
    public func events() throws(HandoffClientError) -> EventSubscription {
        try subscribe(.events)
    }

    // MARK: Account and devices

    public func account() throws(HandoffClientError) -> AccountInfo {
        try call(.getAccount)
    }

    public func createAccount(_ request: CreateAccountRequest) throws(HandoffClientError) -> AccountInfo {
        try call(.createAccount, body: try encode(request))
    }

    /// Joining talks to another device; it may take a while.
    public func joinAccount(_ request: JoinAccountRequest) throws(HandoffClientError) -> AccountInfo {
        try call(.joinAccount, body: try encode(request), timeoutSeconds: max(timeoutSeconds, 90))
    }

    /// Creates an invite: the first update carries the code; then one says who joined, or that it
    /// expired. Closing the subscription cancels the invite.
    public func invite() throws(HandoffClientError) -> NDJSONSubscription<InviteUpdate> {
        try subscribe(.invite)
    }

    public func sync(_ request: SyncRequest) throws(HandoffClientError) -> SyncResponse {
        try call(.sync, body: try encode(request), timeoutSeconds: max(timeoutSeconds, 60))
    }

    /// Forgets the account on this device, after telling the devices it has sessions with.
    public func leaveAccount(_ request: LeaveRequest = LeaveRequest()) throws(HandoffClientError) -> LeaveResponse {
        try call(.leave, body: try encode(request), timeoutSeconds: max(timeoutSeconds, 15))
    }

    public func devices() throws(HandoffClientError) -> DevicesResponse {
        try call(.devices)
    }

    /// Renames a device in the account (this one, unless this device holds the account key).
    public func renameDevice(_ request: RenameDeviceRequest) throws(HandoffClientError) -> DeviceInfo {
        try call(.renameDevice, body: try encode(request), timeoutSeconds: max(timeoutSeconds, 15))
    }

    /// Removes a device (id, unique id prefix, or exact name) from the account.
    public func removeDevice(_ id: String) throws(HandoffClientError) -> RevokedDeviceInfo {
        try call(.removeDevice, LocalAPIRoute.device(id))
    }

    // MARK: Other devices

    public func peers() throws(HandoffClientError) -> PeersResponse {
        try call(.peers)
    }

    /// What this device can continue from the others now, and with what.
    public func offers() throws(HandoffClientError) -> OffersResponse {
        try call(.offers)
    }

    /// Fetches a peer's current activity (the one this device saw).
    public func continueActivity(_ request: ContinueRequest) throws(HandoffClientError) -> ContinueResponse {
        try call(.continue, body: try encode(request))
    }

    // MARK: Originating apps and continuation streams

    /// Stays attached to the current activity (`request.activityID`): `willSave`, `wasContinued`
    /// and, with `serveStreams`, `streamRequested` arrive as they happen; the subscription ends
    /// when the activity is no longer current. Closing it detaches.
    public func attach(_ request: AttachRequest) throws(HandoffClientError) -> NDJSONSubscription<AttachEvent> {
        try subscribe(.attach, body: try encode(request))
    }

    /// (Resuming) Opens a continuation stream to the app the continuation came from.
    public func openStream(continuationID: UUID) throws(HandoffClientError) -> StreamPipe {
        try upgrade(.openContinuationStream, LocalAPIRoute.continuationStreams(continuationID))
    }

    /// (Originating) Takes a stream announced by `streamRequested`.
    public func takeStream(_ id: UUID) throws(HandoffClientError) -> StreamPipe {
        try upgrade(.takeStream, LocalAPIRoute.stream(id))
    }

    /// A stream's state and byte counts; with `waitForOutcome`, once it completed or failed (or
    /// after 10 seconds, whatever it is then).
    public func stream(_ id: UUID, waitForOutcome: Bool = false) throws(HandoffClientError) -> StreamInfo {
        try call(.getStream, LocalAPIRoute.stream(id) + (waitForOutcome ? "?wait=1" : ""), timeoutSeconds: max(timeoutSeconds, 15))
    }

    public func streams() throws(HandoffClientError) -> StreamsResponse {
        try call(.listStreams)
    }

    private func upgrade(_ endpoint: LocalAPIEndpoints.Endpoint, _ path: String) throws(HandoffClientError) -> StreamPipe {
        // Opening reaches the other device, which may take a TLS handshake or two.
        let connection = try UnixHTTPConnection(socketPath: socketPath, timeoutSeconds: max(timeoutSeconds, 30))
        try connection.send(method: LocalAPIEndpoints.method(of: endpoint), path: path, body: nil, upgrade: StreamUpgrade.protocolName)
        // Byte by byte: the stream's first bytes may follow the 101 at once, and belong to the app.
        let (status, headers) = try connection.readHeadExactly()
        guard status == 101 else {
            let body = (try? connection.readRemainingBody(headers: headers)) ?? []
            throw HandoffClient.apiError(status: status, body: body)
        }
        guard let idText = headers.first(where: { $0.0 == StreamUpgrade.streamIDHeader })?.1, let id = UUID(uuidString: idText) else {
            throw HandoffClientError(.protocolError, "handoffd switched to a stream without naming it; are handoffctl and handoffd the same version?")
        }
        return StreamPipe(id: id, connection: connection)
    }

    // MARK: Apps and windows (docs/apps.md)

    /// Registers a running app: the first event names its registration and hands back its
    /// windows' restoration activities. Closing the subscription is the app quitting.
    public func registerApp(_ request: AppRegistration) throws(HandoffClientError) -> NDJSONSubscription<AppEvent> {
        try subscribe(.registerApp, body: try encode(request))
    }

    /// Sets a window's activity (the device's current one while the window has focus).
    public func setWindowActivity(_ content: ActivityContent, window: String, registration: UUID) throws(HandoffClientError) -> WindowResponse {
        try call(.putWindow, LocalAPIRoute.window(window, of: registration, .activity), body: try encode(PutCurrentActivityRequest(content: content)))
    }

    public func withdrawWindowActivity(window: String, registration: UUID) throws(HandoffClientError) -> WindowResponse {
        try call(.deleteWindow, LocalAPIRoute.window(window, of: registration, .activity))
    }

    /// The user focused the window.
    public func focusWindow(_ window: String, registration: UUID) throws(HandoffClientError) -> WindowResponse {
        try call(.postWindow, LocalAPIRoute.window(window, of: registration, .focus))
    }

    /// The user closed the window: its activity and its restoration activity go.
    public func closeWindow(_ window: String, registration: UUID) throws(HandoffClientError) -> WindowResponse {
        try call(.deleteWindow, LocalAPIRoute.window(window, of: registration))
    }

    /// Keeps the window's state-restoration activity for the app's next registration.
    public func saveRestoration(_ content: ActivityContent, window: String, registration: UUID) throws(HandoffClientError) -> WindowResponse {
        try call(.putWindow, LocalAPIRoute.window(window, of: registration, .restoration), body: try encode(PutCurrentActivityRequest(content: content)))
    }

    public func removeRestoration(window: String, registration: UUID) throws(HandoffClientError) -> WindowResponse {
        try call(.deleteWindow, LocalAPIRoute.window(window, of: registration, .restoration))
    }

    /// Answers a `continue` event: the app took the activity (in `window`), or not.
    public func answerContinuation(_ continuationID: UUID, registration: UUID, _ answer: ContinuationAnswer) throws(HandoffClientError) -> ContinuationAnswer {
        try call(.answerContinuation, LocalAPIRoute.continuationAnswer(continuationID, of: registration), body: try encode(answer))
    }

    // MARK: Plumbing

    private func encode(_ value: some Encodable) throws(HandoffClientError) -> [UInt8] {
        do {
            return Array(try LocalAPIJSON.encoder().encode(value))
        } catch {
            throw HandoffClientError(.protocolError, "cannot encode the request: \(error)")
        }
    }

    /// The method an endpoint takes comes from `LocalAPIEndpoints`, as the daemon's router reads
    /// it; so does the path of one that has a single path (the others are given, made with
    /// `LocalAPIRoute`).
    private static func request(_ endpoint: LocalAPIEndpoints.Endpoint, _ path: String?) -> (method: String, path: String) {
        (LocalAPIEndpoints.method(of: endpoint), path ?? LocalAPIEndpoints.path(of: endpoint) ?? "/")
    }

    private func subscribe<Element: Decodable>(_ endpoint: LocalAPIEndpoints.Endpoint, _ path: String? = nil, body: [UInt8]? = nil)
        throws(HandoffClientError) -> NDJSONSubscription<Element>
    {
        let (method, path) = Self.request(endpoint, path)
        let connection = try UnixHTTPConnection(socketPath: socketPath, timeoutSeconds: nil)
        try connection.send(method: method, path: path, body: body)
        let (status, headers) = try connection.readHead()
        guard status == 200 else {
            let body = (try? connection.readRemainingBody(headers: headers)) ?? []
            throw HandoffClient.apiError(status: status, body: body)
        }
        return NDJSONSubscription(connection: connection, chunked: headers.contains { $0.0 == "transfer-encoding" })
    }

    private func call<Response: Decodable>(
        _ endpoint: LocalAPIEndpoints.Endpoint, _ path: String? = nil, body: [UInt8]? = nil, timeoutSeconds: Int? = nil
    ) throws(HandoffClientError) -> Response {
        let (method, path) = Self.request(endpoint, path)
        let connection = try UnixHTTPConnection(socketPath: socketPath, timeoutSeconds: timeoutSeconds ?? self.timeoutSeconds)
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
    func readRemainingBody(headers: [(String, String)]) throws(HandoffClientError) -> [UInt8] {
        if let length = headers.first(where: { $0.0 == "content-length" }).flatMap({ Int($0.1) }) {
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
        guard let (status, headers) = try? connection.readHead(), status == 200 else { return 0 }
        let events = NDJSONSubscription<LocalEvent>(connection: connection, chunked: headers.contains { $0.0 == "transfer-encoding" })
        var count = 0
        while count < maximumEvents, (try? events.next()) != nil { count += 1 }
        return count
    }
}
