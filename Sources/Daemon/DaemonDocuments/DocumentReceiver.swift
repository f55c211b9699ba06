#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonCore
import DaemonLinks
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
    let folders: @Sendable () -> DocumentFolders
    /// Where copies go: `$XDG_DOWNLOAD_DIR/Handoff`.
    let directory: String
    let resuming: ResumingStreams
    let logger: Logger

    package init(folders: @escaping @Sendable () -> DocumentFolders, downloads: String, resuming: ResumingStreams, logger: Logger) {
        self.folders = folders
        self.directory = downloads + "/Handoff"
        self.resuming = resuming
        self.logger = logger
    }

    package struct Found: Sendable {
        package let document: DocumentActivity
        package let path: String
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
        let folders = self.folders()
        if let here = await DocumentFile.thread.run({ Self.sameCopy(of: document, folders: folders) }) {
            logger.info("a continued document is here already", metadata: ["continuation": "\(continuationID.lowercasedString)"])
            return Found(document: document, path: here, received: false)
        }
        let path = try await receive(document, continuationID: continuationID, from: peer)
        return Found(document: document, path: path, received: true)
    }

    /// The file at the document's place here, if it holds the same bytes.
    static func sameCopy(of document: DocumentActivity, folders: DocumentFolders) -> String? {
        guard let path = folders.existing(document.place), let fd = try? DocumentFile.open(path) else { return nil }
        defer { close(fd) }
        guard DocumentFile.facts(fd)?.size == document.size, (try? DocumentFile.sha256(fd)) == document.sha256 else { return nil }
        return path
    }

    private func receive(_ document: DocumentActivity, continuationID: UUID, from peer: LocalEvent.PeerRef) async throws(DaemonError) -> String {
        let prepared = try await resuming.open(continuationID: continuationID)
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
        let outcome = await prepared.record.final()
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

    /// `partial` under `name` in `directory`, or `name (2)`, `name (3)`…: a file already there is
    /// never replaced (a hard link fails rather than overwrite).
    static func keep(_ partial: String, as name: String, in directory: String) throws(DaemonError) -> String {
        for attempt in 1...1000 {
            let path = directory + "/" + numbered(name, attempt)
            if link(partial, path) == 0 { return path }
            guard errno == EEXIST else { throw DaemonError(.internalError, "cannot keep the document as \(path): \(SystemCall.describe(errno))") }
        }
        throw DaemonError(.internalError, "\(directory) already holds 1000 files called \(name)")
    }

    /// What a copy is written to until it is checked: hidden, named by its continuation.
    static func isPartial(_ name: String) -> Bool { name.hasPrefix(".") && name.hasSuffix(".part") }

    /// Copies cut short by a crash or a power cut (a stream that fails deletes its own) stay a
    /// day, then go with the next copy.
    static func removeStalePartials(in directory: String, now: Timestamp) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for name in names where isPartial(name) {
            var st = stat()
            let path = directory + "/" + name
            if lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFREG, now.microsecondsSinceEpoch / 1_000_000 - Int64(st.st_mtim.tv_sec) > 24 * 3600 {
                unlink(path)
            }
        }
    }

    /// `report.odt`, `report (2).odt`, `report (3).odt`…
    static func numbered(_ name: String, _ attempt: Int) -> String {
        guard attempt > 1 else { return name }
        if let dot = name.lastIndex(of: "."), dot != name.startIndex {
            return "\(name[..<dot]) (\(attempt))\(name[dot...])"
        }
        return "\(name) (\(attempt))"
    }

    static func makeDirectory(_ path: String) throws(DaemonError) {
        var partial = ""
        for part in path.split(separator: "/") {
            partial += "/" + part
            if mkdir(partial, 0o755) != 0, errno != EEXIST {
                throw DaemonError(.internalError, "cannot make \(partial): \(SystemCall.describe(errno))")
            }
        }
    }

    /// `$XDG_DOWNLOAD_DIR` as xdg-user-dirs keeps it (`$XDG_CONFIG_HOME/user-dirs.dirs`), else
    /// `~/Downloads`.
    package static func downloads(environment: [String: String]) -> String {
        let home = environment["HOME"] ?? "/"
        let config = HandoffPaths.baseDirectories(.config, environment: environment)[0]
        if let text = try? String(contentsOfFile: config + "/user-dirs.dirs", encoding: .utf8) {
            for line in text.split(separator: "\n") where line.hasPrefix("XDG_DOWNLOAD_DIR=") {
                var value = line.dropFirst("XDG_DOWNLOAD_DIR=".count)
                guard value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 else { continue }
                value = value.dropFirst().dropLast()
                if value.hasPrefix("$HOME/") { return home + "/" + value.dropFirst("$HOME/".count) }
                if value.hasPrefix("/") { return String(value) }
            }
        }
        return home + "/Downloads"
    }
}
