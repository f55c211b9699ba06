import Foundation
import HandoffAPI
import HandoffClient
import HandoffModel
import HandoffSystem
import Logging

/// Documents from any app (docs/apps.md): while handoffd.toml says `[documents] follow = true`,
/// the document the user opened or saved last in any app — the newest entry of the desktop's
/// recently-used list — becomes the current activity, and is withdrawn when its file goes.
/// handoffd decides what may be offered; this only says which file and which app.
///
/// Nothing polls: inotify says when the list is written (apps replace it whole) and when a name
/// leaves the document's folder. Only what changes after the agent starts is offered.
package struct RecentDocuments: Sendable {
    package let client: HandoffClient
    package let environment: [String: String]
    package let logger: Logger

    package init(client: HandoffClient, environment: [String: String], logger: Logger) {
        self.client = client
        self.environment = environment
        self.logger = logger
    }

    /// What the agent did with a change of the list or of the document's folder (for tests, and
    /// the log).
    package enum Handled: Sendable, Equatable {
        /// The list is watched: what changes from now on is seen.
        case watching
        case notFollowing(path: String)
        case offered(path: String, activityID: UUID)
        case notOffered(path: String, reason: String)
        case withdrawn(path: String)
    }

    /// The document offered last, while it may still be current.
    private struct Offered {
        let path: String
        let activityID: UUID
        let watch: Int32?
    }

    package func run(handled: @Sendable (Handled) -> Void = { _ in }) async {
        let list = RecentlyUsed.path(environment: environment)
        let folder = Self.directory(of: list)
        guard let watcher = FileWatch() else {
            logger.warning("cannot watch the recently-used list (no inotify instance or thread)")
            return
        }
        defer { watcher.stop() }
        // Apps make the folder with the first document they record: be there before.
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        guard let listWatch = watcher.watch(directory: folder) else {
            logger.warning("cannot watch the recently-used list", metadata: ["folder": "\(folder)"])
            return
        }
        var seen = Self.read(list)
        var offered: Offered?
        handled(.watching)
        await withTaskCancellationHandler {
            for await change in watcher.changes {
                if change.watch == listWatch, change.name == Self.fileName(of: list) {
                    guard let latest = Self.read(list), latest != seen else { continue }
                    seen = latest
                    guard await follows() else {
                        logger.debug("the recently-used list changed; documents are not followed ([documents] follow is off)")
                        handled(.notFollowing(path: latest.path))
                        continue
                    }
                    guard let new = await offer(latest, watcher: watcher, handled: handled) else { continue }
                    // inotify gives one directory one watch: the list's, or the new document's, stay.
                    if let old = offered?.watch, old != listWatch, old != new.watch { watcher.unwatch(old) }
                    offered = new
                } else if let current = offered, change.watch == current.watch, change.name == Self.fileName(of: current.path),
                    !FileManager.default.fileExists(atPath: current.path)
                {
                    await withdraw(current)
                    handled(.withdrawn(path: current.path))
                    if let watch = current.watch, watch != listWatch { watcher.unwatch(watch) }
                    offered = nil
                }
            }
        } onCancel: {
            watcher.stop()
        }
    }

    /// Whether handoffd follows documents now (asked at each change: a reload may have changed it).
    private func follows() async -> Bool {
        (try? await client.send(.status))?.followsDocuments == true
    }

    private func offer(_ entry: RecentlyUsed.Entry, watcher: FileWatch, handled: (Handled) -> Void) async -> Offered? {
        let request = DocumentRequest(path: entry.path, app: entry.application.flatMap(desktopID), mimeType: entry.mimeType, recentlyUsed: true)
        do throws(HandoffClientError) {
            let response = try await client.send(.becomeCurrent(document: request))
            logger.info("a document from the recently-used list became current", metadata: ["activity": "\(response.activity.id.lowercasedString)"])
            handled(.offered(path: entry.path, activityID: response.activity.id))
            return Offered(path: entry.path, activityID: response.activity.id, watch: watcher.watch(directory: Self.directory(of: entry.path)))
        } catch {
            // Hidden, temporary, too large, outside the folders: handoffd said why; not an error here.
            logger.debug("a document from the recently-used list was not offered", metadata: ["reason": "\(error.message)"])
            handled(.notOffered(path: entry.path, reason: error.message))
            return nil
        }
    }

    private func withdraw(_ offered: Offered) async {
        guard (try? await client.send(.resignCurrent(ifID: offered.activityID)))?.resigned != nil else { return }
        logger.info("the current document is gone; withdrew it", metadata: ["activity": "\(offered.activityID.lowercasedString)"])
    }

    /// The desktop file id of an app the list names (`gedit` → `gedit.desktop`,
    /// `org.gnome.TextEditor` → `org.gnome.TextEditor.desktop`) if one is installed.
    private func desktopID(_ application: String) -> String? {
        guard !application.isEmpty, !application.contains("/") else { return nil }
        let dirs = HandoffPaths.baseDirectories(.data, environment: environment)
        for id in [application + ".desktop", application.lowercased() + ".desktop"] where dirs.contains(where: { FileManager.default.fileExists(atPath: $0 + "/applications/" + id) }) {
            return id
        }
        return nil
    }

    private static func read(_ list: String) -> RecentlyUsed.Entry? {
        // Not read at all when it is larger than the parser would take.
        guard let size = (try? FileManager.default.attributesOfItem(atPath: list))?[.size] as? Int, size <= RecentlyUsed.maximumBytes else { return nil }
        return FileManager.default.contents(atPath: list).flatMap(RecentlyUsed.latest)
    }

    package static func directory(of path: String) -> String {
        String(path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/"))
    }

    package static func fileName(of path: String) -> String {
        String(path.split(separator: "/").last ?? "")
    }
}
