#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonAccounts
import DaemonContinue
import DaemonCore
import DaemonSessions
import DaemonStreams
import HandoffAPI
import HandoffModel
import Logging
import NIOCore
import NIOHTTP1

#if canImport(Glibc)
import Glibc
#endif

/// A request as the server read it, before anyone looked at who sent it.
struct ReceivedRequest: Sendable {
    var head: HTTPRequestHead
    var body: ByteBuffer
    var peer: PeerCredentials
}

/// A request of the daemon's own user (or root): the router makes one only after checking who
/// sent it, so every handler that takes one has been authorized — once, by the type.
package struct AuthorizedRequest: Sendable {
    let head: HTTPRequestHead
    let body: ByteBuffer
    let peer: PeerCredentials

    /// Only the daemon's own user, and root, may use the API (docs/local-api.md, "Who may connect").
    init(authorizing received: ReceivedRequest, daemonUID: UInt32) throws(LocalAPIError) {
        try received.peer.authorize(daemonUID: daemonUID)
        (head, body, peer) = (received.head, received.body, received.peer)
    }

    var path: Substring { head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "" }
    var query: Substring {
        let parts = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        return parts.count > 1 ? parts[1] : ""
    }

    /// The JSON body, or a 400 that says where it is wrong.
    func decoded<T: Decodable>(_ type: T.Type) throws(LocalAPIError) -> T {
        do {
            return try LocalAPIJSON.decoder().decode(T.self, from: Data(body.readableBytesView))
        } catch let e as DecodingError {
            throw LocalAPIError(.badRequest, "the request JSON is not valid: \(DecodingErrorText.describe(e))")
        } catch {
            throw LocalAPIError(.badRequest, "the request JSON is not valid")
        }
    }
}

package enum LocalAPIResponse: Sendable {
    case json(HTTPResponseStatus, [UInt8])
    case jsonWithHeaders(HTTPResponseStatus, [UInt8], HTTPHeaders)
    /// JSON, then `then` in the connection's task once the answer is written: work the request
    /// causes that its caller does not wait for.
    case jsonThen(HTTPResponseStatus, [UInt8], then: @Sendable () async -> Void)
    /// NDJSON: `produce` writes one JSON line at a time, in the connection's own task, until it
    /// returns, or is cancelled because the client left or the daemon stops.
    case lines(@Sendable (NDJSONWriter) async -> Void)

    /// Each element of `source` as one line of JSON, until it ends.
    static func ndjson<Element: Encodable & Sendable>(_ source: AsyncStream<Element>) -> LocalAPIResponse {
        .lines { writer in
            for await element in source {
                guard await writer.write(element) else { return }
            }
        }
    }

    static func ok(_ value: some Encodable) -> LocalAPIResponse {
        let (status, body) = encoded(value)
        return .json(status, body)
    }

    /// `value`, then `then` once it is written (`jsonThen`).
    static func ok(_ value: some Encodable, then: @escaping @Sendable () async -> Void) -> LocalAPIResponse {
        let (status, body) = encoded(value)
        return .jsonThen(status, body, then: then)
    }

    static func error(_ e: LocalAPIError, headers: HTTPHeaders = [:]) -> LocalAPIResponse {
        let (status, body) = encoded(e)
        return .jsonWithHeaders(status, body, headers)
    }

    /// An answer's status and JSON: `value`, or the error saying it could not be encoded.
    private static func encoded(_ value: some Encodable) -> (HTTPResponseStatus, [UInt8]) {
        do {
            return (.ok, Array(try LocalAPIJSON.encoder().encode(value)))
        } catch {
            return encoded(LocalAPIError(.internalError, "the daemon could not encode its answer: \(error)"))
        }
    }

    private static func encoded(_ e: LocalAPIError) -> (HTTPResponseStatus, [UInt8]) {
        let body = (try? LocalAPIJSON.encoder().encode(e.body)).map(Array.init) ?? Array(#"{"error":{"code":"internal_error","message":"encoding failed"}}"#.utf8)
        return (HTTPResponseStatus(statusCode: e.code.httpStatus), body)
    }
}

/// Writes an NDJSON response's lines, with one encoder for the whole response (made in, and
/// used only by, the task that produces it).
package struct NDJSONWriter {
    let send: @Sendable ([UInt8]) async -> Bool
    private let encoder = LocalAPIJSON.encoder()

    init(send: @escaping @Sendable ([UInt8]) async -> Bool) {
        self.send = send
    }

    /// False once the client is gone: the producer stops.
    func write(_ value: some Encodable) async -> Bool {
        guard var line = try? encoder.encode(value) else { return true }
        line.append(0x0A)
        return await send(Array(line))
    }
}

/// Takes each local-API request to the handler its feature registered for the endpoint
/// (`LocalAPIEndpoints` says which endpoint; `LocalRouteTable` whose handler), after the checks
/// every request gets: no web origin, and the daemon's own user.
package struct LocalAPIRouter: Sendable {
    /// Also the stream upgrades' (`StreamUpgrader`) and the file socket's.
    package let streams: StreamRoutes
    let table: LocalRouteTable
    let daemonUID: UInt32
    let logger: Logger

    /// `features`: every feature's routes but the streams'. Each endpoint of the contract must be
    /// answered by exactly one (`faults`: how not).
    package init(streams: StreamRoutes, features: [any LocalRoutes], daemonUID: UInt32, logger: Logger) {
        self.streams = streams
        self.table = LocalRouteTable([streams] + features)
        self.daemonUID = daemonUID
        self.logger = logger
    }

    /// Which feature answers each endpoint (`LocalAPITests` checks: exactly one).
    package var owners: [LocalAPIEndpoints.Endpoint: [String]] { table.owners }
    /// What is wrong with the features' registrations: a daemon built so does not start.
    package var faults: [String] { table.faults }

    func handle(_ received: ReceivedRequest) async -> LocalAPIResponse {
        let request: AuthorizedRequest
        do throws(LocalAPIError) {
            // A browser page can be tricked into talking to local sockets through proxies; nothing
            // legitimate sends these headers to a Unix socket.
            if received.head.headers.contains(name: "origin") || received.head.headers.contains(name: "referer") {
                throw LocalAPIError(.forbiddenOrigin, "requests from web pages (with Origin or Referer) are refused")
            }
            request = try AuthorizedRequest(authorizing: received, daemonUID: daemonUID)
        } catch {
            logger.notice("local API request refused", metadata: ["uid": "\(received.peer.uid)", "pid": "\(received.peer.pid)", "code": "\(error.code.rawValue)"])
            return .error(error)
        }
        do {
            switch LocalAPIEndpoints.match(method: request.head.method.rawValue, path: request.path) {
            case .endpoint(let endpoint):
                guard let handler = table.handlers[endpoint] else { throw LocalAPIError(.internalError, "no feature answers \(endpoint)") }
                return try await handler(request)
            case .methodNotAllowed(let allowed):
                return .error(
                    LocalAPIError(.methodNotAllowed, "\(request.head.method.rawValue) is not allowed on \(request.path)"),
                    headers: ["allow": allowed]
                )
            case .notFound:
                throw LocalAPIError(.notFound, "no endpoint \(request.head.method.rawValue) \(request.path); the routes are listed in docs/local-api.md")
            }
        } catch {
            let e = LocalAPIError(answering: error)
            if e.code == .internalError { logger.error("local API handler failed", metadata: ["error": "\(error)"]) }
            return .error(e)
        }
    }
}
