import FoundationEssentials

@testable import HandoffModel

enum Fixtures {
    static let now = Timestamp(rfc3339: "2026-11-22T10:00:00Z")!

    /// One value of every type, including the awkward ones.
    static let everyValue: [String: ActivityValue] = [
        "string": .string("héllo, wörld ✓"),
        "emptyString": .string(""),
        "int": .int(3),
        "intMin": .int(.min),
        "intMax": .int(.max),
        "double": .double(1.5),
        "doubleTiny": .double(.leastNonzeroMagnitude),
        "doubleNegZero": .double(-0.0),
        "doubleNaN": .double(.nan),
        "doubleInf": .double(.infinity),
        "doubleNegInf": .double(-.infinity),
        "boolTrue": .bool(true),
        "boolFalse": .bool(false),
        "data": .data(Data([0, 1, 2, 255])),
        "emptyData": .data(Data()),
        "date": .date(Timestamp(rfc3339: "2026-11-22T10:00:00.123456Z")!),
        "url": .url("https://example.com/r?q=a%20b#frag"),
        "fileURL": .url("file:///home/me/Report.odt"),
        "uuid": .uuid(UUID(uuidString: "3F2504E0-4F89-11D3-9A0C-0305E82C3301")!),
        "null": .null,
        "array": .array([.int(1), .string("two"), .array([]), .null]),
        "dictionary": .dictionary(["nested": .dictionary(["deeper": .bool(true)]), "zero": .int(0)]),
    ]

    static func activity(_ content: ActivityContent) -> Activity {
        Activity(
            id: UUID(uuidString: "00000000-0000-4000-8000-000000000001")!,
            content: content,
            createdAt: now,
            updatedAt: now.adding(seconds: 1),
            originDevice: "dev-test"
        )
    }

    static let full = activity(
        ActivityContent(
            type: "com.example.editor.edit",
            title: "Report",
            userInfo: everyValue,
            requiredUserInfoKeys: ["int", "data"],
            webpageURL: "https://example.com/r",
            targetContentIdentifier: "doc-42",
            persistentIdentifier: "persist-1",
            expirationDate: now.adding(seconds: 600),
            supportsContinuationStreams: true,
            needsSave: true
        )
    )
}
