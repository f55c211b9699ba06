#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DesktopCore
import DesktopNotifications
import HandoffAPI
import HandoffClient
import HandoffModel
import HandoffSystem
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What the notification about another device's copy does, as a value (table-tested): one
/// notification for the newest copy from another device while the clipboard is on, replaced by a
/// newer copy's, closed when the copy is withdrawn, replaced by one of this device, turned off or
/// runs out.
package struct ClipboardNotePlan: Equatable, Sendable {
    package enum Action: Equatable, Sendable {
        case nothing
        /// Show this copy's notification, in place of the one shown (if any).
        case show(ClipboardCopy, replacing: UInt32?)
        case close(UInt32)
    }

    /// The copy the notification is (or is about to be) about.
    package private(set) var copy: ClipboardCopy?
    /// The notification shown for it; nil until the server said which, or once it went.
    package private(set) var note: UInt32?

    package init() {}

    /// What handoffd says of the clipboard now.
    package mutating func changed(_ state: ClipboardState, now: Timestamp) -> Action {
        let remote = state.enabled ? state.newest.flatMap { $0.peer == nil || $0.expiresAt <= now ? nil : $0 } : nil
        if let remote {
            guard remote.id != copy?.id else { return .nothing }
            copy = remote
            defer { note = nil }
            return .show(remote, replacing: note)
        }
        return forget()
    }

    /// The copy's time is up (by this device's clock).
    package mutating func tick(now: Timestamp) -> Action {
        guard let copy, copy.expiresAt <= now else { return .nothing }
        return forget()
    }

    /// The server showed the notification for `copyID` as `id` (nil: it did not show it).
    package mutating func shown(_ id: UInt32?, for copyID: UUID) {
        if copy?.id == copyID { note = id }
    }

    /// The user chose the notification `id`: the copy to paste, if it is ours. The server closes
    /// a notification whose action was chosen.
    package mutating func chosen(_ id: UInt32) -> ClipboardCopy? {
        guard id == note, let copy else { return nil }
        note = nil
        return copy
    }

    /// The notification `id` went (the user closed it, or it expired there).
    package mutating func closed(_ id: UInt32) {
        if id == note { note = nil }
    }

    private mutating func forget() -> Action {
        copy = nil
        guard let note else { return .nothing }
        self.note = nil
        return .close(note)
    }
}

/// Where the agent cannot reach the session's clipboard — GNOME's Wayland session, whose
/// compositor has no data-control, without an X server (docs/clipboard.md) — another device's
/// copy is a notification instead: "Paste from DEVICE" fetches it, keeps it in
/// `Downloads/Handoff` (`HandoffPaths.received`; a file list's files, one by one) and opens it
/// with the desktop's default app (`xdg-open`), since there is no clipboard to put it on.
package struct ClipboardNotes: Sendable {
    /// Fetches and keeps the copy; its environment is the session's (what opens a file).
    package let keeper: ClipboardKeeper
    package let server: NotificationServer
    /// The notification shown now, for the agent to route the server's replies here.
    package let shown: SharedNote
    package let logger: Logger

    package init(keeper: ClipboardKeeper, server: NotificationServer, shown: SharedNote, logger: Logger) {
        self.keeper = keeper
        self.server = server
        self.shown = shown
        self.logger = logger
    }

    static let pasteAction = "paste"

    /// The kind kept, best first: a picture as a picture, files as the files (a list naming no
    /// file is kept as the text that comes with it), else text.
    static let savedTypes = ["image/png", "image/jpeg", "text/uri-list", "text/plain;charset=utf-8", "text/plain", "text/html"]

    /// Runs until `inbox` ends.
    package func run(_ inbox: AsyncStream<ClipboardAgent.Input>, post: AsyncStream<ClipboardAgent.Input>.Continuation) async {
        let alarm = Alarm()
        var plan = ClipboardNotePlan()
        var maximumSize = Int64(ClipboardAgent.readLimit)
        await withDiscardingTaskGroup { group in
            group.addTask { await alarm.run { post.yield(.tick) } }
            for await input in inbox {
                var action = ClipboardNotePlan.Action.nothing
                switch input {
                case .daemon(let state):
                    maximumSize = state.maximumSize
                    action = plan.changed(state, now: .now())
                case .tick:
                    action = plan.tick(now: .now())
                case .noteChosen(let id):
                    guard let copy = plan.chosen(id) else { break }
                    shown.value = nil
                    let budget = maximumSize
                    group.addTask { await paste(copy, budget: budget) }
                case .noteClosed(let id):
                    plan.closed(id)
                    if plan.note == nil { shown.value = nil }
                case .holding, .streamRequested, .session, .filesKept:
                    break
                }
                switch action {
                case .nothing:
                    break
                case .show(let copy, let replacing):
                    let id = try? await server.notify(Self.note(for: copy), replacing: replacing)
                    plan.shown(id, for: copy.id)
                    shown.value = plan.note
                case .close(let id):
                    shown.value = nil
                    _ = try? await server.close(id)
                }
                alarm.set(plan.copy?.expiresAt)
            }
            group.cancelAll()
        }
        if let id = plan.note { _ = try? await server.close(id) }
    }

    package static func note(for copy: ClipboardCopy) -> Note {
        let device = copy.peer?.name ?? "another device"
        let kind = savedTypes.first { type in copy.items.contains { $0.type == type } } ?? copy.items.first?.type ?? ""
        return Note(
            appName: "Handoff", icon: "edit-paste", summary: "Copied on \(device): \(words(for: kind))",
            body: "This session’s clipboard is out of handoff’s reach. Paste from \(device) keeps the copy in Downloads/Handoff and opens it.",
            actions: [Note.Action(key: "default", label: "Paste from \(device)"), Note.Action(key: pasteAction, label: "Paste from \(device)")],
            expireMilliseconds: 0, desktopEntry: "handoff-desktop"
        )
    }

    package static func words(for type: String) -> String {
        switch type {
        case "image/png", "image/jpeg": "a picture"
        case "text/uri-list": "files or links"
        case "text/html": "formatted text"
        default: "text"
        }
    }

    /// The file's name: `Clipboard from DEVICE.EXT`, the device's name made safe for a file name.
    package static func fileName(for type: String, from device: String) -> String {
        let ext =
            switch type {
            case "image/png": "png"
            case "image/jpeg": "jpg"
            case "text/html": "html"
            default: "txt"
            }
        // At most 255 bytes, the extension kept.
        return FileKeeping.numbered("Clipboard from \(FileList.visible(device)).\(ext)", 1)
    }

    /// Fetches `copy` into Downloads/Handoff, opens it, and says what happened: a picture as the
    /// picture, a file list as its files (at most `budget` bytes together; the folder opens),
    /// else the text.
    private func paste(_ copy: ClipboardCopy, budget: Int64) async {
        let device = copy.peer?.name ?? "another device"
        let forms = Self.savedTypes.filter { type in copy.items.contains { $0.type == type } }
        guard var type = forms.first ?? copy.items.first?.type else { return }
        var outcome: (path: String, what: String)?
        var failure: String?
        if type == ClipboardNotice.fileListType {
            let list = await keeper.fetch(type, of: copy).map(FileList.uris)
            if let list, list.contains(where: { FileList.path(of: $0) != nil }) {
                let (_, kept, failures) = await keeper.keepFiles(of: copy, uris: list, budget: budget)
                if kept > 0 {
                    outcome = (HandoffPaths.received(environment: keeper.environment), kept == 1 ? "1 file" : "\(kept) files")
                } else {
                    failure = failures.first ?? "no file came"
                }
            } else if list == nil {
                failure = "the list of files did not come"
            } else if let text = forms.dropFirst().first {
                type = text  // links only: the text that comes with them
            } else {
                failure = "the copy names no file, only links: paste it with handoffctl clipboard paste"
            }
        }
        if outcome == nil, failure == nil {
            switch await keeper.keep(type, of: copy, as: Self.fileName(for: type, from: device)) {
            case .kept(let path, _): outcome = (path, path)
            case .failed(let reason): failure = reason
            }
        }
        let note: Note
        if let outcome {
            logger.info("another device's copy was kept from a notification", metadata: ["device": "\(device)", "type": "\(type)"])
            let opened = open(outcome.path)
            note = Note(
                appName: "Handoff", icon: "edit-paste", summary: "Pasted from \(device)",
                body: "Kept \(type == ClipboardNotice.fileListType ? "\(outcome.what) in \(outcome.path)" : "as \(outcome.path)")"
                    + (opened.map { "; it cannot be opened here: \($0)" } ?? ""),
                actions: [], expireMilliseconds: 10_000, desktopEntry: "handoff-desktop"
            )
        } else {
            let reason = failure ?? "nothing came"
            logger.notice("a paste from a notification failed", metadata: ["device": "\(device)", "error": "\(reason)"])
            note = Note(
                appName: "Handoff", icon: "dialog-warning", summary: "Could not paste from \(device)", body: reason, actions: [],
                expireMilliseconds: 10_000, desktopEntry: "handoff-desktop"
            )
        }
        _ = try? await server.notify(note, replacing: nil)
    }

    /// Opens `path` with the desktop's default app; nil, or why not.
    private func open(_ path: String) -> String? {
        do throws(ChildProcess.SpawnError) {
            let pid = try ChildProcess.spawn("xdg-open", arguments: [path], environment: keeper.environment, stdout: .null, stderr: .null, newSession: true)
            if !BlockingThread.detach(name: "handoff-reap", { _ = ChildProcess.wait(pid) }) { _ = ChildProcess.wait(pid) }
            return nil
        } catch {
            return error.errno == ENOENT ? "xdg-open is not installed (sudo apt install xdg-utils)" : error.description
        }
    }
}

/// The id of a notification one task shows and another routes replies by.
package final class SharedNote: Sendable {
    private let id = Mutex<UInt32?>(nil)

    package init() {}

    package var value: UInt32? {
        get { id.withLock { $0 } }
        set { id.withLock { $0 = newValue } }
    }
}
