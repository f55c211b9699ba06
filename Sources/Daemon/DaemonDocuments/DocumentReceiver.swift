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
import HandoffSystem
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// The continuing side of a document (docs/apps.md, "Documents from any app"): the same document,
/// if this device has it in the same place with the same content; else the copy that comes over a
/// continuation stream into `Downloads/Handoff/`, kept only once its size and SHA-256 are the
/// ones offered, under a name that overwrites nothing.
package struct DocumentReceiver: Sendable {
    let settings: @Sendable () -> DocumentSettings
    let globs: MIMEGlobs
    /// Where copies go: `$XDG_DOWNLOAD_DIR/Handoff` (`HandoffPaths.received`).
    let directory: String
    let resuming: ResumingStreams
    let logger: Logger

    /// A stream that brings nothing for this long is given up (its device may be alive, and stuck).
    static let stallLimit: Duration = .seconds(30)

    package init(settings: @escaping @Sendable () -> DocumentSettings, globs: MIMEGlobs, directory: String, resuming: ResumingStreams, logger: Logger) {
        self.settings = settings
        self.globs = globs
        self.directory = directory
        self.resuming = resuming
        self.logger = logger
    }

    package struct Found: Sendable {
        package let document: DocumentActivity
        package let path: String
        /// What this device takes it for (`DocumentReceiver.openingType`): the app for it opens it.
        package let mimeType: String
        /// Whether it came over the stream (else it was here already).
        package let received: Bool
    }

    /// The document `activity` names, here: found, or received and checked.
    package func fetch(_ activity: Activity, continuationID: UUID, from peer: LocalEvent.PeerRef) async throws(DaemonError) -> Found {
        let document: DocumentActivity
        do {
            document = try DocumentActivity(activity.content)
        } catch {
            throw DaemonError(.refused, "\(peer.name) sent a document this device cannot take: \(error.message)")
        }
        let mimeType = try Self.openingType(of: document, globs: globs)
        let settings = self.settings()
        if let here = await DocumentFile.thread.run({ Self.sameCopy(of: document, folders: settings.folders) }) {
            logger.info("a continued document is here already", metadata: ["continuation": "\(continuationID.lowercasedString)"])
            return Found(document: document, path: here, mimeType: mimeType, received: false)
        }
        guard document.size <= settings.maximumSize else {
            throw DaemonError(
                .notOffered, "\(document.name) from \(peer.name) is \(document.size) bytes, over [documents] max_size here (\(settings.maximumSize)): it was not fetched"
            )
        }
        let path = try await receive(document, continuationID: continuationID, from: peer)
        return Found(document: document, path: path, mimeType: mimeType, received: true)
    }

    /// The type the document is opened as here: what this device's MIME database says of its
    /// name, else what the other device said — never one whose app runs what it opens (the other
    /// device chose the name, and would choose the program).
    static func openingType(of document: DocumentActivity, globs: MIMEGlobs) throws(DaemonError) -> String {
        let type = globs.type(ofName: document.name) ?? (isDocumentFamily(document.mimeType) ? document.mimeType : MIMEGlobs.fallback)
        guard !runsPrograms(type) else {
            throw DaemonError(.noHandler, "\(document.name) is a file that runs a program (\(type)): documents of that kind are not opened from another device")
        }
        return type
    }

    /// The other device's word is taken only for documents' own kinds: text, pictures, sound,
    /// video, PDF, office documents, e-books.
    static func isDocumentFamily(_ type: String) -> Bool {
        let type = type.lowercased()
        let families = ["image/", "audio/", "video/", "application/vnd.oasis.opendocument.", "application/vnd.openxmlformats-officedocument."]
        let kinds: Set<String> = [
            "text/plain", "text/markdown", "text/csv", "application/pdf", "application/json", "application/epub+zip", "application/msword",
            "application/vnd.ms-excel", "application/vnd.ms-powerpoint", "application/rtf",
        ]
        return kinds.contains(type) || families.contains { type.hasPrefix($0) }
    }

    /// Types whose usual app runs the file: launchers, executables, scripts, installers.
    static func runsPrograms(_ type: String) -> Bool {
        let programs: Set<String> = [
            "application/x-desktop", "application/x-executable", "application/x-pie-executable", "application/x-sharedlib", "application/x-shellscript",
            "application/x-sh", "application/x-csh", "application/x-ms-dos-executable", "application/x-msdownload", "application/x-msi",
            "application/vnd.microsoft.portable-executable", "application/vnd.appimage", "application/x-iso9660-appimage", "application/x-java-archive",
            "application/x-java-jnlp-file", "application/x-perl", "application/x-ruby", "text/x-python", "text/x-python3", "application/x-python-code",
            "application/vnd.flatpak.ref", "application/vnd.flatpak.repo", "application/x-flatpak", "application/x-executable-script",
            "application/x-ms-shortcut", "application/x-bat", "application/x-powershell", "application/vnd.debian.binary-package",
            "application/x-deb", "application/x-rpm", "application/x-redhat-package-manager", "application/vnd.snap", "application/x-snap",
        ]
        return programs.contains(type.lowercased())
    }

    /// The file at the document's place here, if it holds the same bytes.
    static func sameCopy(of document: DocumentActivity, folders: DocumentFolders) -> String? {
        guard let path = folders.existing(document.place), let fd = try? DocumentFile.open(path) else { return nil }
        defer { close(fd) }
        guard DocumentFile.facts(fd)?.size == document.size, (try? DocumentFile.sha256(fd)) == document.sha256 else { return nil }
        return path
    }

    private func receive(_ document: DocumentActivity, continuationID: UUID, from peer: LocalEvent.PeerRef) async throws(DaemonError) -> String {
        var prepared = try await resuming.open(continuationID: continuationID)
        prepared.announcedLength = document.size
        if let announced = prepared.record.info.expectedBytes, announced != document.size {
            prepared.abandon(because: "the other device announced another size")
            throw DaemonError(.documentMismatch, "\(peer.name) sends \(announced) bytes for \(document.name), not the \(document.size) offered; nothing was kept")
        }
        let directory = self.directory
        let partial = directory + "/.\(continuationID.lowercasedString).part"
        let file: StreamFile
        do {
            file = try await DocumentFile.thread.run { () throws(DaemonError) -> StreamFile in
                try Self.makeDirectory(directory)
                Self.removeStalePartials(in: directory, now: Timestamp.now())
                let fd = SystemCall.retrying { open(partial, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600) }
                guard fd >= 0 else { throw DaemonError(.internalError, "cannot write \(partial): \(SystemCall.describe(errno))") }
                return try StreamFile(descriptor: fd, role: .receive)
            }
        } catch {
            prepared.abandon(because: "handoffd cannot write the document here")
            throw error
        }
        do {
            try await prepared.splice(toOwn: file, logger: logger)
        } catch {
            unlink(partial)
            throw error
        }
        let outcome = await Self.outcome(of: prepared)
        guard outcome.state == .completed else {
            unlink(partial)
            throw DaemonError(
                .unreachable, "\(document.name) did not come whole from \(peer.name) (\(outcome.error ?? "handoffd is stopping")); nothing was kept"
            )
        }
        return try await DocumentFile.thread.run { () throws(DaemonError) -> String in
            defer { unlink(partial) }
            try Self.check(partial, against: document, from: peer.name)
            return try Self.keep(partial, as: document.name, in: directory)
        }
    }

    /// The stream's end: it completed or failed, or it is given up — when nothing came for
    /// `stallLimit`, or handoffd stops (the task is cancelled) — and cut, so that nothing more
    /// is written. (A `handoffctl continue` interrupted does not cancel it: the document still
    /// comes and opens.)
    static func outcome(of prepared: ContinuationStreams.Prepared) async -> StreamInfo {
        var progress: Int64 = 0
        while true {
            let info = await prepared.record.final(within: stallLimit)
            if info.state.isFinal { return info }
            if Task.isCancelled {
                prepared.abandon(because: "handoffd is stopping")
                return prepared.record.info
            }
            if info.bytesReceived == progress {
                prepared.abandon(because: "nothing came for \(stallLimit)")
                return prepared.record.info
            }
            progress = info.bytesReceived
        }
    }

    /// What came is the document offered: its size and SHA-256. It gets the original's
    /// modification time.
    static func check(_ path: String, against document: DocumentActivity, from peerName: String) throws(DaemonError) {
        let fd = SystemCall.retrying { open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) }
        guard fd >= 0 else { throw DaemonError(.internalError, "cannot read back \(path): \(SystemCall.describe(errno))") }
        defer { close(fd) }
        let size = DocumentFile.facts(fd)?.size ?? -1
        guard size == document.size else {
            throw DaemonError(
                .documentMismatch, "\(document.name) from \(peerName) came with \(size) bytes, not the \(document.size) offered; it was discarded"
            )
        }
        guard try DocumentFile.sha256(fd) == document.sha256 else {
            throw DaemonError(.documentMismatch, "\(document.name) from \(peerName) is not the document offered (its SHA-256 differs); it was discarded")
        }
        let seconds = document.modified.microsecondsSinceEpoch / 1_000_000
        let micros = document.modified.microsecondsSinceEpoch % 1_000_000
        var times = [
            timespec(tv_sec: time_t(seconds), tv_nsec: Int(micros * 1000)), timespec(tv_sec: time_t(seconds), tv_nsec: Int(micros * 1000)),
        ]
        _ = futimens(fd, &times)
    }

    /// `partial` under `name` in `directory`, or `name (2)`, `name (3)`… (`FileKeeping`).
    static func keep(_ partial: String, as name: String, in directory: String) throws(DaemonError) -> String {
        switch FileKeeping.keep(partial, as: name, in: directory) {
        case .success(let path): return path
        case .failure(.system(let path, let failure)):
            throw DaemonError(.internalError, "cannot keep the document as \(path): \(SystemCall.describe(failure))")
        case .failure(.crowded(let directory, let name)):
            throw DaemonError(.internalError, "\(directory) already holds 1000 files called \(name)")
        }
    }

    /// What a copy is written to until it is checked: hidden, named by its continuation.
    static func isPartial(_ name: String) -> Bool { name.hasPrefix(".") && name.hasSuffix(".part") }

    /// Copies cut short by a crash or a power cut (a stream that fails deletes its own) stay a
    /// day, then go with the next copy.
    static func removeStalePartials(in directory: String, now: Timestamp) {
        PrivateFiles.removeStale(in: directory, olderThan: 24 * 3600, now: now, matching: isPartial)
    }

    static func makeDirectory(_ path: String) throws(DaemonError) {
        if case .failure(.system(let partial, let failure)) = FileKeeping.makeDirectory(path) {
            throw DaemonError(.internalError, "cannot make \(partial): \(SystemCall.describe(failure))")
        }
    }
}
