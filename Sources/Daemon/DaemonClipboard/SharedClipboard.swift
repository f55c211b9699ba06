#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonCore
import DaemonSessions
import DaemonStreams
import HandoffAPI
import HandoffModel
import HandoffPeer
import Logging
import Synchronization

extension DaemonError.Code {
    /// No copy from another device to paste: none, it ran out, or it is not the newest.
    package static let noClipboard = Self(.noClipboard)
}

/// The clipboard between the account's devices (docs/clipboard.md): a copy here is announced to
/// the devices with a session (`clipboardNotice`: forms and sizes, never the content); a notice
/// from one of them is offered here (the `clipboardChanged` event, for the desktop agent); a paste
/// opens a stream to the device that copied, whose agent hands over that one form.
///
/// Nothing of the content passes through here but the streams; what runs out is forgotten when
/// next looked at (each agent sets its own timer by `expiresAt`). Decisions are `ClipboardBoard`'s.
package final class SharedClipboard: Sendable {
    /// The decisions, and the agents holding this device's copies (`POST /v1/clipboard/holder`).
    /// `holders` is taken inside `board`'s lock where both are (never the other way round), so
    /// that a copy is never taken for held by a holder that already left.
    private let board: Mutex<ClipboardBoard>
    private let holders = Mutex<[UUID: AsyncStream<ClipboardHolderEvent>.Continuation]>([:])
    private let settings: Mutex<ClipboardSettings>
    private let clock: any DaemonClock
    private let events: EventHub
    private let sessions: MemberSessions
    private let resuming: ResumingStreams
    private let logger: Logger

    package init(
        enabled: Bool, settings: ClipboardSettings, clock: any DaemonClock, events: EventHub, sessions: MemberSessions, resuming: ResumingStreams, logger: Logger
    ) {
        self.board = Mutex(ClipboardBoard(enabled: enabled))
        self.settings = Mutex(settings)
        self.clock = clock
        self.events = events
        self.sessions = sessions
        self.resuming = resuming
        self.logger = logger
    }

    package var current: ClipboardSettings { settings.withLock { $0 } }

    /// handoffd.toml read again: for the copies from now on.
    package func replace(_ new: ClipboardSettings) {
        settings.withLock { $0 = new }
    }

    /// `GET /v1/clipboard`.
    package var state: ClipboardState {
        let now = clock.now()
        let settings = current
        return board.withLock { b in
            _ = b.expire(now: now)
            return b.state(settings)
        }
    }

    /// How many pastes a holder may be behind on: one more is refused (`streamRefused`).
    static let holderBacklog = 64

    /// `POST /v1/clipboard/holder`: the desktop agent holds this device's copies for as long as
    /// this runs — until `write` fails (it left) or the task is cancelled (it left, or handoffd
    /// stops). The first event names the holder; the copy it held is withdrawn when it ends
    /// (docs/clipboard.md, "Who holds a copy").
    package func hold(writing write: (ClipboardHolderEvent) async -> Bool) async {
        let (stream, continuation) = AsyncStream.makeStream(of: ClipboardHolderEvent.self, bufferingPolicy: .bufferingOldest(Self.holderBacklog))
        let id = UUID.random()
        holders.withLock { $0[id] = continuation }
        continuation.yield(ClipboardHolderEvent(at: clock.now(), .holding(holder: id)))
        logger.info("the desktop agent holds the clipboard's copies", metadata: ["holder": "\(id.lowercasedString.prefix(8))"])
        for await event in stream {
            guard await write(event) else { break }
        }
        await holderLeft(id)
    }

    /// A holder's stream ended: the copy it held is withdrawn here and on the other devices.
    private func holderLeft(_ holder: UUID) async {
        let now = clock.now()
        let settings = current
        let (tell, state) = board.withLock { b in
            // Under the board's lock: an announcement checks its holder under it too.
            holders.withLock { $0.removeValue(forKey: holder) }?.finish()
            _ = b.expire(now: now)
            return (b.holderLeft(holder, now: now, settings: settings), b.state(settings))
        }
        logger.info("the desktop agent no longer holds the clipboard's copies", metadata: ["holder": "\(holder.lowercasedString.prefix(8))"])
        guard tell != .nothing else { return }
        await carryOut(tell)
        events.publish(LocalEvent(at: now, .clipboardChanged(state)))
        logger.info("the copy its agent held was withdrawn")
    }

    /// `POST /v1/clipboard`: something was copied here.
    package func announce(_ announcement: ClipboardAnnouncement) async throws(DaemonError) -> ClipboardState {
        let settings = current
        let probe = ClipboardNotice(copiedAt: clock.now(), lifetimeSeconds: settings.lifetimeSeconds, items: announcement.items)
        if let problem = probe.problem { throw DaemonError(ActivityError(.invalidValue, problem)) }
        if let large = announcement.items.first(where: { $0.size > settings.maximumSize }) {
            throw DaemonError(
                DaemonError.Code(.notOffered), "the copy's \(large.type) is \(large.size) bytes, over [clipboard] max_size (\(settings.maximumSize)): it is not announced"
            )
        }
        let now = clock.now()
        let (tell, state, enabled, held, changed) = board.withLock { b in
            let before = b
            // A copy nobody holds could not be pasted: refused, unless it withdraws (no items).
            let held = announcement.items.isEmpty || announcement.holder.map { id in holders.withLock { $0[id] != nil } } ?? false
            guard held else { return (ClipboardBoard.Tell.nothing, b.state(settings), b.enabled, false, false) }
            _ = b.expire(now: now)
            let tell = b.copied(announcement.items, holder: announcement.holder, now: now, settings: settings)
            return (tell, b.state(settings), b.enabled, true, b != before)
        }
        guard enabled else {
            throw DaemonError(.clipboardOff, "the clipboard is not shared on this device; turn it on with: handoffctl clipboard on")
        }
        guard held else {
            throw DaemonError(
                ActivityError(
                    .invalidValue,
                    announcement.holder == nil
                        ? "a copy is announced with the holder id POST \(LocalAPIRoute.clipboardHolder) gave (the agent that serves its pastes); a handoff-desktop older than handoffd does not: restart it"
                        : "holder \(announcement.holder!.lowercasedString) is not connected any more: hold the clipboard again (POST \(LocalAPIRoute.clipboardHolder))"
                )
            )
        }
        await carryOut(tell)
        // Nothing to withdraw, nothing new: nobody needs to hear of it.
        if changed { events.publish(LocalEvent(at: now, .clipboardChanged(state))) }
        logger.info("a copy was announced", metadata: ["forms": "\(announcement.items.count)"])
        return state
    }

    /// The switch changed (`handoffctl clipboard on|off`, the status icon, handoffd.toml).
    package func setEnabled(_ on: Bool) async {
        let now = clock.now()
        let settings = current
        let (tell, state, changed) = board.withLock { b in
            let before = b.enabled
            let tell = b.setEnabled(on, now: now, settings: settings)
            return (tell, b.state(settings), before != on)
        }
        guard changed else { return }
        await carryOut(tell)
        events.publish(LocalEvent(at: now, .clipboardChanged(state)))
        logger.info("the clipboard was turned \(on ? "on" : "off")")
    }

    /// A member announced a copy, or withdrew one.
    func heard(_ notice: ClipboardNotice, from peer: LocalEvent.PeerRef) {
        let now = clock.now()
        let settings = current
        let (changed, state) = board.withLock { b in
            _ = b.expire(now: now)
            return (b.heard(notice, from: peer, now: now, settings: settings), b.state(settings))
        }
        guard changed else { return }
        events.publish(LocalEvent(at: now, .clipboardChanged(state)))
        logger.info("another device's copy was heard of", metadata: ["peer": "\(peer.id.short)", "forms": "\(notice.items.count)"])
    }

    /// What a session that just opened is told: this device's copy, if it still runs.
    func noticeForNewcomer() -> ClipboardNotice? {
        let now = clock.now()
        return board.withLock { $0.noticeForNewcomer(now: now) }
    }

    private func carryOut(_ tell: ClipboardBoard.Tell) async {
        guard case .everyone(let notice) = tell else { return }
        _ = await sessions.broadcast(.clipboardNotice(notice))
    }

    /// `POST /v1/clipboard/COPY/TYPE`: a paste of form `type` of another device's copy `copyID`
    /// — the newest copy, while it lasts. The bytes come on the stream (at most the size
    /// announced, which is at most `max_size`; for a file of its file list, the size the other
    /// device gives as it sends it, also at most `max_size`).
    package func paste(copyID: UUID, type: String) async throws(DaemonError) -> (ContinuationStreams.Prepared, limit: Int64) {
        let now = clock.now()
        let settings = current
        let (newest, enabled) = board.withLock { b in
            _ = b.expire(now: now)
            return (b.newest, b.enabled)
        }
        guard enabled else { throw DaemonError(.clipboardOff, "the clipboard is not shared on this device; turn it on with: handoffctl clipboard on") }
        guard let newest, let peer = newest.peer else {
            throw DaemonError(.noClipboard, "no copy from another device is on the clipboard (copies last \(settings.lifetimeSeconds) s)")
        }
        guard newest.notice.id == copyID else {
            throw DaemonError(.noClipboard, "that copy is no longer the newest; paste again")
        }
        let file = ClipboardNotice.fileIndex(type)
        let form = file == nil ? type : ClipboardNotice.fileListType
        guard let item = newest.notice.items.first(where: { $0.type == form }) else {
            throw DaemonError(.noClipboard, "the copy from \(peer.name) has no \(form) form (it has \(newest.notice.items.map(\.type).joined(separator: ", ")))")
        }
        guard file != nil || item.size <= settings.maximumSize else {
            throw DaemonError(DaemonError.Code(.notOffered), "the copy from \(peer.name) is \(item.size) bytes, over [clipboard] max_size here (\(settings.maximumSize))")
        }
        let prepared: ContinuationStreams.Prepared
        do {
            prepared = try await resuming.openClipboard(copyID: copyID, type: type, from: peer)
        } catch where error.code == .activityChanged {
            // Copied over or run out there: for the paster, there is no such copy any more.
            throw DaemonError(.noClipboard, error.message)
        }
        if let file {
            // A file is sent with its size; without one, the other agent refused (no file there).
            guard let length = prepared.record.info.expectedBytes else {
                prepared.abandon(because: "entry \(file) of the file list is not a file there")
                throw DaemonError(.streamRefused, "entry \(file) of the file list copied on \(peer.name) is not a file there (a folder, or gone)")
            }
            guard length <= settings.maximumSize else {
                prepared.abandon(because: "the file is over [clipboard] max_size on the device pasting")
                throw DaemonError(
                    DaemonError.Code(.notOffered), "file \(file) of the copy from \(peer.name) is \(length) bytes, over [clipboard] max_size here (\(settings.maximumSize))"
                )
            }
            return (prepared, length)
        }
        if let length = prepared.record.info.expectedBytes, length != item.size {
            prepared.abandon(because: "the other device sends another size than it announced")
            throw DaemonError(.streamRefused, "\(peer.name) sends \(length) bytes of \(type), not the \(item.size) announced; nothing was pasted")
        }
        return (prepared, item.size)
    }
}

extension SharedClipboard: ClipboardStreamServer {
    /// Another device pastes from this device's copy: the agent holding it is asked to take the
    /// stream, on its own holder stream. A copy whose holder is gone is refused at once.
    package func requestStream(_ streamID: UUID, copyID: UUID, type: String, from peer: LocalEvent.PeerRef) throws(DaemonError) {
        let now = clock.now()
        let (refusal, holder) = board.withLock { b in
            _ = b.expire(now: now)
            let holder = b.local?.holder.flatMap { id in holders.withLock { $0[id] } }
            return (b.refusal(copyID: copyID, type: type, now: now), holder)
        }
        if let refusal { throw DaemonError(.activityChanged, refusal) }
        let event = ClipboardHolderEvent(at: now, .pasteRequested(streamID: streamID, copyID: copyID, type: type, peer: peer))
        guard let holder, case .enqueued = holder.yield(event) else {
            throw DaemonError(.streamRefused, "nothing there serves the clipboard right now")
        }
        // For `handoffctl watch`; the holder alone takes the stream.
        events.publish(LocalEvent(at: now, .clipboardStreamRequested(streamID: streamID, copyID: copyID, type: type, peer: peer)))
        logger.info("another device pastes this device's copy", metadata: ["peer": "\(peer.id.short)", "stream": "\(streamID.lowercasedString)"])
    }
}

/// `clipboardNotice` on member sessions: what another device copied, and this device's copy told
/// to a device whose session just opened.
package struct ClipboardMessages: PeerMessageHandler {
    let clipboard: SharedClipboard

    package init(clipboard: SharedClipboard) {
        self.clipboard = clipboard
    }

    package var kinds: Set<PeerMessage.Kind> { [.clipboardNotice] }

    package func opened(_ talk: PeerTalk) async throws {
        if let notice = clipboard.noticeForNewcomer() { try await talk.send(.clipboardNotice(notice)) }
    }

    package func handle(_ message: PeerMessage, _ talk: PeerTalk) async throws {
        guard case .clipboardNotice(let notice) = message else { return }
        clipboard.heard(notice, from: talk.peer)
    }
}
