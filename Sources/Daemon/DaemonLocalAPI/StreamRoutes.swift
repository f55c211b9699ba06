#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonClipboard
import DaemonCore
import DaemonStreams
import HandoffAPI
import HandoffModel
import NIOHTTP1

/// Continuation streams: listing them, waiting for one, and opening or taking one (the upgrade, or
/// the file socket).
package struct StreamRoutes: LocalRoutes {
    let book: StreamBook
    let resuming: ResumingStreams
    let originating: OriginatingStreams
    /// Pastes from another device's copy are streams too.
    let clipboard: SharedClipboard
    package let daemonUID: UInt32

    package init(book: StreamBook, resuming: ResumingStreams, originating: OriginatingStreams, clipboard: SharedClipboard, daemonUID: UInt32) {
        self.book = book
        self.resuming = resuming
        self.originating = originating
        self.clipboard = clipboard
        self.daemonUID = daemonUID
    }

    package var feature: String { "streams" }
    /// Taking or opening a stream, and pasting (a stream too), are upgrades of the connection:
    /// `StreamUpgrader` sees them first, and answers here only a request that did not ask to be.
    package var handlers: [LocalAPIEndpoints.Endpoint: LocalHandler] {
        [
            .listStreams: listStreams, .getStream: getStream, .takeStream: streamNeedsUpgrade, .openContinuationStream: streamNeedsUpgrade,
            .pasteClipboard: streamNeedsUpgrade,
        ]
    }

    func listStreams(_ request: AuthorizedRequest) throws -> LocalAPIResponse {
        return .ok(StreamsResponse(streams: book.streams))
    }

    /// `GET /v1/streams/ID`, with `?wait=1`: waits (up to 10 s) for the stream's outcome.
    func getStream(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        let id = try Self.uuid(after: LocalAPIRoute.streams + "/", in: request.path, what: "stream")
        guard let record = book.stream(id) else {
            throw DaemonError(.unknownStream, "no stream \(id.lowercasedString) on this device")
        }
        if request.query.contains("wait=1") {
            return .ok(await record.final(within: .seconds(10)))
        }
        return .ok(record.info)
    }

    /// The stream endpoints without `Upgrade: handoff-stream`.
    func streamNeedsUpgrade(_ request: AuthorizedRequest) throws -> LocalAPIResponse {
        throw LocalAPIError(
            .badRequest,
            "\(request.path) turns the connection into the stream's byte pipe: send `Connection: Upgrade` and `Upgrade: \(StreamUpgrade.protocolName)`"
        )
    }

    /// An upgrade request: opens (resuming) or takes (originating) a stream, which the server then
    /// joins to the connection. An entry point of its own (the router never sees it): it checks
    /// who is asking, as the router does for everything else.
    func prepareStream(_ head: HTTPRequestHead, peer: PeerCredentials) async throws(LocalAPIError) -> ContinuationStreams.Prepared {
        try peer.authorize(daemonUID: daemonUID)
        if head.headers.contains(name: "origin") || head.headers.contains(name: "referer") {
            throw LocalAPIError(.forbiddenOrigin, "requests from web pages (with Origin or Referer) are refused")
        }
        guard head.method == .POST else {
            throw LocalAPIError(.methodNotAllowed, "streams are opened with POST")
        }
        return try await prepareStream(path: head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "", peer: peer)
    }

    /// Opens (resuming) or takes (originating) the stream `path` names, for the upgrade or the
    /// file socket.
    func prepareStream(path: Substring, peer: PeerCredentials) async throws(LocalAPIError) -> ContinuationStreams.Prepared {
        switch LocalAPIEndpoints.match(method: "POST", path: path) {
        case .endpoint(.openContinuationStream) where path.hasSuffix("/streams"):
            let id = try Self.uuid(after: LocalAPIRoute.continuations + "/", in: path.dropLast("/streams".count), what: "continuation")
            do throws(DaemonError) { return try await resuming.open(continuationID: id) } catch { throw LocalAPIError(error) }
        case .endpoint(.pasteClipboard):
            guard let (copyID, type) = LocalAPIRoute.parseClipboardPaste(path) else {
                throw LocalAPIError(.badRequest, "a paste is POST \(LocalAPIRoute.clipboard)/COPY-ID/TYPE (the type percent-encoded)")
            }
            do throws(DaemonError) {
                var (prepared, limit) = try await clipboard.paste(copyID: copyID, type: type)
                prepared.announcedLength = limit
                return prepared
            } catch {
                throw LocalAPIError(error)
            }
        case .endpoint(.takeStream):
            let id = try Self.uuid(after: LocalAPIRoute.streams + "/", in: path, what: "stream")
            do throws(DaemonError) { return try originating.take(streamID: id) } catch { throw LocalAPIError(error) }
        default:
            throw LocalAPIError(.notFound, "no stream endpoint \(path); see docs/local-api.md")
        }
    }

    static func uuid(after prefix: String, in path: Substring, what: String) throws(LocalAPIError) -> UUID {
        let text = String(path.dropFirst(prefix.count))
        guard let id = UUID(uuidString: text) else {
            throw LocalAPIError(.badRequest, "\(displayQuoted(text)) is not a \(what) id")
        }
        return id
    }
}
