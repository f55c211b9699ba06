import DaemonCore
import DaemonStreams
import HandoffAPI
import HandoffModel
import HandoffSystem
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What the user set for documents (handoffd.toml `[documents]`; docs/apps.md, "Documents from
/// any app").
package struct DocumentSettings: Sendable, Equatable {
    /// `follow`: the desktop's recently-used list makes documents current (`handoff-desktop`).
    package var follow: Bool
    /// The home and `folders`: where documents are offered from and looked for.
    package var folders: DocumentFolders
    /// `max_size`: larger files are not offered.
    package var maximumSize: Int64

    package static let defaultMaximumSize: Int64 = 1 << 30

    package init(follow: Bool = false, folders: DocumentFolders, maximumSize: Int64 = DocumentSettings.defaultMaximumSize) {
        self.follow = follow
        self.folders = folders
        self.maximumSize = maximumSize
    }
}

/// This device's documents as activities: a file made the current activity
/// (`PUT /v1/activity/current/document`), and its bytes sent by handoffd itself to a device that
/// continues it (`StreamFileSource`): the app that opened it takes no part.
///
/// A document is offered only from the home or a listed folder, never hidden, never from a
/// temporary folder, never over the size limit (`DocumentFolders`); what is sent is checked again
/// when it is asked for, so a file changed or moved since cannot go out as the one offered.
package final class DocumentShelf: StreamFileSource {
    private let registry: ActivityRegistry
    private let settings: Mutex<DocumentSettings>
    private let globs: MIMEGlobs
    private let logger: Logger

    package init(registry: ActivityRegistry, settings: DocumentSettings, globs: MIMEGlobs, logger: Logger) {
        self.registry = registry
        self.settings = Mutex(settings)
        self.globs = globs
        self.logger = logger
    }

    /// What handoffd.toml says now (reloaded on SIGHUP).
    package var current: DocumentSettings { settings.withLock { $0 } }

    package func replace(_ new: DocumentSettings) {
        settings.withLock { $0 = new }
    }

    /// Makes the file `request` names the current activity. The same document offered again
    /// (saved anew) updates the activity rather than replacing it.
    package func offer(_ request: DocumentRequest) async throws(DaemonError) -> CurrentActivityResponse {
        let settings = current
        if request.recentlyUsed == true, !settings.follow {
            throw DaemonError(.notOffered, "documents from the recently-used list are not offered: set [documents] follow = true in handoffd.toml")
        }
        try Self.checkDescription(request)
        let globs = self.globs
        let document = try await DocumentFile.thread.run { () throws(DaemonError) -> DocumentActivity in
            try Self.describe(request, settings: settings, globs: globs)
        }
        // The same file, unchanged, offered again is the same activity; changed, it is a new one
        // (a device that saw the old one hears that it changed).
        let current = await registry.currentActivity()
        let sameID = current.flatMap { activity in (try? DocumentActivity(activity.content)) == document ? activity.id : nil }
        let response: CurrentActivityResponse
        do {
            response = try await registry.becomeCurrent(PutCurrentActivityRequest(id: sameID, content: document.content))
        } catch where error.code == .activityChanged {
            // Replaced meanwhile: this one is new then.
            response = try await registry.becomeCurrent(PutCurrentActivityRequest(content: document.content))
        }
        logger.info("a document became current", metadata: ["activity": "\(response.activity.id.lowercasedString)", "mime": "\(document.mimeType)"])
        return response
    }

    /// The document as an activity: where it is, what it is, its hash. Blocks (reads the file).
    static func describe(_ request: DocumentRequest, settings: DocumentSettings, globs: MIMEGlobs) throws(DaemonError) -> DocumentActivity {
        let (place, resolved) = try settings.folders.place(of: request.path)
        let fd = try DocumentFile.open(resolved)
        defer { close(fd) }
        guard let before = DocumentFile.facts(fd) else { throw DaemonError(.notOffered, "\(request.path) is not a regular file") }
        guard before.size <= settings.maximumSize else {
            throw DaemonError(.notOffered, "\(request.path) is \(before.size) bytes, over [documents] max_size (\(settings.maximumSize)): it is not offered")
        }
        let sha256 = try DocumentFile.sha256(fd)
        // Written to while it was read: the hash may be of neither version.
        guard DocumentFile.facts(fd) == before else {
            throw DaemonError(.activityChanged, "\(request.path) changed while it was read; offer it again once it is saved")
        }
        let name = String(place.path.split(separator: "/").last ?? "")
        let mimeType = request.mimeType ?? globs.type(ofName: name) ?? MIMEGlobs.fallback
        return DocumentActivity(place: place, mimeType: mimeType, size: before.size, modified: before.modified, sha256: sha256, app: request.app)
    }

    /// What the caller says of the file beside its path, checked as another device would check it.
    static func checkDescription(_ request: DocumentRequest) throws(DaemonError) {
        if let type = request.mimeType, !DocumentActivity.isMIMEType(type) {
            throw DaemonError(ActivityError(.invalidValue, "mimeType \(type) is not a MIME type (e.g. text/plain)"))
        }
        if let app = request.app, !DocumentActivity.isDesktopFileID(app) {
            throw DaemonError(ActivityError(.invalidValue, "app \(app) is not a desktop file id (e.g. org.gnome.TextEditor.desktop)"))
        }
    }

    /// A device that continued the current document asks for it: the file, if it is still the
    /// one offered. One that changed is refused as such; one that is gone withdraws the activity.
    package func file(for activity: Activity) async throws(DaemonError) -> StreamFile? {
        guard activity.type == DocumentActivity.type else { return nil }
        let document: DocumentActivity
        do {
            document = try DocumentActivity(activity.content)
        } catch {
            throw DaemonError(.activityChanged, "the current document cannot be read back: \(error.message)")
        }
        let settings = current
        // Quick (no hash), on a thread of its own: not behind a document being hashed, and a
        // stuck mount holds up nothing else.
        let opened: StreamFile?
        do {
            opened = try await DocumentFile.opening.run { () throws(DaemonError) -> StreamFile? in try Self.open(document, settings: settings) }
        } catch where error.code != .activityChanged {
            // The reason stays here: what goes to the other device names no path.
            logger.notice("the current document cannot be sent", metadata: ["error": "\(error.message)"])
            throw DaemonError(.notOffered, "\(document.name) cannot be sent from there now")
        }
        if let opened { return opened }
        if (try? await registry.resignCurrent(ifID: activity.id)) != nil {
            logger.info("the current document is gone; withdrew it", metadata: ["activity": "\(activity.id.lowercasedString)"])
        }
        throw DaemonError(.activityChanged, "\(document.name) is no longer there")
    }

    /// The document's file, opened, if it is still there (nil: gone), still may be offered, and
    /// unchanged.
    static func open(_ document: DocumentActivity, settings: DocumentSettings) throws(DaemonError) -> StreamFile? {
        let folders = settings.folders
        guard let resolved = folders.existing(document.place), (try? folders.place(of: resolved))?.place == document.place else { return nil }
        guard document.size <= settings.maximumSize else { throw DaemonError(.notOffered, "\(document.name) is over [documents] max_size now") }
        let fd = try DocumentFile.open(resolved)
        guard DocumentFile.facts(fd) == DocumentFile.Facts(size: document.size, modified: document.modified) else {
            close(fd)
            throw DaemonError(.activityChanged, "\(document.name) changed since it was offered; continue again to get the new version")
        }
        // The hash is checked as the file is read: one changed under the same size and time
        // never leaves whole (the other device would only discard it).
        return try StreamFile(descriptor: fd, role: .send, offered: StreamFile.Offered(size: document.size, sha256: document.sha256))
    }
}
