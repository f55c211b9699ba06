#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffClient
import HandoffModel
import HandoffSystem
import Logging
import SessionClipboard

#if canImport(Glibc)
import Glibc
#endif

/// The clipboard's side of the agent (docs/clipboard.md): what an app copies here is read (the
/// kinds carried, unless a password manager marked it secret) and announced to handoffd, and kept
/// in memory until it runs out, for a device that pastes it; another device's copy is offered as
/// this session's clipboard, and fetched only when an app pastes it.
///
/// Decisions are `ClipboardDesk`'s in handoffd; this carries out what its events say, in one
/// loop, with the session's clipboard (`ClipboardBackend`: the X server's, or a Wayland compositor's) as
/// its edge.
package struct ClipboardAgent: Sendable {
    let client: HandoffClient
    let backend: any ClipboardBackend
    /// Fetches another device's copy when an app pastes it; keeps the files of its file list.
    let keeper: ClipboardKeeper
    /// How long an app's paste waits for another device before it gets nothing.
    let pasteTimeout: Duration
    let logger: Logger

    /// The largest kind read from an app: handoffd's default `[clipboard] max_size` (a smaller
    /// one set there drops larger kinds before they are announced).
    package static let readLimit = 64 << 20
    /// How long another device may take to read what it pastes from this one.
    static let serveTimeout: Int = 30
    /// Copies whose offer another app ended here, remembered so that no later word from
    /// handoffd offers them again over what the user copied since.
    static let rememberedEnded = 16

    /// `environment`: the session's variables, with HOME (where Downloads is).
    package init(client: HandoffClient, backend: any ClipboardBackend, environment: [String: String], pasteTimeout: Duration = .seconds(10), logger: Logger) {
        self.client = client
        self.backend = backend
        self.keeper = ClipboardKeeper(client: client, environment: environment, logger: logger)
        self.pasteTimeout = pasteTimeout
        self.logger = logger
    }

    package enum Input: Sendable {
        /// What handoffd says of the clipboard (at each connection, then each `clipboardChanged`).
        case daemon(ClipboardState)
        /// Another device pastes a kind of this device's copy.
        case streamRequested(streamID: UUID, copyID: UUID, type: String)
        case session(ClipboardEvent)
        case tick
        /// The user chose the notification about another device's copy (`ClipboardNotes`, where
        /// the session's clipboard is out of reach), or it went.
        case noteChosen(id: UInt32)
        case noteClosed(id: UInt32)
        /// The files of another device's file list were kept here: the list as it reads here
        /// (nil: none came).
        case filesKept(copyID: UUID, list: [UInt8]?)
    }

    /// This device's copy, held until it runs out.
    private struct Local {
        let id: UUID
        let forms: [String: [UInt8]]
        /// The regular files of its file list, by their place among the list's URIs.
        let files: [Int: String]
        let expiresAt: Timestamp
    }

    /// Another device's file list whose files are being kept here, and the apps' pastes waiting
    /// for it; then the list as it reads here, for the pastes after.
    private struct Files {
        let copyID: UUID
        var waiting: [PasteRequest] = []
        var list: [UInt8]?
        var done = false
    }

    /// Runs until `inbox` ends; the X server's events join it.
    package func run(_ inbox: AsyncStream<Input>, post: AsyncStream<Input>.Continuation) async {
        let alarm = Alarm()
        var state: ClipboardState?
        var local: Local?
        var offered: ClipboardCopy?
        var ended: [UUID] = []
        var files: Files?
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await event in backend.events { post.yield(.session(event)) }
            }
            group.addTask { await alarm.run { post.yield(.tick) } }
            for await input in inbox {
                switch input {
                case .daemon(let new):
                    if new.enabled != state?.enabled {
                        backend.read(new.enabled)
                        logger.info(new.enabled ? "the clipboard is shared: copies here are read" : "the clipboard is off here: copies are not read")
                    }
                    state = new
                    // Only the switch drops what was copied here: a word from before the last
                    // copy may name the copy before it.
                    if !new.enabled { local = nil }
                    let wanted = new.enabled ? new.newest.flatMap { $0.peer == nil || ended.contains($0.id) ? nil : $0 } : nil
                    if let wanted, wanted.id != offered?.id {
                        backend.offer(types: wanted.items.map(\.type))
                        logger.info("another device's copy is offered", metadata: ["device": "\(wanted.peer?.name ?? "")", "kinds": "\(wanted.items.count)"])
                    } else if wanted == nil, offered != nil {
                        backend.withdraw()
                    }
                    offered = wanted
                case .session(.copied(let forms, let secret)):
                    guard let current = state, current.enabled else { continue }
                    let kept = secret ? [] : forms.filter { Int64($0.bytes.count) <= current.maximumSize }
                    local = await announce(kept, secret: secret)
                case .session(.pasteRequested(let request)):
                    guard let copy = offered else {
                        backend.answer(request, with: nil)
                        continue
                    }
                    guard request.type == ClipboardNotice.fileListType else {
                        let timeout = pasteTimeout
                        group.addTask { backend.answer(request, with: await keeper.fetch(request.type, of: copy, timeout: timeout)) }
                        continue
                    }
                    // A file list: its files come first, once for all the pastes of this copy.
                    if files?.copyID != copy.id {
                        // Pastes of an older copy's files get nothing: that copy is gone here.
                        for waiting in files?.waiting ?? [] { backend.answer(waiting, with: nil) }
                        files = Files(copyID: copy.id)
                    }
                    if files?.done == true {
                        backend.answer(request, with: files?.list)
                        continue
                    }
                    files?.waiting.append(request)
                    if files?.waiting.count == 1 {
                        let timeout = pasteTimeout
                        group.addTask { post.yield(.filesKept(copyID: copy.id, list: await keepFiles(of: copy, timeout: timeout))) }
                    }
                case .filesKept(let copyID, let list):
                    guard var current = files, current.copyID == copyID else { continue }
                    for request in current.waiting { backend.answer(request, with: list) }
                    current.waiting = []
                    current.list = list
                    current.done = true
                    files = current
                case .session(.notRead):
                    logger.info("a copy here was not read: the clipboard is off")
                case .session(.offerEnded):
                    // Another app copied: its copy comes as `copied`.
                    if let copy = offered { ended = Array((ended + [copy.id]).suffix(Self.rememberedEnded)) }
                    offered = nil
                case .session(.disconnected):
                    logger.notice("the display server went away; the clipboard is no longer shared from this session")
                case .streamRequested(let streamID, let copyID, let type):
                    guard let local, local.id == copyID else { continue }
                    if let index = ClipboardNotice.fileIndex(type) {
                        let path = local.files[index]
                        group.addTask { await serveFile(path, on: streamID) }
                    } else if let bytes = local.forms[type] {
                        group.addTask { await serve(bytes, on: streamID) }
                    }
                case .tick, .noteChosen, .noteClosed:
                    break
                }
                let now = Timestamp.now()
                if let held = local, held.expiresAt <= now { local = nil }
                if let copy = offered, copy.expiresAt <= now {
                    backend.withdraw()
                    offered = nil
                }
                alarm.set([local?.expiresAt, offered?.expiresAt].compactMap { $0 }.min())
            }
            group.cancelAll()
        }
        backend.withdraw()
    }

    /// Tells handoffd what was copied (nothing carried, or a secret: its last copy is withdrawn);
    /// what it gives out then, held here.
    private func announce(_ forms: [ClipboardForm], secret: Bool) async -> Local? {
        let items = forms.map { ClipboardItem(type: $0.type, size: Int64($0.bytes.count)) }
        do throws(HandoffClientError) {
            let answer = try await client.send(.announceClipboard(ClipboardAnnouncement(items: items)))
            logger.info("a copy here was announced", metadata: ["kinds": "\(items.count)", "secret": "\(secret)"])
            guard let copy = answer.local, !forms.isEmpty else { return nil }
            let kept = Dictionary(forms.map { ($0.type, $0.bytes) }, uniquingKeysWith: { first, _ in first })
            let files = kept[ClipboardNotice.fileListType].map { FileList.files(FileList.uris($0)) } ?? [:]
            return Local(id: copy.id, forms: kept, files: files, expiresAt: copy.expiresAt)
        } catch {
            logger.notice("a copy here could not be announced", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// Another device pastes a file of this device's file list: handoffd reads it itself (the
    /// file socket). One that is not a regular file here (a folder, gone) is refused at once: the
    /// stream is taken and dropped.
    private func serveFile(_ path: String?, on streamID: UUID) async {
        let fd = path.map { path in SystemCall.retrying { open(path, O_RDONLY | O_CLOEXEC) } } ?? -1
        guard fd >= 0, HandedOverFile.isAccepted(fd) else {
            if fd >= 0 { close(fd) }
            (try? await client.pipe(.takeStream(streamID)))?.close()
            logger.notice("another device asked for a file of the copy here that is not a file")
            return
        }
        defer { close(fd) }
        do throws(HandoffClientError) {
            let info = try await client.fileStream(.takeStream(streamID), file: fd, role: .send).outcome()
            logger.info("a file of the copy here was pasted on another device", metadata: ["state": "\(info.state.rawValue)", "bytes": "\(info.bytesSent)"])
        } catch {
            logger.notice("a file of the copy here could not be served", metadata: ["error": "\(error)"])
        }
    }

    /// An app here pastes another device's file list: its files are kept in Downloads/Handoff,
    /// and the app gets the list as it reads here (nil when it does not come, or no file does).
    private func keepFiles(of copy: ClipboardCopy, timeout: Duration) async -> [UInt8]? {
        guard let bytes = await keeper.fetch(ClipboardNotice.fileListType, of: copy, timeout: timeout) else { return nil }
        let uris = FileList.uris(bytes)
        let (list, kept, failures) = await keeper.keepFiles(of: copy, uris: uris)
        if !failures.isEmpty {
            logger.notice("files of another device's copy did not come", metadata: ["count": "\(failures.count)", "first": "\(failures[0])"])
        }
        guard kept > 0 || failures.isEmpty else { return nil }
        logger.info("files of another device's copy were kept", metadata: ["device": "\(copy.peer?.name ?? "")", "files": "\(kept)"])
        return FileList.text(list)
    }

    /// Another device pastes: the bytes go out on the stream handoffd offered, within
    /// `serveTimeout` of silence (a device that stops reading does not hold this up for ever).
    private func serve(_ bytes: [UInt8], on streamID: UUID) async {
        do throws(HandoffClientError) {
            let pipe = try await client.pipe(.takeStream(streamID))
            defer { pipe.close() }
            var wait = timeval(tv_sec: Self.serveTimeout, tv_usec: 0)
            setsockopt(pipe.fileDescriptor, SOL_SOCKET, SO_SNDTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(pipe.fileDescriptor, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
            try await pipe.write(bytes)
            pipe.finishWriting()
            _ = try await pipe.readToEnd(limit: 0)
        } catch {
            logger.notice("a paste on another device could not be served", metadata: ["error": "\(error)"])
        }
    }
}
