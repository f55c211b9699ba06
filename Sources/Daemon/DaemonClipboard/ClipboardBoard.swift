#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffModel

/// What the user set for the clipboard (handoffd.toml `[clipboard]`; docs/clipboard.md).
package struct ClipboardSettings: Sendable, Equatable {
    /// `lifetime`: how long a copy is given out, and another device's kept.
    package var lifetimeSeconds: UInt32
    /// `max_size`: larger forms are neither announced nor pasted.
    package var maximumSize: Int64

    package static let defaultLifetimeSeconds: UInt32 = 120
    package static let defaultMaximumSize: Int64 = 64 << 20

    package init(lifetimeSeconds: UInt32 = ClipboardSettings.defaultLifetimeSeconds, maximumSize: Int64 = ClipboardSettings.defaultMaximumSize) {
        self.lifetimeSeconds = lifetimeSeconds
        self.maximumSize = maximumSize
    }
}

/// The clipboard's decisions as a value (docs/clipboard.md): this device's last copy and the
/// newest one heard of, each until it runs out; what a copy here, a notice from another device
/// and the switch do; who may paste what. `SharedClipboard` carries out what it returns.
package struct ClipboardBoard: Sendable, Equatable {
    package struct Copy: Sendable, Equatable {
        package var notice: ClipboardNotice
        package var expiresAt: Timestamp
        /// nil: copied here.
        package var peer: LocalEvent.PeerRef?
        /// (Copied here) the agent holding its bytes (`ClipboardAnnouncement.holder`): the copy
        /// is given out only while that holder is connected.
        package var holder: UUID? = nil
    }

    package private(set) var enabled: Bool
    /// This device's last copy, given out until it runs out.
    package private(set) var local: Copy?
    /// The newest copy heard of from another device, unless one made here since is newer.
    package private(set) var remote: Copy?
    /// Whether the newest copy of all is this device's own (made after `remote` came) — or
    /// something copied here that is not given out (a secret): then there is no newest to offer.
    private var localIsNewest = false
    /// Per device, the last notice heard from it (its id, and when that device says it was made,
    /// by its own clock — compared only with that device's other notices): a notice heard again
    /// (each session that opens repeats a live copy) or older (sessions do not keep notices in
    /// order) changes nothing. At most `maximumDevices`.
    private var lastHeard: [DeviceID: Heard] = [:]
    private struct Heard: Sendable, Equatable {
        let id: UUID
        let copiedAt: Timestamp
    }
    static let maximumDevices = 64

    package init(enabled: Bool) {
        self.enabled = enabled
    }

    /// What to tell the others.
    package enum Tell: Sendable, Equatable {
        case nothing
        case everyone(ClipboardNotice)
    }

    /// Something was copied here (no items: nothing carried, or a secret). Returns the notice for
    /// the other devices — a withdrawal when there was a copy and now there is none. Either way
    /// this device's clipboard is the newest: no older copy from elsewhere takes its place.
    package mutating func copied(
        _ items: [ClipboardItem], holder: UUID? = nil, id: UUID = UUID(), now: Timestamp, settings: ClipboardSettings
    ) -> Tell {
        guard enabled else { return .nothing }
        localIsNewest = true
        guard !items.isEmpty else { return withdrawLocal(id: id, now: now, settings: settings) }
        let lifetime = settings.lifetimeSeconds
        let notice = ClipboardNotice(id: id, copiedAt: now, lifetimeSeconds: lifetime, items: items)
        local = Copy(notice: notice, expiresAt: now.adding(seconds: Int64(lifetime)), peer: nil, holder: holder)
        return .everyone(notice)
    }

    /// The agent `holder` went (it stopped, crashed, or started anew): the copy it held is
    /// withdrawn, for no paste of it can be served any more. Nothing newer from elsewhere takes
    /// its place.
    package mutating func holderLeft(_ holder: UUID, id: UUID = UUID(), now: Timestamp, settings: ClipboardSettings) -> Tell {
        guard enabled, let held = local?.holder, held == holder else { return .nothing }
        return withdrawLocal(id: id, now: now, settings: settings)
    }

    /// This device's copy is gone: the others are told (a notice with no kinds), if it still ran.
    private mutating func withdrawLocal(id: UUID, now: Timestamp, settings: ClipboardSettings) -> Tell {
        let had = local.map { $0.expiresAt > now } ?? false
        local = nil
        return had ? .everyone(ClipboardNotice(id: id, copiedAt: now, lifetimeSeconds: settings.lifetimeSeconds, items: [])) : .nothing
    }

    /// `peer` announced a copy (or withdrew its last one). Kept for the shorter of its lifetime
    /// and this device's; returns whether what this device offers changed. Among devices the
    /// newest is the last heard (their clocks are not compared); a notice heard again from a
    /// device, or older than its last one, changes nothing.
    package mutating func heard(_ notice: ClipboardNotice, from peer: LocalEvent.PeerRef, now: Timestamp, settings: ClipboardSettings) -> Bool {
        guard enabled else { return false }
        if let last = lastHeard[peer.id], last.id == notice.id || notice.copiedAt < last.copiedAt { return false }
        if lastHeard[peer.id] == nil, lastHeard.count >= Self.maximumDevices, let oldest = lastHeard.min(by: { $0.value.copiedAt < $1.value.copiedAt }) {
            lastHeard[oldest.key] = nil
        }
        lastHeard[peer.id] = Heard(id: notice.id, copiedAt: notice.copiedAt)
        if notice.items.isEmpty {
            guard remote?.peer?.id == peer.id else { return false }
            remote = nil
            return true
        }
        let lifetime = min(notice.lifetimeSeconds, settings.lifetimeSeconds)
        remote = Copy(notice: notice, expiresAt: now.adding(seconds: Int64(lifetime)), peer: peer)
        localIsNewest = false
        return true
    }

    /// Off: every copy here and heard of is forgotten, and the others are told this device's is
    /// withdrawn. On: nothing is announced until the next copy.
    package mutating func setEnabled(_ on: Bool, now: Timestamp, settings: ClipboardSettings) -> Tell {
        guard on != enabled else { return .nothing }
        var tell = Tell.nothing
        if !on { tell = copied([], now: now, settings: settings) }
        enabled = on
        remote = nil
        local = nil
        localIsNewest = false
        lastHeard = [:]
        return tell
    }

    /// A device that `peer` just opened a session with: this device's copy, if it still runs and
    /// is the newest this device knows, with what is left of its lifetime.
    package func noticeForNewcomer(now: Timestamp) -> ClipboardNotice? {
        guard enabled, localIsNewest, var notice = local?.notice, let expires = local?.expiresAt, expires > now else { return nil }
        let left = (expires.microsecondsSinceEpoch - now.microsecondsSinceEpoch + 999_999) / 1_000_000
        notice.lifetimeSeconds = UInt32(max(1, min(Int64(notice.lifetimeSeconds), left)))
        return notice
    }

    /// Forgets what ran out by `now`; whether anything did.
    package mutating func expire(now: Timestamp) -> Bool {
        var changed = false
        if let local, local.expiresAt <= now {
            self.local = nil
            changed = true
        }
        if let remote, remote.expiresAt <= now {
            self.remote = nil
            changed = true
        }
        return changed
    }

    /// When the next copy runs out.
    package var nextExpiry: Timestamp? {
        [local?.expiresAt, remote?.expiresAt].compactMap { $0 }.min()
    }

    /// The newest copy of all, here or elsewhere (none: the newest here is not given out, or ran
    /// out).
    package var newest: Copy? {
        localIsNewest ? local : remote
    }

    /// Whether `peer` may paste form `type` of `copyID` from this device: it is this device's
    /// copy, it still runs, and it offers that form (for a file of its file list, the list; the
    /// agent knows which entries are files). Nil, or why not.
    package func refusal(copyID: UUID, type: String, now: Timestamp) -> String? {
        guard enabled else { return "the clipboard is not shared there" }
        guard let local, local.notice.id == copyID, local.expiresAt > now else { return "that copy is no longer on the clipboard there" }
        let form = ClipboardNotice.fileIndex(type) == nil ? type : ClipboardNotice.fileListType
        guard local.notice.items.contains(where: { $0.type == form }) else { return "that copy has no \(form) form" }
        return nil
    }

    /// What the local API says.
    package func state(_ settings: ClipboardSettings) -> ClipboardState {
        ClipboardState(enabled: enabled, newest: newest.map(Self.api), local: local.map(Self.api), maximumSize: settings.maximumSize)
    }

    static func api(_ copy: Copy) -> ClipboardCopy {
        ClipboardCopy(id: copy.notice.id, items: copy.notice.items, copiedAt: copy.notice.copiedAt, expiresAt: copy.expiresAt, peer: copy.peer)
    }
}
