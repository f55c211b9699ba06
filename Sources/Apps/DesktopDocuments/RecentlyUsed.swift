import Foundation
import HandoffAPI
import HandoffModel

#if canImport(FoundationXML)
import FoundationXML
#endif

/// The desktop's recently-used list, `$XDG_DATA_HOME/recently-used.xbel`: XBEL with the
/// freedesktop desktop-bookmark additions, as GTK's `GtkRecentManager` and KDE's KRecentDocument
/// write it. One `bookmark` per file, with when it was added, modified and visited, its MIME type
/// (`mime:mime-type`) and the apps that used it (`bookmark:application`, each with when it last
/// did). Read with Foundation's XMLParser (libxml2).
package enum RecentlyUsed {
    package struct Entry: Sendable, Equatable {
        /// An absolute path (only `file://` bookmarks are kept).
        package let path: String
        package let mimeType: String?
        /// The name the app that used it last recorded (`gedit`, `org.gnome.TextEditor`).
        package let application: String?
        /// The latest of its times.
        package let at: Timestamp
    }

    /// The list's file.
    package static func path(environment: [String: String]) -> String {
        HandoffPaths.baseDirectories(.data, environment: environment)[0] + "/recently-used.xbel"
    }

    /// Larger lists are not read (GTK keeps them far smaller).
    package static let maximumBytes = 16 << 20

    /// The document used last, if any local file is listed.
    package static func latest(_ data: Data) -> Entry? {
        guard data.count <= maximumBytes else { return nil }
        let reader = Reader()
        let parser = XMLParser(data: data)
        parser.shouldResolveExternalEntities = false
        parser.delegate = reader
        _ = parser.parse()
        return reader.entries.max { $0.at < $1.at }
    }

    /// `file:///a%20b` → `/a b`; nil for any other URI.
    static func localPath(_ href: String) -> String? {
        guard href.hasPrefix("file:///") else { return nil }
        return PathSegment.strictUnescape(href.dropFirst("file://".count))
    }

    private final class Reader: NSObject, XMLParserDelegate {
        var entries: [Entry] = []
        private var current: (path: String, at: Timestamp, mime: String?, app: (String, Timestamp)?, isPrivate: Bool)?

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            switch name {
            case "bookmark":
                let times = ["added", "modified", "visited"].compactMap { attributes[$0].flatMap(Timestamp.init(rfc3339:)) }
                if let path = attributes["href"].flatMap(RecentlyUsed.localPath), let at = times.max() {
                    current = (path, at, nil, nil, false)
                }
            case "mime:mime-type":
                current?.mime = attributes["type"]
            case "bookmark:private":
                // For the apps that recorded it only: not a document to hand over.
                current?.isPrivate = true
            case "bookmark:application":
                guard let app = attributes["name"], let at = attributes["modified"].flatMap(Timestamp.init(rfc3339:)) else { return }
                if current?.app.map({ $0.1 < at }) ?? true { current?.app = (app, at) }
                if let latest = current?.at, at > latest { current?.at = at }
            default:
                break
            }
        }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            guard name == "bookmark", let done = current else { return }
            current = nil
            guard !done.isPrivate else { return }
            entries.append(Entry(path: done.path, mimeType: done.mime, application: done.app?.0, at: done.at))
        }
    }
}
