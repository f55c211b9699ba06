#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonStreams
import HandoffAPI
import HandoffModel
import NIOHTTP1

/// Attaching to the current activity, and continuation streams.
extension LocalAPIRouter {
    func attach(_ request: LocalAPIRequest) async throws -> LocalAPIResponse {
        try request.peer.authorize(daemonUID: daemonUID)
        let ask = try body(AttachRequest.self, of: request)
        let registry = services.registry
        guard await registry.currentActivity()?.id == ask.activityID else {
            throw LocalAPIError(.activityChanged, "activity \(ask.activityID.lowercasedString) is not the current one; attach to what become-current returned")
        }
        let events = services.attachments.attach(ask) { departure in
            Task {
                switch departure {
                case .resign(let id):
                    guard await registry.currentActivity()?.id == id else { return }
                    _ = try? await registry.resignCurrent()
                case .streamsGone(let id):
                    await registry.stopOfferingStreams(id)
                }
            }
        }
        // It may have been replaced between the check and the attachment.
        if let now = await registry.currentActivity()?.id, now != ask.activityID {
            services.attachments.currentChanged(to: now, reason: "replaced")
        }
        return .ndjson(events)
    }

    func listStreams(_ request: LocalAPIRequest) throws -> LocalAPIResponse {
        try request.peer.authorize(daemonUID: daemonUID)
        return .ok(StreamsResponse(streams: services.book.streams))
    }

    /// `GET /v1/streams/ID`, with `?wait=1`: waits (up to 10 s) for the stream's outcome.
    func getStream(_ request: LocalAPIRequest) async throws -> LocalAPIResponse {
        try request.peer.authorize(daemonUID: daemonUID)
        let id = try Self.uuid(after: LocalAPIRoute.streams + "/", in: request.path, what: "stream")
        guard let record = services.book.stream(id) else {
            throw LocalAPIError(.unknownStream, "no stream \(id.lowercasedString) on this device")
        }
        if request.query.contains("wait=1") {
            return .ok(await record.final(within: .seconds(10)))
        }
        return .ok(record.info)
    }

    /// The stream endpoints without `Upgrade: handoff-stream`.
    func streamNeedsUpgrade(_ request: LocalAPIRequest) throws -> LocalAPIResponse {
        try request.peer.authorize(daemonUID: daemonUID)
        throw LocalAPIError(
            .badRequest,
            "\(request.path) turns the connection into the stream's byte pipe: send `Connection: Upgrade` and `Upgrade: \(StreamUpgrade.protocolName)`"
        )
    }

    /// An upgrade request: opens (resuming) or takes (originating) a stream, which the server then
    /// joins to the connection.
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
        try peer.authorize(daemonUID: daemonUID)
        switch LocalAPIEndpoints.match(method: "POST", path: path) {
        case .endpoint(.openContinuationStream) where path.hasSuffix("/streams"):
            let id = try Self.uuid(after: LocalAPIRoute.continuations + "/", in: path.dropLast("/streams".count), what: "continuation")
            return try await services.streams.open(continuationID: id)
        case .endpoint(.takeStream):
            return try services.streams.take(streamID: try Self.uuid(after: LocalAPIRoute.streams + "/", in: path, what: "stream"))
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
