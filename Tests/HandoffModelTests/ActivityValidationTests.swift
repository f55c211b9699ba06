import FoundationEssentials
import Testing

@testable import HandoffModel

@Suite(.timeLimit(.minutes(3))) struct ActivityValidationTests {
    func content(
        type: String = "com.example.editor.edit",
        title: String = "Report",
        userInfo: [String: ActivityValue] = ["page": .int(3)],
        required: [String] = [],
        webpageURL: String? = nil,
        expires: Timestamp? = nil
    ) -> ActivityContent {
        ActivityContent(
            type: type,
            title: title,
            userInfo: userInfo,
            requiredUserInfoKeys: required,
            webpageURL: webpageURL,
            expirationDate: expires
        )
    }

    func expectRefusal(_ c: ActivityContent, _ code: ActivityError.Code, mentioning: String) {
        do {
            try Fixtures.activity(c).validate(now: Fixtures.now, limits: ActivityLimits())
            Issue.record("accepted, expected \(code)")
        } catch {
            #expect(error.code == code, "\(error.message)")
            #expect(error.message.contains(mentioning), "\(error.message)")
            #expect(!error.message.contains("\n"), "messages are one line")
        }
    }

    @Test func theFullFixtureIsValid() throws {
        let size = try Fixtures.full.validate(now: Fixtures.now, limits: ActivityLimits())
        #expect(size == ActivityEncoding.encode(Fixtures.full).count)
    }

    @Test(arguments: [
        "com.example.editor.edit", "a.b", "org.kde.okular.view-page", "com.example_1.x", "A.B",
    ])
    func reverseDNSTypesAreAccepted(type: String) throws {
        try ActivityContent.validateType(type)
    }

    @Test(arguments: [
        ("", "empty"),
        ("editor", "not reverse-DNS"),
        ("com..edit", "not reverse-DNS"),
        (".com.edit", "not reverse-DNS"),
        ("com.edit.", "not reverse-DNS"),
        ("1com.edit", "not reverse-DNS"),
        ("com.exa mple.edit", "not reverse-DNS"),
        ("com.exämple.edit", "not reverse-DNS"),
        ("com/example.edit", "not reverse-DNS"),
        ("com." + String(repeating: "a", count: 125), "limit is 128"),
    ])
    func invalidTypesAreRefused(type: String, mention: String) {
        expectRefusal(content(type: type), .invalidType, mentioning: mention)
    }

    @Test func typeOfExactly128BytesIsAccepted() throws {
        try ActivityContent.validateType("com." + String(repeating: "a", count: 124))
    }

    @Test func titleRules() throws {
        try Fixtures.activity(content(title: String(repeating: "é", count: 128))).validate(now: Fixtures.now, limits: .init())
        expectRefusal(content(title: String(repeating: "é", count: 129)), .invalidTitle, mentioning: "limit is 256")
        expectRefusal(content(title: "two\nlines"), .invalidTitle, mentioning: "control characters")
        expectRefusal(content(title: "bell\u{7}"), .invalidTitle, mentioning: "control characters")
        expectRefusal(content(title: "c1\u{9B}31m"), .invalidTitle, mentioning: "control characters")
    }

    @Test(arguments: [
        "ftp://example.com/r", "javascript:alert(1)", "file:///etc/passwd", "https:///nohost", "https://",
        "https://exa mple.com/", "example.com/r", "http:example.com", "https://host:port/", "https://[::1/",
        "data:text/html,hi",
    ])
    func nonWebURLsAreRefusedAsWebpageURL(url: String) {
        expectRefusal(content(webpageURL: url), .invalidWebpageURL, mentioning: "http")
    }

    @Test(arguments: [
        "https://example.com/r", "http://192.168.1.4:8080/x?y=1#z", "HTTPS://Example.COM", "https://[fe80::1]:443/",
        "https://user@host/", "https://example.com/caf%C3%A9",
    ])
    func webURLsAreAccepted(url: String) throws {
        try Fixtures.activity(content(webpageURL: url)).validate(now: Fixtures.now, limits: .init())
    }

    @Test func valueRules() {
        expectRefusal(content(userInfo: ["home": .url("not a url")]), .invalidValue, mentioning: "userInfo.home")
        expectRefusal(content(userInfo: ["": .int(1)]), .invalidValue, mentioning: "empty key")
        expectRefusal(content(userInfo: ["a\u{1B}[2J": .int(1)]), .invalidValue, mentioning: "control characters")
        expectRefusal(
            content(userInfo: ["list": .array([.dictionary(["u": .url("%zz")])])]),
            .invalidValue,
            mentioning: "userInfo.list[0].u"
        )
        expectRefusal(
            content(userInfo: ["d": .date(Timestamp(microsecondsSinceEpoch: .max))]),
            .invalidValue,
            mentioning: "0001–9999"
        )
        var deep: ActivityValue = .null
        for _ in 0..<ActivityValue.maximumNestingDepth { deep = .array([deep]) }
        expectRefusal(content(userInfo: ["deep": deep]), .invalidValue, mentioning: "deeper than 32")
    }

    @Test func missingRequiredKeyIsNamed() {
        expectRefusal(content(required: ["page", "draft"]), .missingRequiredKey, mentioning: "\"draft\"")
    }

    @Test func expiryMustBeInTheFuture() {
        expectRefusal(content(expires: Fixtures.now), .expired, mentioning: "not in the future")
        expectRefusal(content(expires: Fixtures.now.adding(seconds: -1)), .expired, mentioning: "2026-11-22T09:59:59Z")
    }

    @Test func sizeCapIsEnforcedAndConfigurable() throws {
        let big = content(userInfo: ["blob": .data(Data(count: 70_000))])
        expectRefusal(big, .payloadTooLarge, mentioning: "limit is 65536")

        let small = content(userInfo: ["blob": .data(Data(count: 5_000))])
        let size = try Fixtures.activity(small).validate(now: Fixtures.now, limits: .init())
        #expect(size > ActivityLimits.warningEncodedSize, "5 KB is over the warning threshold")
        #expect(throws: ActivityError.self) {
            try Fixtures.activity(small).validate(now: Fixtures.now, limits: .init(maximumEncodedSize: 4096))
        }
    }

    @Test func requiredKeysAreDeduplicatedAndSorted() {
        let c = ActivityContent(type: "a.b", requiredUserInfoKeys: ["b", "a", "b"])
        #expect(c.requiredUserInfoKeys == ["a", "b"])
    }

    @Test func displayQuotedEscapesControlsAndTruncates() {
        #expect(displayQuoted("a\"b\n") == #""a\"b\u{a}""#)
        #expect(displayQuoted(String(repeating: "x", count: 300)).hasSuffix("…\""))
    }
}
