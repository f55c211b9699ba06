import HandoffModel
import Testing
@testable import DaemonSessions

/// The session tie-break (`SessionSlots`) by tables: both devices of a crossed dial keep the same
/// connection, a reconnect replaces a stale session, and an ended session frees only its own slot.
@Suite struct SessionSlotsTests {
    final class Session {
        let name: String
        init(_ name: String) { self.name = name }
    }

    static let ids = [DeviceID(digest: Array(repeating: 0x00, count: 32)), DeviceID(digest: Array(repeating: 0xFF, count: 32))].sorted()
    static let small = ids[0]
    static let large = ids[1]

    /// What a verdict says, by session name.
    static func said(_ verdict: SessionSlots<Session>.Verdict) -> String {
        switch verdict {
        case .keep: "keep"
        case .keepClosing(let old): "keep, close \(old.name)"
        case .refuse: "refuse"
        }
    }

    struct Row: Sendable, CustomTestStringConvertible {
        /// This device is the one with the smaller id.
        let weAreSmaller: Bool
        /// Sessions coming up in order: (name, dialled by us).
        let ups: [(String, Bool)]
        let verdicts: [String]
        let kept: String
        var testDescription: String { "\(weAreSmaller ? "smaller" : "larger") id: \(ups.map { "\($0.0)\($0.1 ? "(ours)" : "(theirs)")" })" }
    }

    static let rows: [Row] = [
        // One session: kept, whoever dialled.
        Row(weAreSmaller: true, ups: [("a", true)], verdicts: ["keep"], kept: "a"),
        Row(weAreSmaller: false, ups: [("a", false)], verdicts: ["keep"], kept: "a"),
        // Crossed dials, seen from the smaller id: its own dial wins, in either order.
        Row(weAreSmaller: true, ups: [("ours", true), ("theirs", false)], verdicts: ["keep", "refuse"], kept: "ours"),
        Row(weAreSmaller: true, ups: [("theirs", false), ("ours", true)], verdicts: ["keep", "keep, close theirs"], kept: "ours"),
        // …and from the larger id: the other's dial wins, in either order.
        Row(weAreSmaller: false, ups: [("ours", true), ("theirs", false)], verdicts: ["keep", "keep, close ours"], kept: "theirs"),
        Row(weAreSmaller: false, ups: [("theirs", false), ("ours", true)], verdicts: ["keep", "refuse"], kept: "theirs"),
        // A reconnect of the same kind replaces the session it follows (that one is stale).
        Row(weAreSmaller: true, ups: [("old", true), ("new", true)], verdicts: ["keep", "keep, close old"], kept: "new"),
        Row(weAreSmaller: false, ups: [("old", false), ("new", false)], verdicts: ["keep", "keep, close old"], kept: "new"),
    ]

    @Test(arguments: rows) func crossedDialsKeepTheSmallerIDsDial(row: Row) {
        let (me, peer) = row.weAreSmaller ? (Self.small, Self.large) : (Self.large, Self.small)
        var slots = SessionSlots<Session>()
        let verdicts = row.ups.map { name, ours in Self.said(slots.up(Session(name), peer: peer, dialledByUs: ours, me: me)) }
        #expect(verdicts == row.verdicts)
        #expect(slots.sessions[peer]?.name == row.kept)
    }

    /// Both ends of one crossed dial, each deciding alone, keep the same connection.
    @Test func bothEndsAgree() {
        var atSmall = SessionSlots<Session>()
        var atLarge = SessionSlots<Session>()
        // Connection 1 was dialled by the small device, connection 2 by the large one; each end
        // sees them come up in a different order.
        _ = atSmall.up(Session("2"), peer: Self.large, dialledByUs: false, me: Self.small)
        _ = atSmall.up(Session("1"), peer: Self.large, dialledByUs: true, me: Self.small)
        _ = atLarge.up(Session("1"), peer: Self.small, dialledByUs: false, me: Self.large)
        _ = atLarge.up(Session("2"), peer: Self.small, dialledByUs: true, me: Self.large)
        #expect(atSmall.sessions[Self.large]?.name == "1")
        #expect(atLarge.sessions[Self.small]?.name == "1")
    }

    @Test func anEndedSessionFreesOnlyItsOwnSlot() {
        var slots = SessionSlots<Session>()
        let loser = Session("loser")
        let winner = Session("winner")
        _ = slots.up(loser, peer: Self.large, dialledByUs: false, me: Self.small)
        _ = slots.up(winner, peer: Self.large, dialledByUs: true, me: Self.small)
        slots.down(loser, peer: Self.large)  // the replaced session's task ends later
        #expect(slots.sessions[Self.large] === winner)
        slots.down(winner, peer: Self.large)
        #expect(slots.sessions.isEmpty)
    }

    @Test func theSmallerIdsDialIsTheOneKept() {
        #expect(SessionSlots<Session>.wePreferToDial(me: Self.small, peer: Self.large))
        #expect(!SessionSlots<Session>.wePreferToDial(me: Self.large, peer: Self.small))
        #expect(SessionSlots<Session>.wePreferToDial(me: nil, peer: Self.small))
    }

    @Test func removingGivesBackTheSessionsToClose() {
        var slots = SessionSlots<Session>()
        _ = slots.up(Session("a"), peer: Self.large, dialledByUs: true, me: Self.small)
        _ = slots.up(Session("b"), peer: Self.small, dialledByUs: true, me: Self.large)
        #expect(slots.remove(Self.large)?.name == "a")
        #expect(slots.remove(Self.large) == nil)
        #expect(slots.removeAll().map(\.name) == ["b"])
        #expect(slots.sessions.isEmpty)
    }
}
