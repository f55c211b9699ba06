import BrowserHost
import Foundation
import HandoffKit
import HandoffModel
import HandoffTestSupport
import Synchronization
import Testing

/// The native messaging host's checks, as tables: the browser's framing, the extension's messages
/// (what is refused and why), the page activity both ways, and who may start the host.
@Suite(.timeLimit(.minutes(1))) struct BrowserHostTests {
    @Test func framingSplitsMessagesAndRefusesOversizedOnesBeforeHoldingThem() throws {
        let one = Array(#"{"type":"hello","browser":"chromium"}"#.utf8)
        let framed = try #require(NativeMessaging.frame(one))
        #expect(framed.count == one.count + 4)
        var reader = NativeMessaging.Reader()
        // Byte by byte, then two at once.
        var got: [[UInt8]] = []
        for byte in framed { got += try reader.feed([byte]) }
        #expect(got == [one])
        #expect(try reader.feed(framed + framed) == [one, one])
        #expect(reader.pending == 0)
        // A length over the limit is refused from its four bytes alone.
        var oversized = NativeMessaging.Reader()
        let length = UInt32(NativeMessaging.maximumIncomingBytes + 1)
        #expect(throws: NativeMessaging.FramingError.tooLarge(Int(length))) { try oversized.feed(withUnsafeBytes(of: length) { Array($0) }) }
        #expect(NativeMessaging.frame([UInt8](repeating: 0, count: NativeMessaging.maximumOutgoingBytes + 1)) == nil)
    }

    @Test(arguments: [
        (#"{"type":"hello","browser":"chromium"}"#, nil),
        (#"{"type":"hello","browser":"netscape"}"#, "unknown browser"),
        (#"{"type":"page","window":"12","url":"https://example.org/a","title":"A","focused":true}"#, nil),
        (#"{"type":"page","window":"12","url":"file:///etc/passwd","title":"A","focused":true}"#, "only http and https"),
        (#"{"type":"page","window":"12","url":"chrome://settings","title":"A","focused":true}"#, "only http and https"),
        (#"{"type":"page","window":"12","url":"about:blank","title":"A","focused":true}"#, "only http and https"),
        (#"{"type":"page","window":"12","url":"javascript:alert(1)","title":"A","focused":true}"#, "only http and https"),
        (#"{"type":"page","window":"12","url":"https://","title":"A","focused":true}"#, "only http and https"),
        // Found by the browser-messages fuzzer: Foundation took it, handoffd's URI rule does not.
        (#"{"type":"page","window":"12","url":"https://example.org/story#par`-4","title":"A","focused":true}"#, "written as URIs"),
        (#"{"type":"page","window":"-1","url":"https://example.org/","title":"A","focused":true}"#, "not a browser window id"),
        (#"{"type":"page","window":"12","url":"https://example.org/","title":"A","focused":1}"#, "JSON object"),
        (#"{"type":"page","window":"12","url":"https://example.org/","title":"A"}"#, "focused is missing"),
        (#"{"type":"saved","window":"1","request":7,"url":"https://example.org/","title":"A","scrollX":0,"scrollY":5,"scrollFraction":0.5,"viewportWidth":9}"#, nil),
        (#"{"type":"saved","window":"1","url":"https://example.org/","title":"A","scrollX":0,"scrollY":5,"scrollFraction":0.5,"viewportWidth":9}"#, "request is missing"),
        (#"{"type":"saved","window":"1","request":7,"url":"https://example.org/","title":"A","scrollX":0,"scrollY":-5,"scrollFraction":0,"viewportWidth":9}"#, "scrollY is not from 0"),
        (#"{"type":"saved","window":"1","request":7,"url":"https://example.org/","title":"A","scrollX":0,"scrollY":5,"scrollFraction":2,"viewportWidth":9}"#, "scrollFraction"),
        (#"{"type":"opened","id":"6f1c2d9e-8f1a-4c55-9d43-0c7a3c1f2b10","window":"4"}"#, nil),
        (#"{"type":"opened","id":"6f1c2d9e-8f1a-4c55-9d43-0c7a3c1f2b10"}"#, "either a window or an error"),
        (#"{"type":"continue","request":3,"peer":""}"#, "peer is 1 to"),
        (#"{"type":"advertise","url":"https://evil.example/"}"#, "unknown message type"),
        (#"[1,2]"#, "JSON object"),
        (#"not json"#, "JSON object"),
    ] as [(String, String?)])
    func messagesAreCheckedField_by_field(_ json: String, _ refusal: String?) {
        do {
            _ = try ExtensionMessage.decode(Array(json.utf8))
            #expect(refusal == nil, "\(json) was taken")
        } catch {
            #expect(refusal.map { error.description.contains($0) } == true, "\(json): \(error.description)")
        }
    }

    @Test func titlesAreCutToTheActivityLimitAndControlCharactersDropped() throws {
        let long = "\\u0007" + String(repeating: "é", count: 300)
        let json = #"{"type":"page","window":"1","url":"https://example.org/","title":"\#(long)","focused":false}"#
        guard case .page(_, let page, _) = try ExtensionMessage.decode(Array(json.utf8)) else {
            Issue.record("not a page")
            return
        }
        #expect(page.title.utf8.count <= ActivityLimits.maximumTitleBytes && page.title.allSatisfy { $0 == "é" })
    }

    @Test func aPageIsAnActivityAndBackAtTheSamePlace() throws {
        let page = ExtensionMessage.Page(url: "https://example.org/story#part-2", title: "Story")
        let position = ExtensionMessage.PagePosition(scrollX: 0, scrollY: 5000, scrollFraction: 0.25, viewportWidth: 1200, textFragment: "Paragraph 12 of Story")
        let content = PageActivity.content(page, position: position)
        #expect(content.type == PageActivity.type && content.webpageURL == page.url && content.title == "Story")
        try content.validate(now: Timestamp(microsecondsSinceEpoch: 0))
        let opening = try #require(PageActivity.opening(content))
        #expect(opening.url == page.url && opening.position == position)
        // The position of another page is not kept; the same page's is.
        #expect(PageActivity.content(ExtensionMessage.Page(url: "https://example.org/other", title: ""), position: nil, keeping: content).userInfo.isEmpty)
        #expect(PageActivity.content(page, position: nil, keeping: content).userInfo == content.userInfo)
        // The address goes as the browser shows it: through a URL, a `[` in the fragment would
        // come out as %5B (found by the browser-messages fuzzer).
        let app = HandoffApp(appID: "org.handoff.browser.firefox", socketPath: "/nonexistent/handoffd.sock")
        let activity = UserActivity(activityType: PageActivity.type, app: app)
        activity.webpageAddress = "https://example.org/story#notes[2]"
        #expect(PageActivity.content(of: activity).webpageURL == "https://example.org/story#notes[2]")
        #expect(try ExtensionMessage.checkedURL("https://example.org/story#notes[2]") == "https://example.org/story#notes[2]")
        // A browser started with the page scrolls there by itself.
        #expect(PageActivity.launchURL(page.url, position: position) == "https://example.org/story#part-2:~:text=Paragraph%2012%20of%20Story")
        #expect(PageActivity.launchURL("https://example.org/", position: position) == "https://example.org/#:~:text=Paragraph%2012%20of%20Story")
        // A received activity with anything but an http(s) page opens nothing.
        var other = content
        other.webpageURL = "file:///etc/passwd"
        #expect(PageActivity.opening(other) == nil)
    }

    @Test func onlyHandoffsExtensionStartsTheHost() {
        #expect(HostManifest.caller(["chrome-extension://\(HostManifest.chromiumExtensionID)/", "--parent-window=0"]) == .chromium)
        #expect(HostManifest.caller(["/home/u/.mozilla/native-messaging-hosts/org.handoff.browser.json", HostManifest.firefoxExtensionID]) == .firefox)
        #expect(HostManifest.caller(["chrome-extension://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/"]) == nil)
        #expect(HostManifest.caller(["/tmp/x.json", "evil@example"]) == nil)
        #expect(HostManifest.caller([]) == nil)
    }

    /// The ids the host accepts are the extension's: its `key` hashes to the Chromium id, and its
    /// gecko id is Firefox's.
    @Test func theManifestsNameTheExtensionsIDs() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let data = try Data(contentsOf: root.appendingPathComponent("browser/manifest.json"))
        let manifest = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        // Chromium's id of an extension: the first 16 bytes of its key's SHA-256, each nibble a letter a–p.
        let key = try #require(manifest["key"] as? String)
        let digest = try await Subprocess.run("/bin/sh", ["-c", "printf %s \"$0\" | base64 -d | openssl dgst -sha256 -r", key]).stdout
        let id = String(digest.prefix(32).map { Character(UnicodeScalar(UInt8(ascii: "a") + UInt8($0.hexDigitValue ?? 0))) })
        #expect(id == HostManifest.chromiumExtensionID, "\(digest)")
        let gecko = (manifest["browser_specific_settings"] as? [String: Any])?["gecko"] as? [String: Any]
        #expect(gecko?["id"] as? String == HostManifest.firefoxExtensionID)
        #expect(manifest["incognito"] as? String == "not_allowed")
        for family in HostManifest.Family.allCases {
            let json = try #require(try JSONSerialization.jsonObject(with: Data(HostManifest.json(family, hostPath: "/usr/bin/handoff-browser-host").utf8)) as? [String: Any])
            #expect(json["name"] as? String == HostManifest.name && json["path"] as? String == "/usr/bin/handoff-browser-host" && json["type"] as? String == "stdio")
            let allowed = (json["allowed_origins"] ?? json["allowed_extensions"]) as? [String]
            #expect(allowed == [family == .firefox ? HostManifest.firefoxExtensionID : "chrome-extension://\(HostManifest.chromiumExtensionID)/"])
        }
    }

    /// The bridge asks the extension where the user is (willSave) and waits 700 ms at most. An
    /// answer that comes later is for the question given up on: it does not answer the next
    /// question, nor change the page (handoffd is not running: the bridge works without it).
    @Test func aLateSaveAnswerAnswersNoOtherQuestion() async throws {
        let sent = Locked<[HostMessage]>([])
        // Three seconds to answer, not 700 ms: the second question must still wait when its answer comes.
        let bridge = BrowserBridge(socketPath: "/nonexistent/handoffd.sock", environment: [:], saveDeadline: .seconds(3)) { message in sent.value.withLock { $0.append(message) } }
        let (messages, input) = AsyncStream.makeStream(of: Result<[UInt8], NativeMessaging.FramingError>.self)
        func feed(_ json: String) { input.yield(.success(Array(json.utf8))) }
        func saves() -> [Int] { sent.value.withLock { $0.compactMap { if case .save(_, let request) = $0 { request } else { nil } } } }
        func refusals() -> Int { sent.value.withLock { $0.filter { if case .refused = $0 { true } else { false } }.count } }
        func saved(_ request: Int, scrollY: Int) -> String {
            #"{"type":"saved","window":"1","request":\#(request),"url":"https://example.org/a","title":"A","scrollX":0,"scrollY":\#(scrollY),"scrollFraction":0.5,"viewportWidth":1200}"#
        }
        let answered = Locked(false)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await bridge.serve(messages) }
            feed(#"{"type":"hello","browser":"firefox"}"#)
            feed(#"{"type":"page","window":"1","url":"https://example.org/a","title":"A","focused":true}"#)
            // The first question, once the page is the window's, goes unanswered: it ends at the deadline.
            try await Rig.waitFor("the page to be asked where the user is") {
                await bridge.save(window: "1")
                return saves() == [1]
            }
            group.addTask {
                await bridge.save(window: "1")
                answered.value.withLock { $0 = true }
            }
            try await Rig.waitFor("the second question") { saves() == [1, 2] }
            // No handoffd: the extension was told so (its popup shows why).
            #expect(sent.value.withLock { $0.contains { if case .offline(let reason) = $0 { reason.contains("not running") } else { false } } })
            // The first's answer, late; then a message the bridge refuses, to know it read the answer.
            feed(saved(1, scrollY: 1000))
            feed(#"{"type":"nonsense"}"#)
            try await Rig.waitFor("the refusal") { refusals() == 1 }
            #expect(answered.value.withLock { $0 } == false, "the late answer answered the second question")
            #expect(await bridge.pageUserInfo(window: "1")?["scrollY"] == nil, "the late answer changed the page")
            feed(saved(2, scrollY: 2000))
            try await Rig.waitFor("the second answer") { answered.value.withLock { $0 } }
            #expect(await bridge.pageUserInfo(window: "1")?["scrollY"] == .int(2000))
            input.finish()
            try await group.waitForAll()
        }
    }

}

/// A value the test and the code under test both reach.
final class Locked<Value: Sendable>: Sendable {
    let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
}
