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
import SessionClipboard
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The clipboard's side of the agent (docs/clipboard.md): what an app copies here is read (the
/// kinds carried, unless a password manager marked it secret) and announced to handoffd, and kept
/// in memory until it runs out, for a device that pastes it; another device's copy is offered as
/// this session's clipboard, and fetched only when an app pastes it.
///
/// Decisions are `SharedClipboard`'s in handoffd; this carries out what its events say, in one
/// loop, with the session's clipboard (`ClipboardBackend`: the X server's, or a Wayland compositor's) as
/// its edge.
package struct ClipboardAgent: Sendable {
    package let client: HandoffClient
    package let backend: any ClipboardBackend
    /// Fetches another device's copy when an app pastes it; keeps the files of its file list.
    package let keeper: ClipboardKeeper
    /// Files of this device's copy being sent to other devices now.
    let serving = FileServing()
    package let logger: Logger

    /// The largest kind read from an app: handoffd's default `[clipboard] max_size` (a smaller
    /// one set there drops larger kinds before they are announced).
    package static let readLimit = 64 << 20
    /// How long another device may take to read what it pastes from this one.
    static let serveTimeout: Int = 30
    /// Copies whose offer another app ended here, remembered so that no later word from
    /// handoffd offers them again over what the user copied since.
    static let rememberedEnded = 16

    /// `environment`: the session's variables, with HOME (where Downloads is); `pasteTimeout`:
    /// how long an app's paste waits for another device (and a second per MiB) before it gets
    /// nothing.
    package init(client: HandoffClient, backend: any ClipboardBackend, environment: [String: String], pasteTimeout: Duration = .seconds(10), logger: Logger) {
        self.client = client
        self.backend = backend
        self.keeper = ClipboardKeeper(client: client, environment: environment, timeout: pasteTimeout, logger: logger)
        self.logger = logger
    }

    package enum Input: Sendable {
        /// What handoffd says of the clipboard (at each connection, then each `clipboardChanged`).
        case daemon(ClipboardState)
        /// The agent holds this device's copies in handoffd under this id (`POST
        /// /v1/clipboard/holder`); nil: that ended (handoffd went), and the copy held with it.
        case holding(UUID?)
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
    /// for it; then the list as it reads here, for the pastes after (a failure is not kept: the
    /// next paste tries again).
    private struct Files {
        let copyID: UUID
        var waiting: [PasteRequest] = []
        var list: [UInt8]?
        let stop = ClipboardKeeper.Stop()
    }

    /// How many files of this device's copies are sent at once: a device asking for more waits
    /// for none of them — it is refused.
    static let maximumServing = 4

    /// Runs until `inbox` ends; the X server's events join it.
    package func run(_ inbox: AsyncStream<Input>, post: AsyncStream<Input>.Continuation) async {
        let alarm = Alarm()
        var state: ClipboardState?
        var holder: UUID?
        /// A copy made while handoffd held no holder of ours (it was away, or the holder stream
        /// not open yet): announced once it is.
        var unannounced: (forms: [ClipboardForm], secret: Bool)?
        var local: Local?
        var offered: ClipboardCopy?
        var ended: [UUID] = []
        var files: Files?
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await event in backend.events { post.yield(.session(event)) }
            }
            group.addTask { await alarm.run { post.yield(.tick) } }
            group.addTask { await holdCopies(post) }
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
                    if !new.enabled { (local, unannounced) = (nil, nil) }
                    if new.enabled, let holder, let copy = unannounced {
                        unannounced = nil
                        local = await announce(copy.forms, secret: copy.secret, holder: holder)
                    }
                    let wanted = new.enabled ? new.newest.flatMap { $0.peer == nil || ended.contains($0.id) ? nil : $0 } : nil
                    if let wanted, wanted.id != offered?.id {
                        backend.offer(types: wanted.items.map(\.type))
                        logger.info("another device's copy is offered", metadata: ["device": "\(wanted.peer?.name ?? "")", "kinds": "\(wanted.items.count)"])
                    } else if wanted == nil, offered != nil {
                        backend.withdraw()
                    }
                    offered = wanted
                    if let kept = files, kept.copyID != wanted?.id { files = Self.drop(kept, backend) }
                case .holding(let new):
                    // A copy held under another id is gone from handoffd: nobody asks for it.
                    if new != holder { local = nil }
                    holder = new
                    if let new, let copy = unannounced, state?.enabled == true {
                        unannounced = nil
                        local = await announce(copy.forms, secret: copy.secret, holder: new)
                    }
                case .session(.copied(let forms, let secret)):
                    guard let current = state, current.enabled else { continue }
                    let kept = secret ? [] : forms.filter { Int64($0.bytes.count) <= current.maximumSize }
                    guard let holder else {
                        unannounced = (kept, secret)
                        logger.info("a copy here waits for handoffd to be announced")
                        continue
                    }
                    unannounced = nil
                    local = await announce(kept, secret: secret, holder: holder)
                case .session(.pasteRequested(let request)):
                    guard let copy = offered else {
                        backend.answer(request, with: nil)
                        continue
                    }
                    guard request.type == ClipboardNotice.fileListType else {
                        group.addTask { backend.answer(request, with: await keeper.fetch(request.type, of: copy)) }
                        continue
                    }
                    // A file list: its files come first, once for all the pastes of this copy.
                    if let kept = files, kept.copyID != copy.id { files = Self.drop(kept, backend) }
                    var current = files ?? Files(copyID: copy.id)
                    if let list = current.list {
                        backend.answer(request, with: list)
                        continue
                    }
                    current.waiting.append(request)
                    if current.waiting.count == 1 {
                        let (stop, budget) = (current.stop, state?.maximumSize ?? Int64(Self.readLimit))
                        group.addTask { post.yield(.filesKept(copyID: copy.id, list: await keepFiles(of: copy, budget: budget, stop: stop))) }
                    }
                    files = current
                case .filesKept(let copyID, let list):
                    guard var current = files, current.copyID == copyID else { continue }
                    for request in current.waiting { backend.answer(request, with: list) }
                    current.waiting = []
                    current.list = list
                    files = current
                case .session(.notRead):
                    logger.info("a copy here was not read: the clipboard is off")
                case .session(.offerEnded):
                    // Another app copied: its copy comes as `copied`.
                    if let copy = offered { ended = Array((ended + [copy.id]).suffix(Self.rememberedEnded)) }
                    offered = nil
                    if let kept = files { files = Self.drop(kept, backend) }
                case .session(.disconnected):
                    logger.notice("the display server went away; the clipboard is no longer shared from this session")
                case .streamRequested(let streamID, let copyID, let type):
                    guard let local, local.id == copyID else {
                        // Not held here (any more): taken and dropped, so that the device
                        // pasting hears it now rather than at handoffd's deadline.
                        group.addTask { await refuse(streamID) }
                        continue
                    }
                    if let index = ClipboardNotice.fileIndex(type) {
                        // A place is taken only for a file that is there to send.
                        let file = local.files[index]
                        let path = file != nil && serving.begin() ? file : nil
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
                    if let kept = files { files = Self.drop(kept, backend) }
                }
                alarm.set([local?.expiresAt, offered?.expiresAt].compactMap { $0 }.min())
            }
            group.cancelAll()
        }
        backend.withdraw()
    }

    /// Holds this device's copies in handoffd for as long as it runs (`POST
    /// /v1/clipboard/holder`), and again each time handoffd is back: its id goes to the loop as
    /// `holding`, each paste another device asks for as `streamRequested`. The connection
    /// closing — the agent stopping, or crashing — is what tells handoffd its copy is gone.
    private func holdCopies(_ post: AsyncStream<Input>.Continuation) async {
        var failures = 0
        while !Task.isCancelled {
            do throws(HandoffClientError) {
                let events = try await client.subscribe(.holdClipboard)
                failures = 0
                let ended = await withTaskCancellationHandler { () async -> HandoffClientError? in
                    do throws(HandoffClientError) {
                        while let event = try await events.next() {
                            switch event.body {
                            case .holding(let holder): post.yield(.holding(holder))
                            case .pasteRequested(let streamID, let copyID, let type, _):
                                post.yield(.streamRequested(streamID: streamID, copyID: copyID, type: type))
                            case .unknown: break
                            }
                        }
                        return nil
                    } catch {
                        return error
                    }
                } onCancel: {
                    events.close()
                }
                if let ended { throw ended }
            } catch {
                // handoffd is away: DesktopAgent says so, once.
            }
            post.yield(.holding(nil))
            let delay = AgentOptions.reconnectDelays[min(failures, AgentOptions.reconnectDelays.count - 1)]
            failures += 1
            guard (try? await QuietSleep.sleep(for: delay)) != nil else { return }
        }
    }

    /// A paste of a copy this agent does not hold: its stream is taken and closed at once.
    private func refuse(_ streamID: UUID) async {
        (try? await client.pipe(.takeStream(streamID)))?.close()
        logger.info("another device asked for a copy that is not held here any more")
    }

    /// Tells handoffd what was copied (nothing carried, or a secret: its last copy is withdrawn),
    /// held by `holder`; what it gives out then, held here.
    private func announce(_ forms: [ClipboardForm], secret: Bool, holder: UUID) async -> Local? {
        let items = forms.map { ClipboardItem(type: $0.type, size: Int64($0.bytes.count)) }
        do throws(HandoffClientError) {
            let answer = try await client.send(.announceClipboard(ClipboardAnnouncement(items: items, holder: holder)))
            logger.info("a copy here was announced", metadata: ["kinds": "\(items.count)", "secret": "\(secret)"])
            guard let copy = answer.local, !forms.isEmpty else { return nil }
            let kept = Dictionary(forms.map { ($0.type, $0.bytes) }, uniquingKeysWith: { first, _ in first })
            let list = kept[ClipboardNotice.fileListType]
            // Looked at on the disk thread: a slow disk or a network mount holds no task's thread.
            let files = list == nil ? [:] : await DiskThread.shared.run { FileList.files(FileList.uris(list!)) }
            return Local(id: copy.id, forms: kept, files: files, expiresAt: copy.expiresAt)
        } catch {
            logger.notice("a copy here could not be announced", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// A file list's keeping no longer wanted (another copy came, the offer ended): the pastes
    /// waiting for it get nothing, and no further file is asked for.
    private static func drop(_ files: Files, _ backend: any ClipboardBackend) -> Files? {
        files.stop.set()
        for request in files.waiting { backend.answer(request, with: nil) }
        return nil
    }

    /// Another device pastes a file of this device's file list (`serving` was taken for it,
    /// unless `path` is nil): handoffd reads it itself (the file socket), within `serveTimeout`
    /// and a second per MiB. One that is not a regular file here (a folder, a pipe, gone) — or
    /// one asked for while `maximumServing` are under way — is refused at once: the stream is
    /// taken and dropped.
    private func serveFile(_ path: String?, on streamID: UUID) async {
        let fd: Int32 = await DiskThread.shared.run {
            guard let path else { return -1 }
            // Not blocking on a FIFO put there since; a regular file only.
            let fd = SystemCall.retrying { open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY) }
            var st = stat()
            guard fd >= 0 else { return -1 }
            guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
                close(fd)
                return -1
            }
            return fd
        }
        defer { if path != nil { serving.end() } }
        guard fd >= 0 else {
            (try? await client.pipe(.takeStream(streamID)))?.close()
            logger.notice("another device asked for a file of the copy here that is not served", metadata: ["reason": "\(path == nil ? "not a file, or too many at once" : "not a regular file")"])
            return
        }
        defer { close(fd) }
        var st = stat()
        let size = fstat(fd, &st) == 0 ? Int(st.st_size) : 0
        do throws(HandoffClientError) {
            let stream = try await client.fileStream(.takeStream(streamID), file: fd, role: .send)
            let info = try await stream.outcome(withinSeconds: Self.serveTimeout + size >> 20)
            logger.info("a file of the copy here was pasted on another device", metadata: ["state": "\(info.state.rawValue)", "bytes": "\(info.bytesSent)"])
        } catch {
            logger.notice("a file of the copy here could not be served", metadata: ["error": "\(error)"])
        }
    }

    /// An app here pastes another device's file list: its files are kept in Downloads/Handoff (at
    /// most `budget` bytes together), and the app gets the list as it reads here — nil when the
    /// list does not come, or nothing of it is left.
    private func keepFiles(of copy: ClipboardCopy, budget: Int64, stop: ClipboardKeeper.Stop) async -> [UInt8]? {
        guard let bytes = await keeper.fetch(ClipboardNotice.fileListType, of: copy) else { return nil }
        let (list, kept, failures) = await keeper.keepFiles(of: copy, uris: FileList.uris(bytes), budget: budget, stop: stop)
        if !failures.isEmpty {
            logger.notice("files of another device's copy did not come", metadata: ["count": "\(failures.count)", "first": "\(failures[0])"])
        }
        guard !list.isEmpty else { return nil }
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

/// The files of this device's copies being sent now, against `ClipboardAgent.maximumServing`.
final class FileServing: Sendable {
    private let count = Mutex(0)

    /// Takes a place; false when all are taken.
    package func begin() -> Bool {
        count.withLock {
            guard $0 < ClipboardAgent.maximumServing else { return false }
            $0 += 1
            return true
        }
    }

    package func end() { count.withLock { $0 = max(0, $0 - 1) } }
}
