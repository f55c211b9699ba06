#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffDBus
import HandoffModel

/// An activity as D-Bus carries it, for apps in any language: an `a{sv}` of the fields an app sets
/// on `NSUserActivity`, with typed `userInfo` values.
///
/// Values that D-Bus has a type for travel as that type — `s` string, `x` int (any integer type is
/// taken), `d` double, `b` bool, `ay` data, `av`/`as` array, `a{sv}` dictionary. The ones it has
/// none for are a `(sv)` pair naming the type: `("date", <x microseconds since 1970>)`,
/// `("url", <s>)`, `("uuid", <s>)`, `("null", <b false>)`. handoffd checks the result as it does any
/// activity (type, title, sizes, required keys).
package enum ActivityDictionary {
    /// The keys of a content, and the D-Bus type each must have.
    static let keys: [String: String] = [
        "type": "s", "title": "s", "userInfo": "a{sv}", "requiredUserInfoKeys": "as", "webpageURL": "s", "targetContentIdentifier": "s",
        "persistentIdentifier": "s", "expirationDate": "x", "supportsContinuationStreams": "b", "needsSave": "b",
    ]

    /// The content an app sent; a missing `type`, an unknown key or a value of the wrong type is
    /// refused with `InvalidArgs` saying which.
    package static func content(from value: DBusValue) throws(DBusError) -> ActivityContent {
        guard let fields = value.dictionary else { throw invalid("an activity is an a{sv} dictionary, not \(value.signature)") }
        for (key, field) in fields {
            guard let expected = keys[key] else {
                throw invalid("unknown activity key \(key) (the keys: \(keys.keys.sorted().joined(separator: ", ")))")
            }
            guard field.signature == expected else { throw invalid("\(key) must be \(expected), not \(field.signature)") }
        }
        guard let type = fields["type"]?.stringValue else { throw invalid("an activity needs a type (s), e.g. org.example.editor.edit") }
        var userInfo: [String: ActivityValue] = [:]
        for (key, item) in fields["userInfo"]?.dictionary ?? [:] {
            userInfo[key] = try activityValue(item, at: "userInfo." + key)
        }
        return ActivityContent(
            type: type, title: fields["title"]?.stringValue ?? "", userInfo: userInfo,
            requiredUserInfoKeys: fields["requiredUserInfoKeys"]?.arrayItems?.compactMap(\.stringValue) ?? [],
            webpageURL: fields["webpageURL"]?.stringValue, targetContentIdentifier: fields["targetContentIdentifier"]?.stringValue,
            persistentIdentifier: fields["persistentIdentifier"]?.stringValue,
            expirationDate: fields["expirationDate"]?.integerValue.map { Timestamp(microsecondsSinceEpoch: $0) },
            supportsContinuationStreams: fields["supportsContinuationStreams"]?.boolValue ?? false, needsSave: fields["needsSave"]?.boolValue ?? false
        )
    }

    /// A content as an `a{sv}` (only the fields that are set).
    package static func dictionary(_ content: ActivityContent) -> DBusValue {
        .vardict(fields(content))
    }

    /// A continued activity: its content, and `id`, `createdAt`, `updatedAt` (x, microseconds).
    package static func dictionary(_ activity: Activity) -> DBusValue {
        var all = fields(activity.content)
        all["id"] = .string(activity.id.lowercasedString)
        all["createdAt"] = .int64(activity.createdAt.microsecondsSinceEpoch)
        all["updatedAt"] = .int64(activity.updatedAt.microsecondsSinceEpoch)
        return .vardict(all)
    }

    private static func fields(_ content: ActivityContent) -> [String: DBusValue] {
        var all: [String: DBusValue] = ["type": .string(content.type), "title": .string(content.title)]
        if !content.userInfo.isEmpty { all["userInfo"] = .vardict(content.userInfo.mapValues(dbusValue)) }
        if !content.requiredUserInfoKeys.isEmpty { all["requiredUserInfoKeys"] = .strings(content.requiredUserInfoKeys) }
        if let url = content.webpageURL { all["webpageURL"] = .string(url) }
        if let target = content.targetContentIdentifier { all["targetContentIdentifier"] = .string(target) }
        if let persistent = content.persistentIdentifier { all["persistentIdentifier"] = .string(persistent) }
        if let expiry = content.expirationDate { all["expirationDate"] = .int64(expiry.microsecondsSinceEpoch) }
        if content.supportsContinuationStreams { all["supportsContinuationStreams"] = .bool(true) }
        if content.needsSave { all["needsSave"] = .bool(true) }
        return all
    }

    static func dbusValue(_ value: ActivityValue) -> DBusValue {
        switch value {
        case .string(let s): .string(s)
        case .int(let i): .int64(i)
        case .double(let d): .double(d)
        case .bool(let b): .bool(b)
        case .data(let d): .array(element: "y", d.map { .byte($0) })
        case .date(let t): .structure([.string("date"), .variant(.int64(t.microsecondsSinceEpoch))])
        case .url(let u): .structure([.string("url"), .variant(.string(u))])
        case .uuid(let u): .structure([.string("uuid"), .variant(.string(u.lowercasedString))])
        case .null: .structure([.string("null"), .variant(.bool(false))])
        case .array(let items): .array(element: "v", items.map { .variant(dbusValue($0)) })
        case .dictionary(let entries): .vardict(entries.mapValues(dbusValue))
        }
    }

    static func activityValue(_ value: DBusValue, at path: String) throws(DBusError) -> ActivityValue {
        switch value {
        case .variant(let inner): return try activityValue(inner, at: path)
        case .string(let s), .objectPath(let s), .signature(let s): return .string(s)
        case .double(let d): return .double(d)
        case .bool(let b): return .bool(b)
        case .byte, .int16, .uint16, .int32, .uint32, .int64, .uint64:
            guard let i = value.integerValue else { throw invalid("\(path): \(value) does not fit in an int (x)") }
            return .int(i)
        case .unixFD: throw invalid("\(path): a file descriptor cannot be an activity value; use a continuation stream")
        case .array(let element, let items):
            if element == "y" { return .data(Data(items.compactMap { if case .byte(let b) = $0 { b } else { nil } })) }
            if element.hasPrefix("{") {
                guard element.hasPrefix("{s") else { throw invalid("\(path): dictionary keys must be strings (a{sv})") }
                var entries: [String: ActivityValue] = [:]
                for item in items {
                    guard case .dictEntry(.string(let key), let inner) = item else { continue }
                    entries[key] = try activityValue(inner, at: path + "." + key)
                }
                return .dictionary(entries)
            }
            var converted: [ActivityValue] = []
            for (i, item) in items.enumerated() { converted.append(try activityValue(item, at: "\(path)[\(i)]")) }
            return .array(converted)
        case .structure(let fields):
            guard fields.count == 2, case .string(let tag) = fields[0], case .variant(let inner) = fields[1] else {
                throw invalid("\(path): a struct must be (sv), a type name and its value: (\"date\", <x>), (\"url\", <s>), (\"uuid\", <s>), (\"null\", <b>)")
            }
            switch (tag, inner) {
            case ("date", _): if let us = inner.integerValue { return .date(Timestamp(microsecondsSinceEpoch: us)) }
            case ("url", .string(let u)): return .url(u)
            case ("uuid", .string(let u)): if let id = UUID(uuidString: u) { return .uuid(id) }
            case ("null", _): return .null
            default: break
            }
            throw invalid("\(path): (\"\(tag)\", <\(inner.signature)>) is not a date (x), url (s), uuid (s) or null")
        case .dictEntry: throw invalid("\(path): a dictionary entry outside a dictionary")
        }
    }

    static func invalid(_ message: String) -> DBusError {
        DBusError(name: DBusError.invalidArgsName, message: message)
    }
}
