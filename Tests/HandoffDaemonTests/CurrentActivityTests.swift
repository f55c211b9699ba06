import DaemonCore
import Foundation
import HandoffAPI
import HandoffModel
import HandoffTestSupport
import Testing

/// `CurrentActivity`, the value that decides what is current (docs/apps.md, "The device's
/// current activity"), driven by tables: each step an event, and what it must change.
@Suite struct CurrentActivityTests {
    static let now = Timestamp(microsecondsSinceEpoch: 1_800_000_000_000_000)
    static let (appA, appB) = (UUID(), UUID())
    static let (noteID, viewID) = (UUID(), UUID())

    static func content(_ title: String, type: String = "org.example.note", streams: Bool = false, expires: Timestamp? = nil) -> ActivityContent {
        var content = ActivityContent(type: type, title: title, expirationDate: expires)
        content.supportsContinuationStreams = streams
        return content
    }

    static func window(_ registration: UUID, _ name: String, _ id: UUID?, _ title: String?) -> CurrentActivity.FocusedWindow {
        CurrentActivity.FocusedWindow(registration: registration, window: name, activity: id.flatMap { id in title.map { (id, content($0)) } })
    }

    /// What a step must do: nothing, make current (new or updated, from whom, titled), withdraw.
    enum Expect: Equatable {
        case nothing
        case became(title: String, update: Bool, source: CurrentActivity.Source)
        case withdrawn(LocalEvent.ResignReason, source: CurrentActivity.Source)
        case refused(APIErrorCode)
    }

    /// Runs `steps` from `start`, checking each; returns the value at the end.
    @discardableResult
    static func run(_ steps: [(CurrentActivity.Event, Expect)], from start: CurrentActivity = CurrentActivity(), at now: Timestamp = now) -> CurrentActivity {
        var value = start
        for (n, (event, expected)) in steps.enumerated() {
            let got: Expect
            do {
                let (next, change) = try value.next(event, now: now, deviceID: "dev", limits: ActivityLimits())
                value = next
                switch change {
                case .none: got = .nothing
                case .became(let activity, _, let update, let source): got = .became(title: activity.content.title, update: update, source: source)
                case .withdrawn(_, let reason, let source): got = .withdrawn(reason, source: source)
                }
            } catch {
                got = .refused(error.code.api ?? .internalError)
            }
            #expect(got == expected, "step \(n + 1): \(event)")
        }
        return value
    }

    @Test func aRequestSetsUpdatesAndWithdraws() throws {
        let end = Self.run([
            (.put(PutCurrentActivityRequest(content: Self.content("one"))), .became(title: "one", update: false, source: .request)),
            (.put(PutCurrentActivityRequest(content: Self.content("two"))), .became(title: "two", update: false, source: .request)),
            (.resign, .withdrawn(.resigned, source: .request)),
            (.resign, .nothing),
        ])
        #expect(end.activity == nil && end.source == nil)
    }

    @Test func anUpdateNamesTheCurrentIdAndKeepsItsType() throws {
        let (started, change) = try CurrentActivity().next(
            .put(PutCurrentActivityRequest(content: Self.content("one"))), now: Self.now, deviceID: nil, limits: ActivityLimits()
        )
        guard case .became(let made, _, _, _) = change else { throw TestFailure("not made current") }
        Self.run(
            [
                (.put(PutCurrentActivityRequest(id: made.id, content: Self.content("one, edited"))), .became(title: "one, edited", update: true, source: .request)),
                (.put(PutCurrentActivityRequest(id: UUID(), content: Self.content("stale"))), .refused(.activityChanged)),
                (.put(PutCurrentActivityRequest(id: made.id, content: Self.content("other", type: "org.example.other"))), .refused(.typeImmutable)),
            ], from: started)
    }

    /// A focus gives the windows the say; a request takes it back until the next focus.
    @Test func aFocusGivesTheWindowsTheSayAndARequestTakesItBack() {
        let end = Self.run([
            // Not focused yet: the windows do not decide.
            (.windows(Self.window(Self.appA, "w1", Self.noteID, "note"), focusChanged: false), .nothing),
            (.windows(Self.window(Self.appA, "w1", Self.noteID, "note"), focusChanged: true), .became(title: "note", update: false, source: .window(registration: Self.appA, window: "w1"))),
            // Another window changed: what is current is already this one's.
            (.windows(Self.window(Self.appA, "w1", Self.noteID, "note"), focusChanged: false), .nothing),
            // Its own activity changed.
            (.windows(Self.window(Self.appA, "w1", Self.noteID, "note, edited"), focusChanged: false), .became(title: "note, edited", update: true, source: .window(registration: Self.appA, window: "w1"))),
            // Another app's window took focus.
            (.windows(Self.window(Self.appB, "v", Self.viewID, "view"), focusChanged: true), .became(title: "view", update: false, source: .window(registration: Self.appB, window: "v"))),
            // A script's request: the windows no longer decide.
            (.put(PutCurrentActivityRequest(content: Self.content("script"))), .became(title: "script", update: false, source: .request)),
            (.windows(Self.window(Self.appB, "v", Self.viewID, "view, edited"), focusChanged: false), .nothing),
            (.windows(nil, focusChanged: false), .nothing),
            // Until the next focus.
            (.windows(Self.window(Self.appA, "w1", Self.noteID, "note"), focusChanged: true), .became(title: "note", update: false, source: .window(registration: Self.appA, window: "w1"))),
        ])
        #expect(end.windowsDecide && end.activity?.id == Self.noteID)
    }

    /// A focused window that shows nothing continuable withdraws a window's activity, never a
    /// request's; a resign by request leaves the windows the say.
    @Test func aWindowWithNothingWithdrawsOnlyAWindowsActivity() {
        Self.run([
            (.windows(Self.window(Self.appA, "w1", Self.noteID, "note"), focusChanged: true), .became(title: "note", update: false, source: .window(registration: Self.appA, window: "w1"))),
            (.windows(Self.window(Self.appA, "w2", nil, nil), focusChanged: true), .withdrawn(.resigned, source: .window(registration: Self.appA, window: "w2"))),
            (.windows(Self.window(Self.appA, "w2", nil, nil), focusChanged: true), .nothing),
            (.windows(Self.window(Self.appA, "w1", Self.noteID, "note"), focusChanged: true), .became(title: "note", update: false, source: .window(registration: Self.appA, window: "w1"))),
            // The app quit: no window has focus.
            (.windows(nil, focusChanged: false), .withdrawn(.resigned, source: .noFocusedWindow)),
            (.windows(Self.window(Self.appA, "w1", Self.noteID, "note"), focusChanged: false), .became(title: "note", update: false, source: .window(registration: Self.appA, window: "w1"))),
            (.resign, .withdrawn(.resigned, source: .request)),
            // Still the windows' say: the next change of the focused window is current again.
            (.windows(Self.window(Self.appA, "w1", Self.noteID, "note, edited"), focusChanged: false), .became(title: "note, edited", update: false, source: .window(registration: Self.appA, window: "w1"))),
        ])
        Self.run([
            (.put(PutCurrentActivityRequest(content: Self.content("script"))), .became(title: "script", update: false, source: .request)),
            (.windows(Self.window(Self.appA, "w2", nil, nil), focusChanged: true), .nothing),
        ])
    }

    @Test func anExpiryWithdrawsOnlyWhatExpired() throws {
        let soon = Self.now.adding(seconds: 60)
        let (started, _) = try CurrentActivity().next(
            .put(PutCurrentActivityRequest(content: Self.content("brief", expires: soon))), now: Self.now, deviceID: nil, limits: ActivityLimits()
        )
        Self.run([(.expire, .nothing)], from: started)
        let end = Self.run([(.expire, .withdrawn(.expired, source: .expiry)), (.expire, .nothing)], from: started, at: soon.adding(seconds: 1))
        #expect(end.activity == nil)
    }

    /// The streams' server left: the activity stays, without streams, still its setter's.
    @Test func streamsGoneUpdatesAndKeepsTheSource() throws {
        var content = Self.content("with streams", streams: true)
        let focused = CurrentActivity.FocusedWindow(registration: Self.appA, window: "w1", activity: (Self.noteID, content))
        let end = Self.run([
            (.windows(focused, focusChanged: true), .became(title: "with streams", update: false, source: .window(registration: Self.appA, window: "w1"))),
            (.stopOfferingStreams(UUID()), .nothing),
            (.stopOfferingStreams(Self.noteID), .became(title: "with streams", update: true, source: .streamsGone)),
            (.stopOfferingStreams(Self.noteID), .nothing),
        ])
        content.supportsContinuationStreams = false
        #expect(end.activity?.content == content && end.source == .window(registration: Self.appA, window: "w1"))
    }

    @Test func aRestoredActivityIsTheRestoresUntilReplaced() {
        let restored = Activity(content: Self.content("from disk"), createdAt: Self.now)
        #expect(CurrentActivity(restored: restored).source == .restore)
        #expect(CurrentActivity().source == nil)
        Self.run([(.resign, .withdrawn(.resigned, source: .request))], from: CurrentActivity(restored: restored))
    }

    /// What cannot be current changes nothing: the next value is not taken. A window's that
    /// cannot (`windowRefused`, after the refusal) still takes the focus, and its app's activity
    /// before it goes.
    @Test func anInvalidActivityIsRefused() {
        let huge = ActivityContent(type: "org.example.note", title: "big", userInfo: ["blob": .string(String(repeating: "x", count: 300_000))])
        let tooBig = CurrentActivity.FocusedWindow(registration: Self.appA, window: "w", activity: (UUID(), huge))
        let end = Self.run([
            (.put(PutCurrentActivityRequest(content: huge)), .refused(.payloadTooLarge)),
            (.windows(tooBig, focusChanged: true), .refused(.payloadTooLarge)),
            (.windowRefused(tooBig, focusChanged: true), .nothing),
            (.windows(Self.window(Self.appB, "v", Self.viewID, "view"), focusChanged: false), .became(title: "view", update: false, source: .window(registration: Self.appB, window: "v"))),
            (.windows(tooBig, focusChanged: true), .refused(.payloadTooLarge)),
            (.windowRefused(tooBig, focusChanged: true), .withdrawn(.resigned, source: .window(registration: Self.appA, window: "w"))),
        ])
        #expect(end.windowsDecide && end.activity == nil)
        Self.run([
            (.put(PutCurrentActivityRequest(content: Self.content("script"))), .became(title: "script", update: false, source: .request)),
            (.windowRefused(tooBig, focusChanged: true), .nothing),
        ])
    }
}
