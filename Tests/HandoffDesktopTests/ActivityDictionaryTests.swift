import DesktopAgent
import Foundation
import HandoffDBus
import HandoffModel
import Testing

/// `ActivityDictionary`: an activity as an `a{sv}` and back, every typed value keeping its type,
/// and what an app gets wrong said precisely.
@Suite(.timeLimit(.minutes(1))) struct ActivityDictionaryTests {
    static let everyValue: [String: ActivityValue] = [
        "s": .string("Grüße"), "i": .int(-42), "d": .double(2.5), "b": .bool(true), "data": .data(Data([0, 1, 255])),
        "date": .date(Timestamp(microsecondsSinceEpoch: 1_800_000_000_123_456)), "url": .url("file:///tmp/x"),
        "uuid": .uuid(UUID(uuidString: "8F1C7C2E-55A3-4E3B-9B0C-0E6F8B8C1A11")!), "null": .null,
        "array": .array([.int(1), .string("two"), .array([])]), "dict": .dictionary(["nested": .dictionary(["deep": .bool(false)])]),
    ]

    @Test func everyFieldAndValueTypeGoesThereAndBack() throws {
        let content = ActivityContent(
            type: "org.example.editor.edit", title: "Report", userInfo: Self.everyValue, requiredUserInfoKeys: ["s", "i"],
            webpageURL: "https://example.org/r", targetContentIdentifier: "doc-7", persistentIdentifier: "p-7",
            expirationDate: Timestamp(microsecondsSinceEpoch: 1_900_000_000_000_000), supportsContinuationStreams: true, needsSave: true
        )
        let back = try ActivityDictionary.content(from: ActivityDictionary.dictionary(content))
        #expect(back == content)
    }

    /// What a Python or GLib app naturally sends: other integer types, string arrays.
    @Test func nativeTypesOfOtherLanguagesAreTaken() throws {
        let sent = DBusValue.vardict([
            "type": .string("org.example.notes.edit"),
            "userInfo": .vardict(["n": .int32(7), "u": .uint32(8), "tags": .strings(["a", "b"])]),
        ])
        let content = try ActivityDictionary.content(from: sent)
        #expect(content.userInfo["n"] == .int(7) && content.userInfo["u"] == .int(8))
        #expect(content.userInfo["tags"] == .array([.string("a"), .string("b")]))
        #expect(content.title == "")
    }

    @Test func mistakesAreRefusedSayingWhich() {
        let cases: [(DBusValue, String)] = [
            (.string("not a dict"), "a{sv}"),
            (.vardict(["title": .string("no type")]), "needs a type"),
            (.vardict(["type": .string("org.example.a"), "titel": .string("typo")]), "unknown activity key titel"),
            (.vardict(["type": .string("org.example.a"), "needsSave": .string("yes")]), "needsSave must be b"),
            (.vardict(["type": .string("org.example.a"), "userInfo": .vardict(["when": .structure([.string("time"), .variant(.int64(1))])])]), "userInfo.when"),
            (.vardict(["type": .string("org.example.a"), "userInfo": .vardict(["big": .uint64(UInt64.max)])]), "does not fit"),
        ]
        for (value, expected) in cases {
            do {
                _ = try ActivityDictionary.content(from: value)
                Issue.record("\(value) was taken")
            } catch {
                #expect(error.name == DBusError.invalidArgsName && error.message.contains(expected), "\(error.message) lacks \(expected)")
            }
        }
    }

    @Test func aContinuedActivityCarriesItsIDAndTimes() throws {
        let activity = Activity(
            id: UUID(), content: ActivityContent(type: "org.example.a", title: "A"), createdAt: Timestamp(microsecondsSinceEpoch: 1), updatedAt: Timestamp(microsecondsSinceEpoch: 2)
        )
        let fields = try #require(ActivityDictionary.dictionary(activity).dictionary)
        #expect(fields["id"] == .string(activity.id.lowercasedString) && fields["createdAt"] == .int64(1) && fields["updatedAt"] == .int64(2))
    }
}
