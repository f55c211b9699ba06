import DaemonAccounts
import Foundation
import HandoffAPI
import HandoffClient
import HandoffModel
import HandoffTestSupport
import Testing

/// Links to activities (docs/apps.md, "Links"): sealed for the account, reopened from the device
/// while the activity is current there, else from the history, else its web page.
@Suite(.timeLimit(.minutes(3))) struct LinkTests {
    static let note = ActivityContent(
        type: "org.example.notes.edit", title: "Groceries", userInfo: ["text": .string("milk")], persistentIdentifier: "note-7"
    )

    static func target(_ activity: Activity, persistent: String? = "note-7") -> LinkTarget {
        var a = activity
        a.content.persistentIdentifier = persistent
        return LinkTarget(account: DeviceID(digest: [UInt8](repeating: 9, count: 32)), device: DeviceID(digest: [UInt8](repeating: 1, count: 32)), activity: a)
    }

    @Test func aLinkOpensOnlyWithTheAccountsSecrets() throws {
        let activity = Activity(content: Self.note, createdAt: .now())
        let target = Self.target(activity)
        let (secret, previous, other) = ([UInt8](repeating: 1, count: 32), [UInt8](repeating: 2, count: 32), [UInt8](repeating: 3, count: 32))
        let link = LinkSeal.seal(target, accountSecret: secret)
        #expect(link.hasPrefix("handoff:v1.") && link.utf8.count < 400, "\(link)")
        // Nothing of what it names shows.
        for clear in ["note-7", "org.example.notes", activity.id.lowercasedString] { #expect(!link.contains(clear)) }
        #expect(LinkSeal.open(link, accountSecrets: [secret]) == target)
        // Made under the previous secret (a device was removed since): still opens.
        #expect(LinkSeal.open(link, accountSecrets: [previous, secret]) == target)
        #expect(LinkSeal.open(link, accountSecrets: [other]) == nil)
        // Any byte changed, cut short, another prefix, too long: nothing.
        var bytes = Array(link.utf8)
        bytes[bytes.count - 5] = bytes[bytes.count - 5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(LinkSeal.open(String(decoding: bytes, as: UTF8.self), accountSecrets: [secret]) == nil)
        #expect(LinkSeal.open(String(link.dropLast(10)), accountSecrets: [secret]) == nil)
        #expect(LinkSeal.open("handoff:v2." + link.dropFirst(11), accountSecrets: [secret]) == nil)
        // A link sealed right but longer than any this version makes is not read.
        var huge = target
        huge.webpageURL = "https://example.com/" + String(repeating: "w", count: 7000)
        let tooLong = LinkSeal.seal(huge, accountSecret: secret)
        #expect(tooLong.utf8.count > OpenLinkRequest.maximumLinkBytes && LinkSeal.open(tooLong, accountSecrets: [secret]) == nil)
        for garbage in ["", "handoff:v1.", "handoff:v1.!!!!", "https://example.com"] { #expect(LinkSeal.open(garbage, accountSecrets: [secret]) == nil) }
        // Two links to the same activity differ (a fresh nonce): links cannot be matched up.
        #expect(LinkSeal.seal(target, accountSecret: secret) != link)
    }

    @Test func whatALinkNames() {
        let activity = Activity(content: Self.note, createdAt: .now())
        let target = Self.target(activity)
        #expect(target.names(activity))
        // Later activities of the same content and type are it; another type or content is not.
        var later = Activity(content: Self.note, createdAt: .now())
        #expect(target.names(later))
        later.content.type = "org.example.other"
        #expect(!target.names(later))
        #expect(!target.names(Activity(content: ActivityContent(type: "org.example.notes.edit", title: "x"), createdAt: .now())))
        // Without a persistentIdentifier only the activity itself is.
        #expect(!Self.target(activity, persistent: nil).names(Activity(content: Self.note, createdAt: .now())))
        // Ids too long to carry are left out, not cut.
        var long = activity
        long.content.persistentIdentifier = String(repeating: "p", count: LinkTarget.maximumIdentifierBytes + 1)
        long.content.webpageURL = "https://example.com/" + String(repeating: "w", count: LinkTarget.maximumPageBytes)
        let t = LinkTarget(account: target.account, device: target.device, activity: long)
        #expect(t.persistentIdentifier == nil && t.webpageURL == nil && t.activityID == activity.id)
    }

    @Test func activationConditionsAreBounded() {
        #expect(ActivationConditions(can: ["item-*"], prefers: ["item-7"]).problem == nil)
        #expect(ActivationConditions(can: [""]).problem != nil)
        #expect(ActivationConditions(can: (0..<33).map { "p\($0)" }).problem != nil)
        #expect(ActivationConditions(can: (0..<10).map { _ in String(repeating: "p", count: 500) }).problem?.contains("together") == true)
        #expect(ActivationConditions(can: ["*"]).takesAnything && !ActivationConditions(prefers: ["item-*"]).takesAnything)
    }

    @Test func queryValuesRoundTrip() {
        for text in ["note-7", "a b&c=d", "home:Notes/ü €.txt", "%41+", "", "🙂/?#"] {
            let encoded = QueryText.encode(text)
            #expect(!encoded.contains("&") && !encoded.contains(" ") && !encoded.contains("#"))
            #expect(QueryText.value("persistentIdentifier", in: Substring("x=1&persistentIdentifier=" + encoded)) == text, "\(text)")
        }
        #expect(QueryText.decode("%4") == nil && QueryText.decode("%zz") == nil && QueryText.decode("%ff") == nil)
    }

    /// Linked on B: opened while A has it current, from A (its latest state); A moved on to
    /// other content, from B's history; the same content anew on A, from A again; A stopped,
    /// from B's history.
    @Test func aLinkReopensFromItsDeviceElseFromTheHistory() async throws {
        let (a, b, first) = try await ContinuationTests.paired(Self.note)
        let made = try await b.client.send(.link(LinkRequest(peer: "desk")))
        #expect(made.device?.name == "desk" && made.activity.id == first.id && made.target.persistentIdentifier == "note-7")
        // Kept on B, so the link opens there while A is away.
        #expect(try await b.client.send(.history).entries.first?.activity.id == first.id)

        var opened = try await b.client.send(.openLink(OpenLinkRequest(link: made.link, delivery: .returnToCaller)))
        #expect(opened.source == .device && opened.reason == nil && opened.continued.activity.id == first.id && opened.continued.peerName == "desk")

        // A's current activity is another content: from the history, saying why.
        let other = try await a.client.send(.becomeCurrent(PutCurrentActivityRequest(content: ActivityContent(type: "org.example.notes.edit", title: "Other"))))
        try await ContinuationTests.waitUntilSeen(other.activity, by: b)
        opened = try await b.client.send(.openLink(OpenLinkRequest(link: made.link, delivery: .returnToCaller)))
        #expect(opened.source == .history && opened.continued.activity.id == first.id && opened.continued.activity.title == "Groceries", "\(opened)")
        #expect(opened.reason?.contains("moved on") == true && !opened.continued.activity.content.supportsContinuationStreams)

        // The same note, anew on A (a new activity, the same persistentIdentifier): from A.
        var edited = Self.note
        edited.title = "Groceries, edited"
        let again = try await a.client.send(.becomeCurrent(PutCurrentActivityRequest(content: edited)))
        try await ContinuationTests.waitUntilSeen(again.activity, by: b)
        opened = try await b.client.send(.openLink(OpenLinkRequest(link: made.link, delivery: .returnToCaller)))
        #expect(opened.source == .device && opened.continued.activity.title == "Groceries, edited", "\(opened)")

        // A away: from B's history, the newest it has of that note.
        try await a.stop()
        opened = try await b.client.send(.openLink(OpenLinkRequest(link: made.link, delivery: .returnToCaller)))
        #expect(opened.source == .history && opened.continued.activity.title == "Groceries, edited" && opened.continued.peerName == "desk", "\(opened)")

        // The history's own entries link too; a link by position.
        let second = try await b.client.send(.link(LinkRequest(historyEntry: 1)))
        #expect(second.activity.title == "Groceries, edited" && second.device?.name == "desk")
        await expectFailure(.notSaved) { _ = try await b.client.send(.link(LinkRequest(historyEntry: 99))) }
        await expectFailure(.invalidValue) { _ = try await b.client.send(.link(LinkRequest(historyEntry: 0))) }
        await expectFailure(.invalidValue) { _ = try await b.client.send(.link(LinkRequest(peer: "desk", historyEntry: 1))) }
        await expectFailure(.noCurrentActivity) { _ = try await b.client.send(.link(LinkRequest())) }
        try await b.finish()
        TempDirectory.remove(a.directory)
    }

    /// A link to this device's own activity reopens it here; anything that is not one of the
    /// account's links is refused, whatever is wrong with it; a link kept nowhere leads to its
    /// web page, and without one it is `not_saved`.
    @Test func ownLinksForeignLinksAndLinksKeptNowhere() async throws {
        let (a, b) = try await ContinuationTests.pair(configureB: { $0.settings.historyEnabled = false })
        var page = Self.note
        page.webpageURL = "https://notes.example.com/7"
        let put = try await a.client.send(.becomeCurrent(PutCurrentActivityRequest(content: page)))
        let own = try await a.client.send(.link(LinkRequest()))
        #expect(own.device == nil && own.target.webpageURL == "https://notes.example.com/7")
        let here = try await a.client.send(.openLink(OpenLinkRequest(link: own.link, delivery: .returnToCaller)))
        #expect(here.source == .device && here.continued.activity.id == put.activity.id && here.continued.peerName == "desk")
        // What a link names, by content, over the local API (HandoffKit's savedActivity).
        try await waitUntil("desk's history") { try await !a.client.send(.history(persistentIdentifier: "note-7")).entries.isEmpty }
        let saved = try await a.client.send(.history(persistentIdentifier: "note-7"))
        #expect(saved.entries.count == 1 && saved.entries[0].activity.id == put.activity.id)
        await expectFailure(.invalidValue) {
            _ = try await a.client.send(.history(persistentIdentifier: String(repeating: "p", count: 513)))
        }
        #expect(try await a.client.send(.history(persistentIdentifier: "note-7 ")).entries.isEmpty)

        for foreign in [
            "handoff:v1." + String(repeating: "A", count: 80), "https://example.com", String(own.link.dropLast(4)), own.link + "A",
            LinkSeal.seal(own.target, accountSecret: [UInt8](repeating: 7, count: 32)),
        ] {
            let message = await expectFailure(.invalidLink) { _ = try await b.client.send(.openLink(OpenLinkRequest(link: foreign))) }
            #expect(message.contains("handoff:v1."), "\(message)")
        }
        // A link broken over lines (as a note may wrap it) still opens.
        let wrapped = own.link.prefix(30) + "\n  " + own.link.dropFirst(30)
        // Another of A's activities, without a page.
        _ = try await a.client.send(.becomeCurrent(PutCurrentActivityRequest(content: ActivityContent(type: "org.example.notes.edit", title: "No page"))))
        let pageless = try await a.client.send(.link(LinkRequest()))

        // A away, B keeps no history: only the page is left.
        try await a.stop()
        let away = try await b.client.send(.openLink(OpenLinkRequest(link: String(wrapped), delivery: .returnToCaller)))
        #expect(away.source == .webpage && away.continued.activity.type == ActivityContent.browsingWebType, "\(away)")
        #expect(away.continued.activity.content.webpageURL == "https://notes.example.com/7" && away.continued.peerName == "desk")
        #expect(away.reason?.isEmpty == false)

        // Without a page: nothing to open, and it says why.
        let message = await expectFailure(.notSaved) { _ = try await b.client.send(.openLink(OpenLinkRequest(link: pageless.link, delivery: .returnToCaller))) }
        #expect(message.contains("history"), "\(message)")
        try await b.finish()
        TempDirectory.remove(a.directory)
    }
}
