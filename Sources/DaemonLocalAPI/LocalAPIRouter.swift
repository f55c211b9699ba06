#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffModel
import Logging
import NIOCore
import NIOHTTP1

#if canImport(Glibc)
import DaemonAccounts
import DaemonContinue
import DaemonCore
import DaemonLinks
import DaemonStreams
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
            switch (request.path, request.head.method) {
            case (LocalAPIRoute.status[...], .GET): return try await status(request)
            case (LocalAPIRoute.currentActivity[...], .GET): return try await getCurrent(request)
            case (LocalAPIRoute.currentActivity[...], .PUT): return try await putCurrent(request)
            case (LocalAPIRoute.currentActivity[...], .DELETE): return try await deleteCurrent(request)
            case (LocalAPIRoute.events[...], .GET): return try events(request)
            case (LocalAPIRoute.account[...], .GET): return try await getAccount(request)
            case (LocalAPIRoute.account[...], .POST): return try await createAccount(request)
            case (LocalAPIRoute.accountJoin[...], .POST): return try await joinAccount(request)
            case (LocalAPIRoute.accountInvites[...], .POST): return try await invite(request)
            case (LocalAPIRoute.accountSync[...], .POST): return try await sync(request)
            case (LocalAPIRoute.accountLeave[...], .POST): return try await leave(request)
            case (LocalAPIRoute.devicesRename[...], .POST): return try await renameDevice(request)
            case (LocalAPIRoute.devices[...], .GET): return try await devices(request)
            case (LocalAPIRoute.peers[...], .GET): return try await peers(request)
            case (LocalAPIRoute.continue[...], .POST): return try await continueActivity(request)
            case (LocalAPIRoute.attach[...], .POST): return try await attach(request)
            case (LocalAPIRoute.streams[...], .GET): return try listStreams(request)
            case (let path, .GET) where path.hasPrefix(LocalAPIRoute.streams + "/"): return try await getStream(request)
            case (let path, .POST) where path.hasPrefix(LocalAPIRoute.streams + "/"): return try streamNeedsUpgrade(request)
            case (let path, .POST) where path.hasPrefix(LocalAPIRoute.continuations + "/"): return try streamNeedsUpgrade(request)
            case (let path, .DELETE) where path.hasPrefix(LocalAPIRoute.devices + "/"): return try await removeDevice(request)
            default: return try unrouted(request)
            }
        } catch let e as LocalAPIError {
            if e.code == .forbidden || e.code == .forbiddenOrigin {
                logger.notice("local API request refused", metadata: ["uid": "\(request.peer.uid)", "pid": "\(request.peer.pid)", "code": "\(e.code.rawValue)"])
            }
            var headers = HTTPHeaders()
            if e.code == .methodNotAllowed, let allowed = Self.allowedMethods[String(request.path)] {
                headers.add(name: "allow", value: allowed)
            }
            return .error(e, headers: headers)
        } catch {
            logger.error("local API handler failed", metadata: ["error": "\(error)"])
            return .error(LocalAPIError(.internalError, "the daemon failed: \(error)"))
        }
    }

    static let allowedMethods = [
        LocalAPIRoute.status: "GET",
        LocalAPIRoute.currentActivity: "GET, PUT, DELETE",
        LocalAPIRoute.events: "GET",
        LocalAPIRoute.account: "GET, POST",
        LocalAPIRoute.accountJoin: "POST",
        LocalAPIRoute.accountInvites: "POST",
        LocalAPIRoute.accountSync: "POST",
        LocalAPIRoute.accountLeave: "POST",
        LocalAPIRoute.devicesRename: "POST",
        LocalAPIRoute.devices: "GET",
        LocalAPIRoute.peers: "GET",
        LocalAPIRoute.continue: "POST",
        LocalAPIRoute.attach: "POST",
        LocalAPIRoute.streams: "GET",
    ]

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

    private func unrouted(_ request: LocalAPIRequest) throws -> LocalAPIResponse {
        try request.peer.authorize(daemonUID: daemonUID)
        if Self.allowedMethods[String(request.path)] != nil {
            throw LocalAPIError(.methodNotAllowed, "\(request.head.method.rawValue) is not allowed on \(request.path)")
        }
        throw LocalAPIError(.notFound, "no endpoint \(request.head.method.rawValue) \(request.path); the routes are listed in docs/local-api.md")
    }
}
