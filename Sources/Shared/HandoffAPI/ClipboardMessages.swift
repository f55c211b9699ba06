#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffModel

/// The body of `POST /v1/clipboard`: something was copied on this device, in these forms (the
/// desktop agent; docs/clipboard.md). No items: the clipboard here holds nothing carried any
/// more (or a secret), and what this device announced before is withdrawn.
public struct ClipboardAnnouncement: Codable, Sendable, Equatable {
    public var items: [ClipboardItem]
    /// Who holds the copy's bytes and serves its pastes: the id `POST /v1/clipboard/holder` gave
    /// (its first line). A copy is given out only while its holder stays connected; one announced
    /// without a holder that is there is refused (a withdrawal needs none).
    public var holder: UUID?

    public init(items: [ClipboardItem], holder: UUID? = nil) {
        self.items = items
        self.holder = holder
    }
}

/// One line of `POST /v1/clipboard/holder`'s NDJSON stream, open for as long as the desktop agent
/// holds this device's copies (docs/clipboard.md, "Who holds a copy"): first `holding` with the
/// holder's id, then each paste another device asks of a copy it announced. The stream closing
/// — the agent stopped, crashed, or started anew — withdraws the copy it held.
public struct ClipboardHolderEvent: Codable, Sendable, Equatable {
    public enum Body: Sendable, Equatable {
        /// The first line: the id to announce copies with (`ClipboardAnnouncement.holder`).
        case holding(holder: UUID)
        /// Another device pastes form `type` of copy `copyID`: take stream `streamID` (`POST
        /// /v1/streams/ID`) within 10 seconds and hand it the bytes — or take it and close it at
        /// once when that copy is not held here any more.
        case pasteRequested(streamID: UUID, copyID: UUID, type: String, peer: LocalEvent.PeerRef)
        case unknown(name: String)

        public var name: String {
            switch self {
            case .holding: "holding"
            case .pasteRequested: "pasteRequested"
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

    enum CodingKeys: String, CodingKey { case event, at, holder, streamID, copyID, type, peer }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        at = try c.decode(Timestamp.self, forKey: .at)
        let name = try c.decode(String.self, forKey: .event)
        switch name {
        case "holding":
            body = .holding(holder: try c.decode(UUID.self, forKey: .holder))
        case "pasteRequested":
            body = .pasteRequested(
                streamID: try c.decode(UUID.self, forKey: .streamID), copyID: try c.decode(UUID.self, forKey: .copyID),
                type: try c.decode(String.self, forKey: .type), peer: try c.decode(LocalEvent.PeerRef.self, forKey: .peer)
            )
        default:
            body = .unknown(name: name)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(body.name, forKey: .event)
        try c.encode(at, forKey: .at)
        switch body {
        case .holding(let holder):
            try c.encode(holder.lowercasedString, forKey: .holder)
        case .pasteRequested(let stream, let copy, let type, let peer):
            try c.encode(stream.lowercasedString, forKey: .streamID)
            try c.encode(copy.lowercasedString, forKey: .copyID)
            try c.encode(type, forKey: .type)
            try c.encode(peer, forKey: .peer)
        case .unknown:
            break
        }
    }
}

/// A copy, here or on another device.
public struct ClipboardCopy: Codable, Sendable, Equatable {
    public var id: UUID
    public var items: [ClipboardItem]
    /// By the clock of the device where it was copied.
    public var copiedAt: Timestamp
    /// When it is no longer given out (by this device's clock).
    public var expiresAt: Timestamp
    /// The device it was copied on; nil: this one.
    public var peer: LocalEvent.PeerRef?

    /// What a paste takes when no type is asked for: text first.
    public static let preferredTypes = ["text/plain;charset=utf-8", "text/plain", "text/uri-list", "text/html", "image/png", "image/jpeg"]

    public init(id: UUID, items: [ClipboardItem], copiedAt: Timestamp, expiresAt: Timestamp, peer: LocalEvent.PeerRef?) {
        self.id = id
        self.items = items
        self.copiedAt = copiedAt
        self.expiresAt = expiresAt
        self.peer = peer
    }
}

/// `GET /v1/clipboard`, and the `clipboardChanged` event.
public struct ClipboardState: Codable, Sendable, Equatable {
    /// Whether the clipboard is shared between this device and the others (`handoffctl clipboard
    /// on|off`, handoffd.toml `[clipboard] enabled`).
    public var enabled: Bool
    /// The newest copy this device heard of — its own or another device's — while it lasts.
    public var newest: ClipboardCopy?
    /// What this device gives out: its own last copy, while it lasts.
    public var local: ClipboardCopy?
    /// The largest kind announced or pasted here (`[clipboard] max_size`): the agent does not
    /// read a larger one from the app that copied it.
    public var maximumSize: Int64

    public init(enabled: Bool, newest: ClipboardCopy? = nil, local: ClipboardCopy? = nil, maximumSize: Int64) {
        self.enabled = enabled
        self.newest = newest
        self.local = local
        self.maximumSize = maximumSize
    }
}
