import DaemonClipboard
import Foundation
import HandoffAPI
import HandoffClient
import HandoffDaemon
import HandoffDiscovery
import HandoffModel
import HandoffPeer
import HandoffTestSupport
import Testing

/// The clipboard's decisions (`ClipboardBoard`), its notice's bounds, and two daemons in this
/// process: a copy announced on A, offered on B, pasted on B from A's "agent" (this test, taking
/// the stream with a file, as handoff-desktop does with its memory file).
@Suite(.timeLimit(.minutes(3))) struct ClipboardTests {
    static let t0 = Timestamp(microsecondsSinceEpoch: 1_800_000_000_000_000)
    static let settings = ClipboardSettings(lifetimeSeconds: 120, maximumSize: 1 << 20)
    static let text = [ClipboardItem(type: "text/plain;charset=utf-8", size: 11)]
    static let png = [ClipboardItem(type: "image/png", size: 5000)]
    static let files = [ClipboardItem(type: "text/uri-list", size: 40)]
    static let alpha = LocalEvent.PeerRef(id: DeviceID(digest: Array(repeating: 1, count: 32)), name: "alpha")
    static let bravo = LocalEvent.PeerRef(id: DeviceID(digest: Array(repeating: 2, count: 32)), name: "bravo")

    @Test func aCopyIsToldToEveryoneAndOnlyAWithdrawalOfARealCopyIsTold() {
        var board = ClipboardBoard(enabled: true)
        let nothingToWithdraw = board.copied([], now: Self.t0, settings: Self.settings)
        #expect(nothingToWithdraw == .nothing)
        guard case .everyone(let notice) = board.copied(Self.text, now: Self.t0, settings: Self.settings) else {
            Issue.record("a copy is told")
            return
        }
        #expect(notice.items == Self.text && notice.lifetimeSeconds == 120 && notice.copiedAt == Self.t0)
        #expect(board.state(Self.settings).local?.id == notice.id && board.state(Self.settings).newest?.peer == nil)
        #expect(board.state(Self.settings).local?.expiresAt == Self.t0.adding(seconds: 120))
        guard case .everyone(let withdrawal) = board.copied([], now: Self.t0.adding(seconds: 1), settings: Self.settings) else {
            Issue.record("a withdrawal is told")
            return
        }
        #expect(withdrawal.items.isEmpty && board.state(Self.settings).local == nil && board.state(Self.settings).newest == nil)
        // A copy that ran out is not withdrawn again: the others forgot it too.
        _ = board.copied(Self.text, now: Self.t0, settings: Self.settings)
        let ranOut = board.copied([], now: Self.t0.adding(seconds: 120), settings: Self.settings)
        #expect(ranOut == .nothing)
    }

    @Test func theNewestCopyAnywhereWinsAndEachLastsItsLifetime() {
        var board = ClipboardBoard(enabled: true)
        _ = board.copied(Self.text, now: Self.t0, settings: Self.settings)
        let theirs = ClipboardNotice(copiedAt: Self.t0.adding(seconds: 5), lifetimeSeconds: 600, items: Self.png)
        let heardTheirs = board.heard(theirs, from: Self.alpha, now: Self.t0.adding(seconds: 5), settings: Self.settings)
        #expect(heardTheirs)
        #expect(board.newest?.notice.id == theirs.id && board.newest?.peer == Self.alpha)
        // Kept for the shorter lifetime: ours.
        #expect(board.newest?.expiresAt == Self.t0.adding(seconds: 125))
        // Heard again (a session opened anew): nothing changes.
        let again = board.heard(theirs, from: Self.alpha, now: Self.t0.adding(seconds: 6), settings: Self.settings)
        #expect(!again)
        // This device's copy is still given out, though not the newest.
        #expect(board.refusal(copyID: board.local!.notice.id, type: "text/plain;charset=utf-8", now: Self.t0.adding(seconds: 6)) == nil)
        // A copy here after it is the newest again; a device that arrives now tells nothing older.
        _ = board.copied(Self.png, now: Self.t0.adding(seconds: 10), settings: Self.settings)
        #expect(board.newest?.peer == nil)
        // alpha's copy told again (its session opened anew): nothing changes.
        let replayed = board.heard(theirs, from: Self.alpha, now: Self.t0.adding(seconds: 11), settings: Self.settings)
        #expect(!replayed && board.newest?.peer == nil)
        // Another device's withdrawal does not take alpha's copy; alpha's does.
        let newer = ClipboardNotice(copiedAt: Self.t0.adding(seconds: 20), lifetimeSeconds: 60, items: Self.text)
        _ = board.heard(newer, from: Self.alpha, now: Self.t0.adding(seconds: 20), settings: Self.settings)
        let bravoWithdrew = board.heard(ClipboardNotice(copiedAt: Self.t0.adding(seconds: 21), lifetimeSeconds: 60, items: []), from: Self.bravo, now: Self.t0.adding(seconds: 21), settings: Self.settings)
        #expect(!bravoWithdrew)
        #expect(board.newest?.peer == Self.alpha)
        // A withdrawal older than alpha's copy came late: alpha's copy stays.
        let late = board.heard(ClipboardNotice(copiedAt: Self.t0.adding(seconds: 19), lifetimeSeconds: 60, items: []), from: Self.alpha, now: Self.t0.adding(seconds: 22), settings: Self.settings)
        #expect(!late && board.newest?.peer == Self.alpha)
        let alphaWithdrew = board.heard(ClipboardNotice(copiedAt: Self.t0.adding(seconds: 22), lifetimeSeconds: 60, items: []), from: Self.alpha, now: Self.t0.adding(seconds: 22), settings: Self.settings)
        #expect(alphaWithdrew)
        #expect(board.newest == nil && board.remote == nil)
        // The withdrawn copy told late (out of order): still withdrawn.
        let stale = board.heard(newer, from: Self.alpha, now: Self.t0.adding(seconds: 23), settings: Self.settings)
        #expect(!stale && board.newest == nil)
        // Run out: forgotten when next looked at.
        let last = ClipboardNotice(copiedAt: Self.t0.adding(seconds: 30), lifetimeSeconds: 60, items: Self.text)
        _ = board.heard(last, from: Self.alpha, now: Self.t0.adding(seconds: 30), settings: Self.settings)
        #expect(board.nextExpiry == Self.t0.adding(seconds: 90))
        let early = board.expire(now: Self.t0.adding(seconds: 89))
        let theirsRanOut = board.expire(now: Self.t0.adding(seconds: 90))
        #expect(!early && theirsRanOut)
        #expect(board.remote == nil && board.local != nil)
        let oursRanOut = board.expire(now: Self.t0.adding(seconds: 130))
        #expect(oursRanOut)
        #expect(board.state(Self.settings) == ClipboardState(enabled: true, maximumSize: Self.settings.maximumSize))
    }

    /// A secret (or anything not carried) copied here after another device's copy: nothing is
    /// offered any more, so no app pastes the older copy in its place.
    @Test func aSecretCopiedHereEndsTheOfferOfAnOlderCopy() {
        var board = ClipboardBoard(enabled: true)
        let theirs = ClipboardNotice(copiedAt: Self.t0, lifetimeSeconds: 60, items: Self.text)
        _ = board.heard(theirs, from: Self.alpha, now: Self.t0, settings: Self.settings)
        #expect(board.newest?.peer == Self.alpha)
        let told = board.copied([], now: Self.t0.adding(seconds: 1), settings: Self.settings)
        #expect(told == .nothing && board.newest == nil)
        // The same copy told again as a session opens: still nothing to offer.
        let again = board.heard(theirs, from: Self.alpha, now: Self.t0.adding(seconds: 2), settings: Self.settings)
        #expect(!again && board.newest == nil)
    }

    @Test(arguments: [
        // (copy id is ours, type, seconds later, refusal)
        (true, "text/plain;charset=utf-8", Int64(0), nil),
        (true, "image/png", 0, "that copy has no image/png form"),
        (false, "text/plain;charset=utf-8", 0, "that copy is no longer on the clipboard there"),
        (true, "text/plain;charset=utf-8", 120, "that copy is no longer on the clipboard there"),
        // A file of its file list: only if it has one (which entries are files, its agent knows).
        (true, "text/uri-list#0", 0, nil),
        (true, "text/uri-list#7", 0, nil),
        (false, "text/uri-list#0", 0, "that copy is no longer on the clipboard there"),
    ] as [(Bool, String, Int64, String?)])
    func whoMayPasteWhat(ours: Bool, type: String, later: Int64, refusal: String?) {
        var board = ClipboardBoard(enabled: true)
        _ = board.copied(Self.text + Self.files, now: Self.t0, settings: Self.settings)
        let id = ours ? board.local!.notice.id : UUID()
        #expect(board.refusal(copyID: id, type: type, now: Self.t0.adding(seconds: later)) == refusal)
    }

    @Test func aCopyWithoutAFileListHasNoFilesToPaste() {
        var board = ClipboardBoard(enabled: true)
        _ = board.copied(Self.text, now: Self.t0, settings: Self.settings)
        #expect(board.refusal(copyID: board.local!.notice.id, type: "text/uri-list#0", now: Self.t0) == "that copy has no text/uri-list form")
    }

    @Test func offForgetsEverythingAndWithdrawsAndNothingIsHeardWhileOff() {
        var board = ClipboardBoard(enabled: true)
        _ = board.copied(Self.text, now: Self.t0, settings: Self.settings)
        _ = board.heard(ClipboardNotice(copiedAt: Self.t0, lifetimeSeconds: 60, items: Self.png), from: Self.alpha, now: Self.t0, settings: Self.settings)
        guard case .everyone(let withdrawal) = board.setEnabled(false, now: Self.t0, settings: Self.settings) else {
            Issue.record("turning off withdraws this device's copy")
            return
        }
        #expect(withdrawal.items.isEmpty && board.state(Self.settings) == ClipboardState(enabled: false, maximumSize: Self.settings.maximumSize))
        let whileOff = board.copied(Self.text, now: Self.t0, settings: Self.settings)
        #expect(whileOff == .nothing)
        let heardWhileOff = board.heard(ClipboardNotice(copiedAt: Self.t0, lifetimeSeconds: 60, items: Self.png), from: Self.alpha, now: Self.t0, settings: Self.settings)
        #expect(!heardWhileOff)
        #expect(board.refusal(copyID: UUID(), type: "image/png", now: Self.t0) == "the clipboard is not shared there")
        let on = board.setEnabled(true, now: Self.t0, settings: Self.settings)
        #expect(on == .nothing)
        #expect(board.state(Self.settings) == ClipboardState(enabled: true, maximumSize: Self.settings.maximumSize))
    }

    @Test func aDeviceThatArrivesHearsWhatIsLeftOfTheCopy() {
        var board = ClipboardBoard(enabled: true)
        #expect(board.noticeForNewcomer(now: Self.t0) == nil)
        _ = board.copied(Self.text, now: Self.t0, settings: Self.settings)
        #expect(board.noticeForNewcomer(now: Self.t0.adding(seconds: 100))?.lifetimeSeconds == 20)
        #expect(board.noticeForNewcomer(now: Self.t0.adding(microseconds: 119_999_999))?.lifetimeSeconds == 1)
        #expect(board.noticeForNewcomer(now: Self.t0.adding(seconds: 120)) == nil)
        // Not when another device's copy is newer: it would replace that one over there.
        _ = board.copied(Self.text, now: Self.t0.adding(seconds: 200), settings: Self.settings)
        _ = board.heard(ClipboardNotice(copiedAt: Self.t0, lifetimeSeconds: 60, items: Self.png), from: Self.alpha, now: Self.t0.adding(seconds: 201), settings: Self.settings)
        #expect(board.noticeForNewcomer(now: Self.t0.adding(seconds: 202)) == nil)
    }

    @Test func noticesOutOfBoundsAndSecretsAreRefused() throws {
        let ok = ClipboardNotice(copiedAt: Self.t0, lifetimeSeconds: 120, items: Self.text + Self.png)
        #expect(ok.problem == nil)
        var bad = ok
        bad.items.append(ClipboardItem(type: "application/x-kde-something", size: 1))
        #expect(bad.problem?.contains("is not a form the clipboard carries") == true)
        bad.items = Self.text + Self.text
        #expect(bad.problem == "a form is named twice")
        bad.items = [ClipboardItem(type: "image/png", size: -1)]
        #expect(bad.problem == "a form's size is out of bounds")
        bad = ok
        bad.lifetimeSeconds = 3601
        #expect(bad.problem != nil)
        // On the wire: what is out of bounds does not decode.
        for notice in [bad, ClipboardNotice(copiedAt: Self.t0, lifetimeSeconds: 1, items: [ClipboardItem(type: "text/x-shell", size: 1)])] {
            let (kind, payload) = PeerMessage.clipboardNotice(notice).encodedPayload()
            #expect(throws: PeerMessageError.self) { try PeerMessage(kind: kind, payload: payload) }
        }
        for form in ["application/x-shellscript", "text/uri-list#", "text/uri-list#1000", "text/uri-list#-1", "text/uri-list#01", "text/uri-list#1 "] {
            let (kind, payload) = PeerMessage.openClipboardStream(copyID: UUID(), type: form).encodedPayload()
            #expect(throws: PeerMessageError.self, "\(form)") { try PeerMessage(kind: kind, payload: payload) }
        }
        #expect(ClipboardNotice.fileIndex("text/uri-list#0") == 0 && ClipboardNotice.fileIndex("text/uri-list#999") == 999)
        #expect(ClipboardNotice.fileIndex("text/uri-list") == nil && ClipboardNotice.fileForm(3) == "text/uri-list#3")
        // Secrets, as password managers mark them.
        #expect(ClipboardNotice.isSecret(types: ["text/plain", "x-kde-passwordManagerHint"], hint: "secret"))
        #expect(ClipboardNotice.isSecret(types: ["text/plain", "x-kde-passwordManagerHint"], hint: "secret\n"))
        #expect(!ClipboardNotice.isSecret(types: ["text/plain", "x-kde-passwordManagerHint"], hint: "not-secret"))
        #expect(ClipboardNotice.isSecret(types: ["UTF8_STRING", "application/x-nspasteboard-concealed-type"], hint: nil))
        #expect(!ClipboardNotice.isSecret(types: ["UTF8_STRING", "text/plain"], hint: nil))
    }

    /// This test as a device's desktop agent: it holds the device's copies (`POST
    /// /v1/clipboard/holder`), announces them under its id, and hears each paste asked of them.
    struct Holder {
        let client: HandoffClient
        let events: NDJSONSubscription<ClipboardHolderEvent>
        let id: UUID

        init(_ client: HandoffClient) async throws {
            self.client = client
            events = try await client.subscribe(.holdClipboard)
            guard case .holding(let id) = try await events.next()?.body else { throw TestFailure("no holding line first") }
            self.id = id
        }

        func announce(_ items: [ClipboardItem]) async throws -> ClipboardState {
            try await client.send(.announceClipboard(ClipboardAnnouncement(items: items, holder: id)))
        }

        /// The next paste another device asks of this device's copy.
        func nextPasteRequest() async throws -> (UUID, UUID, String) {
            while let event = try await events.next() {
                if case .pasteRequested(let stream, let copy, let type, _) = event.body { return (stream, copy, type) }
            }
            throw TestFailure("the holder's stream ended")
        }

        /// The agent goes (it stops, crashes, or starts anew).
        func leave() { events.close() }
    }

    static func file(_ path: String, _ flags: Int32) throws -> Int32 {
        let fd = open(path, flags | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw TestFailure("cannot open \(path): \(String(cString: strerror(errno)))") }
        return fd
    }

    @Test func aCopyIsAnnouncedThenPulledOnlyWhenPastedAndBoundedBySize() async throws {
        let (a, b) = try await ContinuationTests.pair(configureB: { $0.settings.clipboardMaxSize = 4096 })
        let dir = try TempDirectory.make(prefix: "handoff-clipboard")
        defer { TempDirectory.remove(dir) }
        let agent = try await Holder(a.client)
        let text = Data("hello there".utf8)
        try text.write(to: URL(fileURLWithPath: dir + "/copied"))

        let announced = try await agent.announce(Self.text)
        let copy = try #require(announced.local)
        #expect(announced.newest == copy && copy.peer == nil)
        try await waitUntil("B hears of A's copy") { try await b.client.send(.clipboard).newest?.id == copy.id }
        let heard = try #require(try await b.client.send(.clipboard).newest)
        #expect(heard.peer?.name == "desk" && heard.items == Self.text)

        // B pastes: A's agent is asked for that form, and hands it over.
        let target = try Self.file(dir + "/pasted", O_WRONLY | O_CREAT | O_TRUNC)
        defer { close(target) }
        let pasting = Task { try await b.client.fileStream(.pasteClipboard(copy.id, type: "text/plain;charset=utf-8"), file: target, role: .receive) }
        let (streamID, copyID, type) = try await agent.nextPasteRequest()
        #expect(copyID == copy.id && type == "text/plain;charset=utf-8")
        let source = try Self.file(dir + "/copied", O_RDONLY)
        defer { close(source) }
        let sending = try await a.client.fileStream(.takeStream(streamID), file: source, role: .send)
        let receiving = try await pasting.value
        #expect(try await receiving.outcome().state == .completed)
        #expect(try await sending.outcome().state == .completed)
        #expect(FileManager.default.contents(atPath: dir + "/pasted") == text)

        // A form the copy does not have, or a copy that is not the newest, is not pasted.
        await expectFailure(.noClipboard) { _ = try await b.client.fileStream(.pasteClipboard(copy.id, type: "image/png"), file: target, role: .receive) }
        await expectFailure(.noClipboard) { _ = try await b.client.fileStream(.pasteClipboard(UUID(), type: "text/plain;charset=utf-8"), file: target, role: .receive) }
        // Nothing copied here to paste from: B's own copy is not pasted through handoffd.
        // Over B's max_size: heard of, not pasted.
        _ = try await agent.announce(Self.png)
        try await waitUntil("B hears of A's picture") { try await b.client.send(.clipboard).newest?.items == Self.png }
        let picture = try #require(try await b.client.send(.clipboard).newest)
        await expectFailure(.notOffered) { _ = try await b.client.fileStream(.pasteClipboard(picture.id, type: "image/png"), file: target, role: .receive) }

        // A's clipboard holds nothing carried (or a secret): B forgets A's copy.
        _ = try await agent.announce([])
        try await waitUntil("B hears of the withdrawal") { try await b.client.send(.clipboard).newest == nil }

        // Off on B: A's copy there is forgotten, nothing is pasted, and nothing copied on B is
        // announced; the switch holds until turned on.
        _ = try await agent.announce(Self.text)
        try await waitUntil("B hears of A's new copy") { try await b.client.send(.clipboard).newest != nil }
        let last = try #require(try await b.client.send(.clipboard).newest)
        #expect(try await b.client.send(.changeSettings(SettingsChange(clipboard: false))).clipboard == false)
        #expect(try await b.client.send(.clipboard) == ClipboardState(enabled: false, maximumSize: 4096))
        await expectFailure(.clipboardOff) { _ = try await b.client.send(.announceClipboard(ClipboardAnnouncement(items: Self.text))) }
        await expectFailure(.clipboardOff) { _ = try await b.client.fileStream(.pasteClipboard(last.id, type: "text/plain;charset=utf-8"), file: target, role: .receive) }
        #expect(try await b.client.send(.changeSettings(SettingsChange(clipboard: true))).clipboard == true)
        #expect(try await b.client.send(.clipboard) == ClipboardState(enabled: true, maximumSize: 4096))
        for d in [a, b] { try await d.finish() }
    }

    /// A file of another device's file list is pasted on its own stream, bounded by the size
    /// its device gives as it sends it, and by max_size here: larger, it is refused.
    @Test func aFileOfAFileListIsPastedWithinMaxSize() async throws {
        let (a, b) = try await ContinuationTests.pair(configureB: { $0.settings.clipboardMaxSize = 4096 })
        let dir = try TempDirectory.make(prefix: "handoff-clipboard")
        defer { TempDirectory.remove(dir) }
        let agent = try await Holder(a.client)
        try Data("a report".utf8).write(to: URL(fileURLWithPath: dir + "/report.txt"))
        try Data(repeating: 7, count: 5000).write(to: URL(fileURLWithPath: dir + "/big.bin"))
        let copy = try #require(try await agent.announce(Self.files).local)
        try await waitUntil("B hears of A's file list") { try await b.client.send(.clipboard).newest?.id == copy.id }

        let target = try Self.file(dir + "/pasted", O_WRONLY | O_CREAT | O_TRUNC)
        defer { close(target) }
        for (index, name, fits) in [(0, "report.txt", true), (1, "big.bin", false)] {
            let pasting = Task { try await b.client.fileStream(.pasteClipboard(copy.id, type: ClipboardNotice.fileForm(index)), file: target, role: .receive) }
            let (streamID, copyID, type) = try await agent.nextPasteRequest()
            #expect(copyID == copy.id && type == ClipboardNotice.fileForm(index))
            let source = try Self.file(dir + "/" + name, O_RDONLY)
            defer { close(source) }
            let sending = Task { try await a.client.fileStream(.takeStream(streamID), file: source, role: .send).outcome() }
            if fits {
                #expect(try await pasting.value.outcome().state == .completed)
                #expect(try await sending.value.state == .completed)
                #expect(FileManager.default.contents(atPath: dir + "/pasted") == Data("a report".utf8))
            } else {
                let refused = await expectFailure(.notOffered) { _ = try await pasting.value }
                #expect(refused.contains("5000 bytes, over [clipboard] max_size here (4096)"), "\(refused)")
                #expect(try await sending.value.state == .failed)
            }
        }
        // An entry that is not a file there (its agent takes the stream and drops it, as it does
        // for a folder): refused as such.
        let pasting = Task { try await b.client.fileStream(.pasteClipboard(copy.id, type: ClipboardNotice.fileForm(2)), file: target, role: .receive) }
        let (streamID, _, _) = try await agent.nextPasteRequest()
        try await a.client.pipe(.takeStream(streamID)).close()
        let refused = await expectFailure(.streamRefused) { _ = try await pasting.value }
        #expect(refused.contains("entry 2 of the file list copied on desk is not a file there"), "\(refused)")
        for d in [a, b] { try await d.finish() }
    }

    /// A device that sends more than its copy's announced size gets no further than that size
    /// into the app pasting, also through a byte pipe (handoffctl printing to a terminal): the
    /// paste fails instead.
    @Test func aDeviceSendingMoreThanItsCopyHoldsFailsThePaste() async throws {
        let (a, b) = try await ContinuationTests.pair()
        let agent = try await Holder(a.client)
        let copy = try #require(try await agent.announce(Self.text).local)
        try await waitUntil("B hears of A's copy") { try await b.client.send(.clipboard).newest?.id == copy.id }

        let pasting = Task { try await b.client.pipe(.pasteClipboard(copy.id, type: "text/plain;charset=utf-8")) }
        let (streamID, _, _) = try await agent.nextPasteRequest()
        let sending = try await a.client.pipe(.takeStream(streamID))
        let pipe = try await pasting.value
        // 11 bytes announced; 64 KiB sent. The writes may fail once B cuts the stream.
        try? await sending.write(Array(repeating: UInt8(ascii: "x"), count: 64 * 1024))
        sending.finishWriting()
        let pasted = try await pipe.readToEnd()
        #expect(pasted.count <= 11)
        pipe.close()
        let outcome = try await b.client.send(.stream(pipe.id, waitForOutcome: true))
        #expect(outcome.state == .failed)
        #expect(outcome.error?.contains("more than the 11 bytes offered") == true, "\(String(describing: outcome.error))")
        sending.close()
        for d in [a, b] { try await d.finish() }
    }

    /// A copy made before the other device joined reaches it as its session opens; it runs out
    /// where it was made by that device's clock.
    @Test func aDeviceThatArrivesHearsTheCopyAndItRunsOut() async throws {
        let clock = ManualDaemonClock()
        let network = DiscoveryNetwork()
        let b = try await TestDaemon.start(network: network) { $0.clock = clock }
        _ = try await b.client.send(.createAccount(CreateAccountRequest(deviceName: "laptop")))
        let holder = try await Holder(b.client)
        let copy = try #require(try await holder.announce(Self.text).local)
        let a = try await TestDaemon.start(network: network)
        let updates = try await b.client.subscribe(.invite)
        let code = try #require(try await updates.next()?.invite?.code)
        _ = try await a.client.send(.joinAccount(JoinAccountRequest(code: code, deviceName: "desk")))
        try await waitUntil("A hears of B's copy made before it joined") { try await a.client.send(.clipboard).newest?.id == copy.id }
        // Two minutes later by B's clock, B gives it out no more; A forgets it by its own.
        clock.advance(seconds: 121)
        #expect(try await b.client.send(.clipboard) == ClipboardState(enabled: true, maximumSize: ClipboardSettings.defaultMaximumSize))
        let target = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(target) }
        let refused = await expectFailure(.noClipboard) {
            _ = try await a.client.fileStream(.pasteClipboard(copy.id, type: "text/plain;charset=utf-8"), file: target, role: .receive)
        }
        #expect(refused.contains("no longer on the clipboard there"), "\(refused)")
        for d in [a, b] { try await d.finish() }
    }

    /// A copy is given out only while the agent that holds its bytes is there: the holder
    /// leaving withdraws the copy it held (and only that one).
    @Test func aHolderLeavingWithdrawsTheCopyItHeld() {
        var board = ClipboardBoard(enabled: true)
        let (first, second) = (UUID(), UUID())
        _ = board.copied(Self.text, holder: first, now: Self.t0, settings: Self.settings)
        #expect(board.holderLeft(second, now: Self.t0.adding(seconds: 1), settings: Self.settings) == .nothing, "another holder's leaving")
        guard case .everyone(let withdrawal) = board.holderLeft(first, now: Self.t0.adding(seconds: 1), settings: Self.settings) else {
            Issue.record("the withdrawal is told")
            return
        }
        #expect(withdrawal.items.isEmpty && board.local == nil && board.newest == nil)
        #expect(board.holderLeft(first, now: Self.t0.adding(seconds: 2), settings: Self.settings) == .nothing, "nothing left to withdraw")
        // A copy that ran out is not withdrawn again.
        _ = board.copied(Self.text, holder: second, now: Self.t0, settings: Self.settings)
        #expect(board.holderLeft(second, now: Self.t0.adding(seconds: 120), settings: Self.settings) == .nothing)
    }

    /// Issue 54's paste that hung: A's agent stops (or starts anew) after a copy. Its copy is
    /// withdrawn on A and on B at once, so B offers nothing and a paste there is refused at once
    /// instead of waiting for an agent that is not there. A copy announced without a holder that
    /// is there is refused.
    @Test func aCopyWhoseAgentLeftIsWithdrawnEverywhere() async throws {
        let (a, b) = try await ContinuationTests.pair()
        let agent = try await Holder(a.client)
        let copy = try #require(try await agent.announce(Self.text).local)
        try await waitUntil("B hears of A's copy") { try await b.client.send(.clipboard).newest?.id == copy.id }

        agent.leave()
        try await waitUntil("A withdraws the copy its agent held") { try await a.client.send(.clipboard).local == nil }
        try await waitUntil("B forgets it") { try await b.client.send(.clipboard).newest == nil }
        let target = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(target) }
        await expectFailure(.noClipboard) { _ = try await b.client.fileStream(.pasteClipboard(copy.id, type: "text/plain;charset=utf-8"), file: target, role: .receive) }

        // The agent starts anew: a copy needs its new id; the old one, or none, is refused.
        let refused = await expectFailure(.invalidValue) {
            _ = try await a.client.send(.announceClipboard(ClipboardAnnouncement(items: Self.text, holder: agent.id)))
        }
        #expect(refused.contains("not connected any more"), "\(refused)")
        await expectFailure(.invalidValue) { _ = try await a.client.send(.announceClipboard(ClipboardAnnouncement(items: Self.text))) }
        let again = try await Holder(a.client)
        let next = try #require(try await again.announce(Self.text).local)
        try await waitUntil("B hears of the new copy") { try await b.client.send(.clipboard).newest?.id == next.id }
        again.leave()
        try await waitUntil("B forgets that one too") { try await b.client.send(.clipboard).newest == nil }
        for d in [a, b] { try await d.finish() }
    }

    /// The paste rendezvous has its own deadline (`Deadlines.clipboardTake`): A's agent is asked,
    /// on its holder stream alone, and does not take the stream; B's paste fails once A's
    /// deadline for its agent passes — here short, while every other deadline is the test's long
    /// one — saying who did not take it.
    @Test func aPasteTheAgentDoesNotTakeFailsAtTheClipboardsOwnDeadline() async throws {
        let (a, b) = try await ContinuationTests.pair(configureA: { $0.deadlines.clipboardTake = .milliseconds(200) })
        let agent = try await Holder(a.client)
        let copy = try #require(try await agent.announce(Self.text).local)
        try await waitUntil("B hears of A's copy") { try await b.client.send(.clipboard).newest?.id == copy.id }
        let target = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(target) }
        let pasting = Task { await expectFailure(.streamRefused) { _ = try await b.client.fileStream(.pasteClipboard(copy.id, type: "text/plain;charset=utf-8"), file: target, role: .receive) } }
        let (streamID, copyID, _) = try await agent.nextPasteRequest()
        #expect(copyID == copy.id)
        let message = await pasting.value
        #expect(message.contains("the desktop agent did not take the stream in time"), "\(message)")
        // A's record of the stream names the deadline it waited: the clipboard's, not an app's.
        let record = try await a.client.send(.stream(streamID, waitForOutcome: true))
        #expect(record.state == .failed && record.error == "the desktop agent did not take the stream within \(Duration.milliseconds(200))", "\(record)")
        for d in [a, b] { try await d.finish() }
    }

    /// Issue 54: an agent that announces 5 MiB and sends 10 bytes, then ends its side in order.
    /// The paste fails on the device pasting — through a pipe, into a file, and with `handoffctl
    /// clipboard paste` to standard output (nothing printed) or to a file (none made) — where it
    /// used to succeed with the 10 bytes.
    @Test func aCopyThatComesShortPastesNothing() async throws {
        let (a, b) = try await ContinuationTests.pair()
        let dir = try TempDirectory.make(prefix: "handoff-clipboard")
        defer { TempDirectory.remove(dir) }
        let agent = try await Holder(a.client)
        let announced = [ClipboardItem(type: "text/plain;charset=utf-8", size: 5 << 20)]
        let copy = try #require(try await agent.announce(announced).local)
        try await waitUntil("B hears of A's copy") { try await b.client.send(.clipboard).newest?.id == copy.id }
        /// A's agent answers the next paste with 10 bytes, and ends in order.
        func serveShort() async throws {
            let (streamID, _, _) = try await agent.nextPasteRequest()
            let pipe = try await a.client.pipe(.takeStream(streamID))
            try? await pipe.write(Array("ten bytes!".utf8))
            pipe.finishWriting()
            _ = try? await pipe.readToEnd()
            pipe.close()
        }

        let pasting = Task { try await b.client.pipe(.pasteClipboard(copy.id, type: "text/plain;charset=utf-8")) }
        try await serveShort()
        let pipe = try await pasting.value
        _ = try await pipe.readToEnd()
        pipe.close()
        let outcome = try await b.client.send(.stream(pipe.id, waitForOutcome: true))
        #expect(outcome.state == .failed, "\(outcome)")
        #expect(outcome.error?.contains("ended the stream after 10 of the 5242880 bytes offered") == true, "\(String(describing: outcome.error))")

        let target = try Self.file(dir + "/pasted", O_WRONLY | O_CREAT | O_TRUNC)
        defer { close(target) }
        let intoFile = Task { try await b.client.fileStream(.pasteClipboard(copy.id, type: "text/plain;charset=utf-8"), file: target, role: .receive).outcome() }
        try await serveShort()
        #expect(try await intoFile.value.state == .failed)

        let ctl = Subprocess.product("handoffctl")
        let toStandardOutput = Task { try await Subprocess.run(ctl, ["--socket", b.socketPath, "clipboard", "paste"]) }
        try await serveShort()
        let printed = try await toStandardOutput.value
        #expect(printed.status == 40 && printed.stdout.isEmpty, "\(printed)")
        let toFile = Task { try await Subprocess.run(ctl, ["--socket", b.socketPath, "clipboard", "paste", "--output", dir + "/out.txt"]) }
        try await serveShort()
        let written = try await toFile.value
        #expect(written.status == 40 && !FileManager.default.fileExists(atPath: dir + "/out.txt"), "\(written)")
        for d in [a, b] { try await d.finish() }
    }
}
