import DesktopAgent
import DesktopClipboard
import DesktopNotifications
import Foundation
import HandoffAPI
import HandoffModel
import Testing

/// Where the session's clipboard is out of reach, another device's copy is a notification
/// (`ClipboardNotePlan`): one for the newest copy from another device, replaced, closed, chosen.
@Suite struct ClipboardNotePlanTests {
    static let t0 = Timestamp(microsecondsSinceEpoch: 1_800_000_000_000_000)
    static let desk = LocalEvent.PeerRef(id: DeviceID(digest: Array(repeating: 1, count: 32)), name: "desk")

    static func copy(from peer: LocalEvent.PeerRef?, lasting seconds: Int64 = 120) -> ClipboardCopy {
        ClipboardCopy(
            id: UUID(), items: [ClipboardItem(type: "text/plain;charset=utf-8", size: 11)], copiedAt: t0, expiresAt: t0.adding(seconds: seconds),
            peer: peer
        )
    }

    static func state(_ newest: ClipboardCopy?, enabled: Bool = true) -> ClipboardState {
        ClipboardState(enabled: enabled, newest: newest, local: newest?.peer == nil ? newest : nil, maximumSize: 1 << 20)
    }

    @Test func aCopyFromAnotherDeviceIsOneNotificationReplacedThenClosed() {
        var plan = ClipboardNotePlan()
        let first = Self.copy(from: Self.desk)
        #expect(plan.changed(Self.state(first), now: Self.t0) == .show(first, replacing: nil))
        plan.shown(7, for: first.id)
        #expect(plan.changed(Self.state(first), now: Self.t0) == .nothing, "the same copy again changes nothing")
        let second = Self.copy(from: Self.desk)
        #expect(plan.changed(Self.state(second), now: Self.t0) == .show(second, replacing: 7))
        plan.shown(8, for: second.id)
        // A copy made here is pasted here as usual: the notification goes.
        #expect(plan.changed(Self.state(Self.copy(from: nil)), now: Self.t0) == .close(8))
        #expect(plan.changed(Self.state(nil), now: Self.t0) == .nothing)
    }

    @Test func offWithdrawnOrRunOutClosesIt() {
        for end in ["off", "withdrawn", "run out"] {
            var plan = ClipboardNotePlan()
            let copy = Self.copy(from: Self.desk, lasting: 120)
            _ = plan.changed(Self.state(copy), now: Self.t0)
            plan.shown(3, for: copy.id)
            switch end {
            case "off": #expect(plan.changed(Self.state(copy, enabled: false), now: Self.t0) == .close(3))
            case "withdrawn": #expect(plan.changed(Self.state(nil), now: Self.t0) == .close(3))
            default:
                #expect(plan.tick(now: Self.t0.adding(seconds: 119)) == .nothing)
                #expect(plan.tick(now: Self.t0.adding(seconds: 120)) == .close(3))
            }
            #expect(plan.copy == nil && plan.note == nil, "\(end)")
        }
        // A copy that ran out before it was heard of is not shown.
        var plan = ClipboardNotePlan()
        #expect(plan.changed(Self.state(Self.copy(from: Self.desk, lasting: 1)), now: Self.t0.adding(seconds: 2)) == .nothing)
    }

    @Test func choosingItGivesTheCopyOnceAndOnlyForItsNotification() {
        var plan = ClipboardNotePlan()
        let copy = Self.copy(from: Self.desk)
        _ = plan.changed(Self.state(copy), now: Self.t0)
        #expect(plan.chosen(5) == nil, "not shown yet")
        plan.shown(5, for: copy.id)
        #expect(plan.chosen(4) == nil, "another notification")
        #expect(plan.chosen(5) == copy)
        #expect(plan.chosen(5) == nil, "once")
        // Closed by the user: nothing to close later.
        let next = Self.copy(from: Self.desk)
        _ = plan.changed(Self.state(next), now: Self.t0)
        plan.shown(6, for: next.id)
        plan.closed(6)
        #expect(plan.changed(Self.state(nil), now: Self.t0) == .nothing)
    }

    @Test func theFileIsNamedForTheDeviceAndKind() {
        #expect(ClipboardNotes.fileName(for: "image/png", from: "desk") == "Clipboard from desk.png")
        #expect(ClipboardNotes.fileName(for: "text/plain;charset=utf-8", from: "Ana's laptop") == "Clipboard from Ana's laptop.txt")
        #expect(ClipboardNotes.fileName(for: "image/jpeg", from: "../x/y\n") == "Clipboard from ..-x-y-.jpg")
    }
}
