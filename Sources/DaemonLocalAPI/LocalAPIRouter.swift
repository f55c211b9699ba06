#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonAccounts
import DaemonContinue
import DaemonCore
import DaemonLinks
import DaemonStreams
import HandoffAPI
import HandoffModel
import Logging
import NIOCore
import NIOHTTP1

#if canImport(Glibc)
import Glibc
#endif

struct LocalAPIRequest: Sendable {
    var head: HTTPRequestHead
    var body: ByteBuffer
    var peer: PeerCredentials

    var path: Substring { head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "" }
    var query: Substring {
        let parts = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        return parts.count > 1 ? parts[1] : ""
    }
}

enum LocalAPIResponse: Sendable {
    case json(HTTPResponseStatus, [UInt8])
    case jsonWithHeaders(HTTPResponseStatus, [UInt8], HTTPHeaders)
    /// NDJSON: each element is one JSON line (without its newline), sent as it comes.
    case lines(AsyncStream<[UInt8]>)

    /// Encodes each element as one line of JSON.
    static func ndjson<Element: Encodable & Sendable>(_ source: AsyncStream<Element>) -> LocalAPIResponse {
        let (lines, continuation) = AsyncStream.makeStream(of: [UInt8].self)
        let pump = Task {
            let encoder = LocalAPIJSON.encoder()
            for await element in source {
                if let line = try? encoder.encode(element) { continuation.yield(Array(line)) }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in pump.cancel() }
        return .lines(lines)
    }

    static func ok(_ value: some Encodable) -> LocalAPIResponse {
        do {
            return .json(.ok, Array(try LocalAPIJSON.encoder().encode(value)))
        } catch {
            return .error(LocalAPIError(.internalError, "the daemon could not encode its answer: \(error)"))
        }
    }

    static func error(_ e: LocalAPIError, headers: HTTPHeaders = [:]) -> LocalAPIResponse {
        let body = (try? LocalAPIJSON.encoder().encode(e.body)).map(Array.init) ?? Array(#"{"error":{"code":"internal_error","message":"encoding failed"}}"#.utf8)
        return .jsonWithHeaders(HTTPResponseStatus(statusCode: e.code.httpStatus), body, headers)
    }
}

/// The daemon's parts that requests act on.
package struct DaemonServices: Sendable {
    let registry: ActivityRegistry
    let events: EventHub
    let accounts: AccountStore
    let security: PeerSecurity
    let directory: PeerDirectory
    let links: MemberLinks
    let discovery: DiscoveryService
    let launcher: Launcher
    let book: StreamBook
    let attachments: Attachments
    let streams: ContinuationStreams
    let continueFlow: ContinueFlow
    let statusProvider: @Sendable () async -> DaemonStatus
    let peerPort: @Sendable () -> Int
    let maximumActivityBytes: Int
    let daemonUID: UInt32
    let logger: Logger

    package init(registry: ActivityRegistry, events: EventHub, accounts: AccountStore, security: PeerSecurity, directory: PeerDirectory, links: MemberLinks, discovery: DiscoveryService, launcher: Launcher, book: StreamBook, attachments: Attachments, streams: ContinuationStreams, continueFlow: ContinueFlow, statusProvider: @escaping @Sendable () async -> DaemonStatus, peerPort: @escaping @Sendable () -> Int, maximumActivityBytes: Int, daemonUID: UInt32, logger: Logger) {
        self.registry = registry
        self.events = events
        self.accounts = accounts
        self.security = security
        self.directory = directory
        self.links = links
        self.discovery = discovery
        self.launcher = launcher
        self.book = book
        self.attachments = attachments
        self.streams = streams
        self.continueFlow = continueFlow
        self.statusProvider = statusProvider
        self.peerPort = peerPort
        self.maximumActivityBytes = maximumActivityBytes
        self.daemonUID = daemonUID
        self.logger = logger
    }
}

/// What each local-API route does. Every handler's first line checks who is asking.
package struct LocalAPIRouter: Sendable {
    let services: DaemonServices

    package init(services: DaemonServices) {
        self.services = services
    }
    var daemonUID: UInt32 { services.daemonUID }
    var logger: Logger { services.logger }

    func handle(_ request: LocalAPIRequest) async -> LocalAPIResponse {
        do {
            // A browser page can be tricked into talking to local sockets through proxies; nothing
            // legitimate sends these headers to a Unix socket.
            if request.head.headers.contains(name: "origin") || request.head.headers.contains(name: "referer") {
                throw LocalAPIError(.forbiddenOrigin, "requests from web pages (with Origin or Referer) are refused")
            }
            try request.peer.authorize(daemonUID: daemonUID)
            switch LocalAPIEndpoints.match(method: request.head.method.rawValue, path: request.path) {
            case .endpoint(let endpoint): return try await handle(endpoint, request)
            case .methodNotAllowed(let allowed):
                return .error(
                    LocalAPIError(.methodNotAllowed, "\(request.head.method.rawValue) is not allowed on \(request.path)"),
                    headers: ["allow": allowed]
                )
            case .notFound:
                throw LocalAPIError(.notFound, "no endpoint \(request.head.method.rawValue) \(request.path); the routes are listed in docs/local-api.md")
            }
        } catch let e as LocalAPIError {
            if e.code == .forbidden || e.code == .forbiddenOrigin {
                logger.notice("local API request refused", metadata: ["uid": "\(request.peer.uid)", "pid": "\(request.peer.pid)", "code": "\(e.code.rawValue)"])
            }
            return .error(e)
        } catch {
            logger.error("local API handler failed", metadata: ["error": "\(error)"])
            return .error(LocalAPIError(.internalError, "the daemon failed: \(error)"))
        }
    }

    /// Each endpoint's handler (the caller checked who is asking).
    private func handle(_ endpoint: LocalAPIEndpoints.Endpoint, _ request: LocalAPIRequest) async throws -> LocalAPIResponse {
        switch endpoint {
        case .status: try await status(request)
        case .getCurrent: try await getCurrent(request)
        case .putCurrent: try await putCurrent(request)
        case .deleteCurrent: try await deleteCurrent(request)
        case .attach: try await attach(request)
        case .events: try events(request)
        case .getAccount: try await getAccount(request)
        case .createAccount: try await createAccount(request)
        case .joinAccount: try await joinAccount(request)
        case .invite: try await invite(request)
        case .sync: try await sync(request)
        case .leave: try await leave(request)
        case .devices: try await devices(request)
        case .renameDevice: try await renameDevice(request)
        case .removeDevice: try await removeDevice(request)
        case .peers: try await peers(request)
        case .continue: try await continueActivity(request)
        case .listStreams: try listStreams(request)
        case .getStream: try await getStream(request)
        case .takeStream, .openContinuationStream: try streamNeedsUpgrade(request)
        }
    }

    /// The JSON body of a request, or a 400 that says where it is wrong.
    func body<T: Decodable>(_ type: T.Type, of request: LocalAPIRequest) throws(LocalAPIError) -> T {
        do {
            return try LocalAPIJSON.decoder().decode(T.self, from: Data(request.body.readableBytesView))
        } catch let e as DecodingError {
            throw LocalAPIError(.badRequest, "the request JSON is not valid: \(DecodingErrorText.describe(e))")
        } catch {
            throw LocalAPIError(.badRequest, "the request JSON is not valid")
        }
    }

    // MARK: Status and the current activity

    private func status(_ request: LocalAPIRequest) async throws -> LocalAPIResponse {
        try request.peer.authorize(daemonUID: daemonUID)
        return .ok(await services.statusProvider())
    }

    private func getCurrent(_ request: LocalAPIRequest) async throws -> LocalAPIResponse {
        try request.peer.authorize(daemonUID: daemonUID)
        return .ok(try await services.registry.currentResponse())
    }

    private func putCurrent(_ request: LocalAPIRequest) async throws -> LocalAPIResponse {
        try request.peer.authorize(daemonUID: daemonUID)
        let put = try body(PutCurrentActivityRequest.self, of: request)
        return .ok(try await services.registry.becomeCurrent(put))
    }

    private func deleteCurrent(_ request: LocalAPIRequest) async throws -> LocalAPIResponse {
        try request.peer.authorize(daemonUID: daemonUID)
        return .ok(ResignResponse(resigned: try await services.registry.resignCurrent()))
    }

    private func events(_ request: LocalAPIRequest) throws -> LocalAPIResponse {
        try request.peer.authorize(daemonUID: daemonUID)
        return .ndjson(services.events.subscribe())
    }
}
