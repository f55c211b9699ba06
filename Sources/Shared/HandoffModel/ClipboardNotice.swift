#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One form of a copy: a MIME type the copying app offered, and its size in bytes.
public struct ClipboardItem: Codable, Sendable, Equatable, Hashable {
    public var type: String
    public var size: Int64

    public init(type: String, size: Int64) {
        self.type = type
        self.size = size
    }
}

/// What one device tells the others when something is copied there (docs/clipboard.md): the
/// forms it can give and their sizes — never the content, which moves only when another device
/// pastes (a continuation stream asks for one form). A notice with no items withdraws the one
/// before (the clipboard there now holds nothing carried, something secret, or it was turned off).
public struct ClipboardNotice: Codable, Sendable, Equatable {
    /// The copy's id: a paste names it, so a newer copy cannot be pasted in its place.
    public var id: UUID
    /// When it was copied, by the sending device's clock.
    public var copiedAt: Timestamp
    /// How long the sending device gives it out, in seconds from when the notice is received.
    public var lifetimeSeconds: UInt32
    public var items: [ClipboardItem]

    /// The forms carried between devices: text, a web page's markup, file and link lists,
    /// pictures. Anything else an app offers stays on its device (and cannot be named by a
    /// notice from another one).
    public static let carriedTypes: [String] = [
        "text/plain;charset=utf-8", "text/plain", "text/html", "text/uri-list", "image/png", "image/jpeg",
    ]
    /// What an app copying a secret (a password manager) marks it with: a copy that offers any of
    /// these is never announced. `x-kde-passwordManagerHint` counts only when its content is
    /// `secret` (KeePassXC and KDE's apps set it so); the others mark a secret by being offered
    /// at all (Apple's concealed type, kept by apps ported from macOS; Windows' exclusion formats,
    /// kept by cross-platform password managers).
    public static let secretHint = "x-kde-passwordManagerHint"
    public static let secretMarkers: Set<String> = [
        "application/x-nspasteboard-concealed-type", "ExcludeClipboardContentFromMonitorProcessing", "CanIncludeInClipboardHistory",
        "CanUploadToCloudClipboard",
    ]
    public static let maximumItems = 8
    /// A copy's list of files and links, whose files another device may paste one by one.
    public static let fileListType = "text/uri-list"
    /// How many of a list's entries a paste may name.
    public static let maximumFiles = 1000

    /// The form a paste names for one file of a copy's file list: the list's type and the file's
    /// place among the list's URIs, `text/uri-list#0` (docs/clipboard.md, "Files").
    public static func fileForm(_ index: Int) -> String { fileListType + "#\(index)" }

    /// The place `form` names in a copy's file list, if it names a file.
    public static func fileIndex(_ form: String) -> Int? {
        guard form.hasPrefix(fileListType + "#") else { return nil }
        let digits = form.dropFirst(fileListType.count + 1)
        guard let index = Int(digits), index >= 0, index < maximumFiles, String(index) == digits else { return nil }
        return index
    }

    /// Whether a paste may name `form`: a form carried, or a file of a file list.
    public static func isPastable(_ form: String) -> Bool {
        carriedTypes.contains(form) || fileIndex(form) != nil
    }
    /// A notice outlives no one by more than an hour, whatever the sender says.
    public static let maximumLifetimeSeconds: UInt32 = 3600
    public static let maximumSize: Int64 = 1 << 40

    public init(id: UUID = UUID(), copiedAt: Timestamp, lifetimeSeconds: UInt32, items: [ClipboardItem]) {
        self.id = id
        self.copiedAt = copiedAt
        self.lifetimeSeconds = lifetimeSeconds
        self.items = items
    }

    /// What is wrong with it, if anything.
    public var problem: String? {
        if items.count > Self.maximumItems { return "at most \(Self.maximumItems) forms of one copy" }
        if let other = items.first(where: { !Self.carriedTypes.contains($0.type) }) {
            return "\(other.type.prefix(64)) is not a form the clipboard carries (\(Self.carriedTypes.joined(separator: ", ")))"
        }
        if Set(items.map(\.type)).count != items.count { return "a form is named twice" }
        if items.contains(where: { $0.size < 0 || $0.size > Self.maximumSize }) { return "a form's size is out of bounds" }
        if lifetimeSeconds == 0 || lifetimeSeconds > Self.maximumLifetimeSeconds { return "a lifetime of 1 to \(Self.maximumLifetimeSeconds) seconds" }
        return nil
    }

    /// Whether a copy offering `types` (and, for `secretHint`, saying `hint`) is a secret.
    public static func isSecret(types: some Collection<String>, hint: String?) -> Bool {
        if types.contains(where: { secretMarkers.contains($0) }) { return true }
        return types.contains(secretHint) && hint.map { $0.filter { !$0.isWhitespace && $0 != "\0" } } == "secret"
    }

    /// Its form in peer messages: id, time, lifetime, then each item.
    public func encode(into w: inout ByteWriter) {
        w.uuid(id)
        w.zigzag(copiedAt.microsecondsSinceEpoch)
        w.varint(UInt64(lifetimeSeconds))
        w.varint(UInt64(items.count))
        for item in items {
            w.lengthPrefixed(Array(item.type.utf8))
            w.varint(UInt64(item.size))
        }
    }

    public typealias Malformed = MalformedInput

    /// Reads one, refusing anything out of bounds before it is held.
    public init(decoding r: inout ByteReader) throws(Malformed) {
        do {
            id = try r.uuid()
            copiedAt = Timestamp(microsecondsSinceEpoch: try r.zigzag())
            let lifetime = try r.varint()
            guard lifetime <= UInt64(Self.maximumLifetimeSeconds) else { throw Malformed(description: "a clipboard notice's lifetime is out of bounds") }
            lifetimeSeconds = UInt32(lifetime)
            let count = try r.varint()
            guard count <= UInt64(Self.maximumItems) else { throw Malformed(description: "a clipboard notice names more than \(Self.maximumItems) forms") }
            var items: [ClipboardItem] = []
            for _ in 0..<count {
                let type = Array(try r.lengthPrefixed())
                guard type.count <= 64, let text = String(validating: type, as: UTF8.self) else {
                    throw Malformed(description: "a clipboard form's type is not one carried")
                }
                let size = try r.varint()
                guard size <= UInt64(Self.maximumSize) else { throw Malformed(description: "a clipboard form's size is out of bounds") }
                items.append(ClipboardItem(type: text, size: Int64(size)))
            }
            self.items = items
        } catch let e as Malformed {
            throw e
        } catch {
            throw Malformed(description: "malformed clipboard notice: \(error)")
        }
        if let problem { throw Malformed(description: "a clipboard notice out of bounds: \(problem)") }
    }
}
