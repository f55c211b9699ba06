#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Saved activities deleted on one device, for every device of the account (docs/apps.md,
/// "Deleting saved activities"; Apple's `deleteSavedUserActivities(withPersistentIdentifiers:)`
/// and `deleteAllSavedUserActivities`): the activities of those contents, of those types (of
/// those contents of those types, when it names both: an app's own), or all, seen before `at`. Each device keeps the deletions it made or heard and tells them to every
/// device it next talks to, so a device that was away hears them too; `id` makes hearing one
/// twice harmless.
public struct SavedActivityDeletion: Codable, Sendable, Equatable {
    public var id: UUID
    /// When it was made, by the clock of the device that made it.
    public var at: Timestamp
    public var persistentIdentifiers: [String]
    public var types: [String]
    /// Every saved activity.
    public var everything: Bool

    public static let maximumIdentifiers = 64
    public static let maximumTypes = 64
    /// As a link carries at most (`LinkTarget`): a longer id is refused here.
    public static let maximumIdentifierBytes = 512

    public init(id: UUID = UUID(), at: Timestamp, persistentIdentifiers: [String] = [], types: [String] = [], everything: Bool = false) {
        self.id = id
        self.at = at
        self.persistentIdentifiers = persistentIdentifiers
        self.types = types
        self.everything = everything
    }

    /// What is wrong with it, if anything: nothing named, or over the bounds.
    public var problem: String? {
        if !everything, persistentIdentifiers.isEmpty, types.isEmpty { return "name persistent identifiers, types, or all" }
        if persistentIdentifiers.count > Self.maximumIdentifiers { return "at most \(Self.maximumIdentifiers) persistent identifiers at once" }
        if types.count > Self.maximumTypes { return "at most \(Self.maximumTypes) types at once" }
        if let long = persistentIdentifiers.first(where: { $0.isEmpty || $0.utf8.count > Self.maximumIdentifierBytes }) {
            return "a persistent identifier is 1 to \(Self.maximumIdentifierBytes) bytes (one is \(long.utf8.count))"
        }
        if let long = types.first(where: { $0.isEmpty || $0.utf8.count > ActivityLimits.maximumTypeBytes }) {
            return "a type is 1 to \(ActivityLimits.maximumTypeBytes) bytes (one is \(long.utf8.count))"
        }
        return nil
    }

    /// Whether it names `activity`.
    public func matches(_ activity: Activity) -> Bool {
        if everything { return true }
        if !types.isEmpty, !types.contains(activity.type) { return false }
        guard !persistentIdentifiers.isEmpty else { return true }
        guard let id = activity.content.persistentIdentifier else { return false }
        return persistentIdentifiers.contains(id)
    }

    /// As it applies on a device whose clock says `now`: one dated in its future counts as made
    /// now.
    public func applying(at now: Timestamp) -> SavedActivityDeletion {
        var effective = self
        effective.at = min(at, now)
        return effective
    }

    /// Whether it deletes `activity`, seen (or last changed) at `seenAt`: it names it, and it was
    /// seen before the deletion was made, give or take `tolerance` (two devices' clocks) — what
    /// was shown again since stays.
    public func deletes(_ activity: Activity, seenAt: Timestamp, tolerance: Duration) -> Bool {
        matches(activity) && seenAt <= at.adding(seconds: tolerance.components.seconds)
    }

    /// Its form in peer messages: id, time, flags, then each list, length-prefixed.
    public func encode(into w: inout ByteWriter) {
        w.uuid(id)
        w.zigzag(at.microsecondsSinceEpoch)
        w.byte(everything ? 1 : 0)
        for list in [persistentIdentifiers, types] {
            w.varint(UInt64(list.count))
            for item in list { w.lengthPrefixed(Array(item.utf8)) }
        }
    }

    public typealias Malformed = MalformedInput

    /// Reads one, refusing anything over the bounds (from another device: nothing it sends makes
    /// this device keep more).
    public init(decoding r: inout ByteReader) throws(Malformed) {
        do {
            id = try r.uuid()
            at = Timestamp(microsecondsSinceEpoch: try r.zigzag())
            everything = try r.byte() == 1
            var lists: [[String]] = []
            for limit in [Self.maximumIdentifiers, Self.maximumTypes] {
                let count = try r.varint()
                guard count <= UInt64(limit) else { throw Malformed(description: "a deletion names more than \(limit) items") }
                var list: [String] = []
                for _ in 0..<count { list.append(try r.utf8String()) }
                lists.append(list)
            }
            (persistentIdentifiers, types) = (lists[0], lists[1])
        } catch let e as Malformed {
            throw e
        } catch {
            throw Malformed(description: "malformed deletion: \(error)")
        }
        if let problem { throw Malformed(description: "a deletion out of bounds: \(problem)") }
    }
}
