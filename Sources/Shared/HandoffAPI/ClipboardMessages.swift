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

    public init(items: [ClipboardItem]) {
        self.items = items
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
