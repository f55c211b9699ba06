#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffModel

/// `POST /v1/activity/current/attach`: the originating app stays connected to its activity.
public struct AttachRequest: Codable, Sendable, Equatable {
    /// The activity attached to; the attachment ends when another one becomes current.
    public var activityID: UUID
    /// The app serves continuation streams: it is told of each one (`streamRequested`) and takes
    /// it with `POST /v1/streams/ID`.
    public var serveStreams: Bool
    /// Withdraw the activity when the app detaches (its connection closes).
    public var resignOnDetach: Bool

    public init(activityID: UUID, serveStreams: Bool = false, resignOnDetach: Bool = false) {
        self.activityID = activityID
        self.serveStreams = serveStreams
        self.resignOnDetach = resignOnDetach
    }

    enum CodingKeys: String, CodingKey { case activityID, serveStreams, resignOnDetach }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        activityID = try c.decode(UUID.self, forKey: .activityID)
        serveStreams = try c.decodeIfPresent(Bool.self, forKey: .serveStreams) ?? false
        resignOnDetach = try c.decodeIfPresent(Bool.self, forKey: .resignOnDetach) ?? false
    }
}

/// One line of an attachment's NDJSON stream.
public struct AttachEvent: Codable, Sendable, Equatable {
    public enum Body: Sendable, Equatable {
        /// The attachment holds; the first line.
        case attached(activityID: UUID)
        /// A device is about to receive the activity (it is marked needsSave): update it now
        /// (`PUT /v1/activity/current` with its id) — within a second, or the last state goes.
        case willSave(activityID: UUID, peerID: DeviceID, peerName: String)
        /// A device handed the activity to an app (`wasContinued(by:)`).
        case wasContinued(activityID: UUID, peerID: DeviceID, peerName: String)
        /// A device asks for a continuation stream: take it with `POST /v1/streams/ID` (an HTTP
        /// Upgrade) within 10 seconds.
        case streamRequested(streamID: UUID, peerID: DeviceID, peerName: String)
        /// The activity is no longer current (replaced, resigned, expired); the stream ends.
        case ended(activityID: UUID, reason: String)
        case unknown(name: String)

        public var name: String {
            switch self {
            case .attached: "attached"
            case .willSave: "willSave"
            case .wasContinued: "wasContinued"
            case .streamRequested: "streamRequested"
            case .ended: "ended"
            case .unknown(let name): name
            }
        }
    }

    public var at: Timestamp
    public var body: Body

    public init(at: Timestamp, _ body: Body) {
        self.at = at
        self.body = body
    }

    enum CodingKeys: String, CodingKey { case event, at, activityID, peerID, peerName, streamID, reason }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        at = try c.decode(Timestamp.self, forKey: .at)
        let name = try c.decode(String.self, forKey: .event)
        func peer() throws -> (DeviceID, String) {
            (try c.decode(DeviceID.self, forKey: .peerID), try c.decode(String.self, forKey: .peerName))
        }
        switch name {
        case "attached":
            body = .attached(activityID: try c.decode(UUID.self, forKey: .activityID))
        case "willSave":
            let (id, name) = try peer()
            body = .willSave(activityID: try c.decode(UUID.self, forKey: .activityID), peerID: id, peerName: name)
        case "wasContinued":
            let (id, name) = try peer()
            body = .wasContinued(activityID: try c.decode(UUID.self, forKey: .activityID), peerID: id, peerName: name)
        case "streamRequested":
            let (id, name) = try peer()
            body = .streamRequested(streamID: try c.decode(UUID.self, forKey: .streamID), peerID: id, peerName: name)
        case "ended":
            body = .ended(activityID: try c.decode(UUID.self, forKey: .activityID), reason: try c.decode(String.self, forKey: .reason))
        default:
            body = .unknown(name: name)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(body.name, forKey: .event)
        try c.encode(at, forKey: .at)
        func peer(_ id: DeviceID, _ name: String) throws {
            try c.encode(id, forKey: .peerID)
            try c.encode(name, forKey: .peerName)
        }
        switch body {
        case .attached(let id):
            try c.encode(id.lowercasedString, forKey: .activityID)
        case .willSave(let activity, let id, let name), .wasContinued(let activity, let id, let name):
            try c.encode(activity.lowercasedString, forKey: .activityID)
            try peer(id, name)
        case .streamRequested(let stream, let id, let name):
            try c.encode(stream.lowercasedString, forKey: .streamID)
            try peer(id, name)
        case .ended(let id, let reason):
            try c.encode(id.lowercasedString, forKey: .activityID)
            try c.encode(reason, forKey: .reason)
        case .unknown:
            break
        }
    }
}

/// A continuation stream, as `GET /v1/streams/ID` reports it. The app at either end reads this
/// after its byte pipe ends: only `completed` means every byte arrived and was acknowledged by
/// an orderly end from the other side.
public struct StreamInfo: Codable, Sendable, Equatable {
    public enum Role: String, Codable, Sendable {
        /// This device serves the stream (its app originated the activity).
        case originating
        /// This device asked for it (it continued the activity).
        case resuming
    }

    public enum State: String, Codable, Sendable {
        /// Asked for; waiting for the originating app to take it.
        case pending
        case open
        /// Both directions ended in order.
        case completed
        /// Something broke (`error` says what); data may be missing.
        case failed

        public var isFinal: Bool { self == .completed || self == .failed }
    }

    public var id: UUID
    public var role: Role
    public var state: State
    public var peerID: DeviceID
    public var peerName: String
    public var activityID: UUID
    /// (Resuming side) the continuation the stream belongs to.
    public var continuationID: UUID?
    /// Bytes this device sent to the other one, and received from it.
    public var bytesSent: Int64
    public var bytesReceived: Int64
    /// How many bytes the originating side sends, when it knows (it sends a file): for progress.
    public var expectedBytes: Int64?
    public var openedAt: Timestamp
    public var endedAt: Timestamp?
    public var error: String?

    public init(
        id: UUID, role: Role, state: State, peerID: DeviceID, peerName: String, activityID: UUID, continuationID: UUID? = nil,
        bytesSent: Int64 = 0, bytesReceived: Int64 = 0, openedAt: Timestamp, endedAt: Timestamp? = nil, error: String? = nil
    ) {
        self.id = id
        self.role = role
        self.state = state
        self.peerID = peerID
        self.peerName = peerName
        self.activityID = activityID
        self.continuationID = continuationID
        self.bytesSent = bytesSent
        self.bytesReceived = bytesReceived
        self.openedAt = openedAt
        self.endedAt = endedAt
        self.error = error
    }
}

/// `GET /v1/streams`: the streams open now and the last ones that ended.
public struct StreamsResponse: Codable, Sendable, Equatable {
    public var streams: [StreamInfo]

    public init(streams: [StreamInfo]) {
        self.streams = streams
    }
}

/// The HTTP Upgrade that turns a local-API connection into a stream's byte pipe.
public enum StreamUpgrade {
    /// `Upgrade: handoff-stream`.
    public static let protocolName = "handoff-stream"
    /// The stream's id, in the 101 response.
    public static let streamIDHeader = "handoff-stream-id"
}

/// The file socket, beside the local API's (`handoffd.sock.files`): a stream whose app end is a
/// file. The client hands handoffd the open file (SCM_RIGHTS) and handoffd reads or writes it
/// itself, so the bytes do not pass through the client. Same owner-only rules as the local API.
///
/// The client sends one message, a `FileStreamRequest` as one JSON line with exactly one
/// descriptor attached, and then only reads: `FileStreamReply` lines. The first says the stream
/// opened (or why not, and the connection closes); the second, when the stream ended, is its
/// outcome. Closing the connection before that ends the stream as failed.
public enum FileStreamSocket {
    public static func path(forAPISocket apiSocket: String) -> String { apiSocket + ".files" }
    /// The longest request line accepted.
    public static let maximumRequest = 4096
}

public struct FileStreamRequest: Codable, Sendable, Equatable {
    public enum Role: String, Codable, Sendable {
        /// The file is read and sent; what the other app sends is read and dropped.
        case send
        /// What the other app sends is written to the file; nothing is sent. (This end's
        /// direction stays open until everything arrived: an originator that hangs up early is
        /// then a broken stream, not a short one.)
        case receive
    }

    /// The route the upgrade would use: `/v1/continuations/ID/streams` (resuming) or
    /// `/v1/streams/ID` (originating, taking an offered stream).
    public var path: String
    public var role: Role

    public init(path: String, role: Role) {
        self.path = path
        self.role = role
    }
}

/// One line handoffd writes on a file-socket connection.
public struct FileStreamReply: Codable, Sendable, Equatable {
    public var stream: StreamInfo?
    public var error: APIErrorBody.Detail?

    public init(stream: StreamInfo) {
        self.stream = stream
        self.error = nil
    }

    public init(error: APIErrorBody) {
        self.stream = nil
        self.error = error.error
    }
}
