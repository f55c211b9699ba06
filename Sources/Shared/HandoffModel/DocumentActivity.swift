/// A document as an activity (docs/apps.md, "Documents from any app"): what any app opened,
/// handed over with no handoff code in the app. handoffd makes it from the file itself
/// (`PUT /v1/activity/current/document`), serves the file to a device that continues it, and on
/// the continuing device opens the same document if it is there, else the copy that came.
///
/// It travels as an ordinary activity of type `org.handoff.document`: the file's name as title,
/// and in `userInfo` where it is (`folder`, `path`), what it is (`mimeType`, `size`, `modified`,
/// `sha256`) and the app that opened it (`app`). Read back from another device, every field is
/// checked as outside input.
public struct DocumentActivity: Sendable, Equatable {
    public static let type = "org.handoff.document"

    public var place: DocumentPlace
    public var mimeType: String
    public var size: Int64
    /// The file's modification time when it was offered.
    public var modified: Timestamp
    /// SHA-256 of the content, 64 lowercase hexadecimal digits.
    public var sha256: String
    /// The desktop file id of the app that opened it, when known (`org.gnome.TextEditor.desktop`).
    public var app: String?

    public init(place: DocumentPlace, mimeType: String, size: Int64, modified: Timestamp, sha256: String, app: String? = nil) {
        self.place = place
        self.mimeType = mimeType
        self.size = size
        self.modified = modified
        self.sha256 = sha256
        self.app = app
    }

    /// The file's name: the last part of its path.
    public var name: String { String(place.path.split(separator: "/").last ?? "") }

    enum Key {
        static let folder = "folder"
        static let path = "path"
        static let mimeType = "mimeType"
        static let size = "size"
        static let modified = "modified"
        static let sha256 = "sha256"
        static let app = "app"
    }

    /// The activity's content: the device that continues it fetches the file over a stream.
    public var content: ActivityContent {
        var info: [String: ActivityValue] = [
            Key.folder: .string(place.folder), Key.path: .string(place.path), Key.mimeType: .string(mimeType), Key.size: .int(size),
            Key.modified: .date(modified), Key.sha256: .string(sha256),
        ]
        if let app { info[Key.app] = .string(app) }
        // The document's place is its durable id: a version saved later is the same content.
        return ActivityContent(
            type: Self.type, title: name, userInfo: info,
            requiredUserInfoKeys: [Key.folder, Key.path, Key.mimeType, Key.size, Key.modified, Key.sha256],
            persistentIdentifier: place.folder + ":" + place.path, supportsContinuationStreams: true
        )
    }

    /// Reads a document activity, as another device sent it or as an app here made it.
    public init(_ content: ActivityContent) throws(ActivityError) {
        guard content.type == Self.type else { throw ActivityError(.invalidType, "the activity is a \(content.type), not a document") }
        let info = content.userInfo
        func string(_ key: String) throws(ActivityError) -> String {
            guard case .string(let value)? = info[key] else { throw ActivityError(.invalidValue, "a document's userInfo needs \(key) as a string") }
            return value
        }
        guard let place = DocumentPlace(folder: try string(Key.folder), path: try string(Key.path)) else {
            throw ActivityError(.invalidValue, "a document's folder and path must name a file that is not hidden, with no . or .. in its path")
        }
        let mimeType = try string(Key.mimeType)
        guard Self.isMIMEType(mimeType) else { throw ActivityError(.invalidValue, "a document's mimeType is not a MIME type (e.g. text/plain)") }
        guard case .int(let size)? = info[Key.size], size >= 0 else { throw ActivityError(.invalidValue, "a document's size must be a whole number of bytes") }
        guard case .date(let modified)? = info[Key.modified] else { throw ActivityError(.invalidValue, "a document's modified must be a date") }
        let sha256 = try string(Key.sha256)
        guard sha256.utf8.count == 64, sha256.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else {
            throw ActivityError(.invalidValue, "a document's sha256 must be 64 lowercase hexadecimal digits")
        }
        var app: String?
        if let value = info[Key.app] {
            guard case .string(let id) = value, Self.isDesktopFileID(id) else {
                throw ActivityError(.invalidValue, "a document's app must be a desktop file id (e.g. org.gnome.TextEditor.desktop)")
            }
            app = id
        }
        self.init(place: place, mimeType: mimeType, size: size, modified: modified, sha256: sha256, app: app)
    }

    /// A desktop file id: `NAME.desktop`, one path component, printable.
    public static func isDesktopFileID(_ id: String) -> Bool {
        id.hasSuffix(".desktop") && id.utf8.count > ".desktop".utf8.count && id.utf8.count <= 255 && !id.contains("/")
            && id.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7f }
    }

    /// `type/subtype` of the characters RFC 6838 allows in names, as shared-mime-info writes them.
    public static func isMIMEType(_ text: String) -> Bool {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, text.utf8.count <= 255 else { return false }
        return parts.allSatisfy { part in
            guard let first = part.utf8.first, Self.isAlphanumeric(first) else { return false }
            return part.utf8.allSatisfy { Self.isAlphanumeric($0) || "!#$&-^_.+".utf8.contains($0) }
        }
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte)
    }
}

/// Where a document is, in words both devices understand: a folder — `home` for the user's home,
/// or the name of a folder the user lists in handoffd.toml (`[documents] folders`, e.g. a folder
/// Syncthing keeps on both) — and the path inside it. Never an absolute path: each device finds
/// the folder in its own place.
public struct DocumentPlace: Sendable, Hashable, CustomStringConvertible {
    public static let home = "home"

    public let folder: String
    /// `/`-separated, relative; no part empty, `.`, `..` or hidden (starting with `.`), none over
    /// 255 bytes (so the file's name always fits an activity's title), no control characters.
    public let path: String

    /// Nil for a place that could reach outside its folder or into a hidden file or folder.
    public init?(folder: String, path: String) {
        guard Self.isFolderName(folder), !path.isEmpty, path.utf8.count <= 4096, !path.utf8.contains(0) else { return nil }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        // No control characters either: the name becomes a file name on the other device.
        guard parts.allSatisfy({ !$0.isEmpty && !$0.hasPrefix(".") && $0.utf8.count <= 255 && !$0.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7f } })
        else { return nil }
        self.folder = folder
        self.path = path
    }

    /// A folder's name: one path component, not hidden, printable.
    public static func isFolderName(_ name: String) -> Bool {
        !name.isEmpty && name != "~" && name.utf8.count <= 255 && !name.hasPrefix(".") && !name.contains("/")
            && name.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7f }
    }

    public var description: String { folder == Self.home ? "~/" + path : folder + ":" + path }
}
