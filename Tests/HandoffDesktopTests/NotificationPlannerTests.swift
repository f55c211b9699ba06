import DesktopAgent
import DesktopNotifications
import Foundation
import HandoffAPI
import HandoffModel
import Testing

/// `NotificationPlanner`: what the desktop shows, replaces, withdraws and continues, with the
/// time given — one notification per device, at most one new one per device per 5 s (the latest
/// wins), nothing again for an activity the user dismissed or continued.
@Suite(.timeLimit(.minutes(1))) struct NotificationPlannerTests {
    static let desk = DeviceID(digest: [UInt8](repeating: 1, count: DeviceID.digestLength))
    static let laptop = DeviceID(digest: [UInt8](repeating: 2, count: DeviceID.digestLength))
    static let t0 = Timestamp(secondsSinceEpoch: 1_800_000_000)

    static func offer(_ device: DeviceID, _ title: String, id: UUID = UUID(), notify: Bool = true, expires: Timestamp? = nil) -> Offer {
        Offer(
            peer: LocalEvent.PeerRef(id: device, name: device == desk ? "desk" : "laptop"),
            activity: ActivitySummary(id: id, type: "org.example.editor.edit", title: title, updatedAt: t0, expirationDate: expires),
            target: ContinueTarget(kind: .handler, handler: "org.example.Editor.desktop", name: "Editor"), notify: notify
        )
    }

    static func at(_ seconds: Double) -> Timestamp { t0.adding(microseconds: Int64(seconds * 1_000_000)) }

    @Test func anOfferIsShownReplacedWhenItChangesAndWithdrawnWhenItGoes() {
        var planner = NotificationPlanner()
        let report = Self.offer(Self.desk, "Report")
        #expect(planner.offers([report], now: Self.at(0)) == [.show(report, replacing: nil)])
        planner.shown(device: Self.desk, id: 7)
        // The same activity, only updated: nothing new to say.
        var touched = report
        touched.activity.updatedAt = Self.at(1)
        #expect(planner.offers([touched], now: Self.at(6)).isEmpty)
        // Another activity of the same device replaces the notification.
        let notes = Self.offer(Self.desk, "Notes")
        #expect(planner.offers([notes], now: Self.at(7)) == [.show(notes, replacing: 7)])
        planner.shown(device: Self.desk, id: 8)
        // Resigned (or unreachable: no longer offered): withdrawn at once.
        #expect(planner.offers([], now: Self.at(7.5)) == [.close(8)])
        #expect(planner.nextDeadline == nil)
    }

    @Test func aDeviceGetsOneNewNotificationPerFiveSecondsAndTheLatestWins() {
        var planner = NotificationPlanner()
        let first = Self.offer(Self.desk, "One")
        #expect(planner.offers([first], now: Self.at(0)) == [.show(first, replacing: nil)])
        planner.shown(device: Self.desk, id: 1)
        let second = Self.offer(Self.desk, "Two")
        let third = Self.offer(Self.desk, "Three")
        #expect(planner.offers([second], now: Self.at(1)).isEmpty)
        #expect(planner.offers([third], now: Self.at(2)).isEmpty)
        #expect(planner.nextDeadline == Self.at(5))
        // Another device is not held back by this one.
        let other = Self.offer(Self.laptop, "Elsewhere")
        #expect(planner.offers([third, other], now: Self.at(3)) == [.show(other, replacing: nil)])
        planner.shown(device: Self.laptop, id: 2)
        #expect(planner.tick(now: Self.at(4.9)).isEmpty)
        #expect(planner.tick(now: Self.at(5)) == [.show(third, replacing: 1)])
        #expect(planner.nextDeadline == nil)
    }

    @Test func whatTheUserContinuedOrDismissedIsNotShownAgainUntilTheDeviceMovesOn() {
        var planner = NotificationPlanner()
        let report = Self.offer(Self.desk, "Report")
        _ = planner.offers([report], now: Self.at(0))
        planner.shown(device: Self.desk, id: 3)
        #expect(planner.invoked(id: 3) == [.close(3), .continueActivity(report)])
        #expect(planner.invoked(id: 3).isEmpty)  // a second click on the same one does nothing
        #expect(planner.offers([report], now: Self.at(10)).isEmpty)
        let notes = Self.offer(Self.desk, "Notes")
        #expect(planner.offers([notes], now: Self.at(11)) == [.show(notes, replacing: nil)])
        planner.shown(device: Self.desk, id: 4)
        planner.closed(id: 4, byUser: true)
        #expect(planner.offers([notes], now: Self.at(20)).isEmpty)
        // Closed by us or by the server going away: shown again at the next look.
        let article = Self.offer(Self.desk, "Article")
        _ = planner.offers([article], now: Self.at(30))
        planner.shown(device: Self.desk, id: 5)
        planner.closed(id: 5, byUser: false)
        #expect(planner.offers([article], now: Self.at(40)) == [.show(article, replacing: nil)])
    }

    /// Dismissing the old notification does not hold back the newer activity already waiting for
    /// its spacing; and a device away for a moment does not bring back what was dismissed.
    @Test func aDismissalCountsForItsActivityOnly() {
        var planner = NotificationPlanner()
        let first = Self.offer(Self.desk, "One")
        _ = planner.offers([first], now: Self.at(0))
        planner.shown(device: Self.desk, id: 1)
        let second = Self.offer(Self.desk, "Two")
        #expect(planner.offers([second], now: Self.at(1)).isEmpty)
        planner.closed(id: 1, byUser: true)
        #expect(planner.tick(now: Self.at(5)) == [.show(second, replacing: nil)])
        planner.shown(device: Self.desk, id: 2)
        planner.closed(id: 2, byUser: true)
        // desk unreachable for a moment, then back with the same activity: still dismissed.
        #expect(planner.offers([], now: Self.at(20)).isEmpty)
        #expect(planner.offers([second], now: Self.at(21)).isEmpty)
    }

    /// A notification server that restarted knows none of our ids: what is offered is shown anew.
    @Test func aNewNotificationServerShowsEverythingAnew() {
        var planner = NotificationPlanner()
        let report = Self.offer(Self.desk, "Report")
        _ = planner.offers([report], now: Self.at(0))
        planner.shown(device: Self.desk, id: 1)
        #expect(planner.shownIDs == [1])
        #expect(planner.serverChanged(now: Self.at(1)) == [.show(report, replacing: nil)])
    }

    @Test func mutedAndExpiredActivitiesAreNotShownAndAnExpiryWithdraws() {
        var planner = NotificationPlanner()
        #expect(planner.offers([Self.offer(Self.desk, "Muted", notify: false)], now: Self.at(0)).isEmpty)
        #expect(planner.offers([Self.offer(Self.desk, "Gone", expires: Self.at(0))], now: Self.at(1)).isEmpty)
        let soon = Self.offer(Self.desk, "Soon", expires: Self.at(60))
        #expect(planner.offers([soon], now: Self.at(2)) == [.show(soon, replacing: nil)])
        planner.shown(device: Self.desk, id: 9)
        #expect(planner.nextDeadline == Self.at(60))
        #expect(planner.tick(now: Self.at(60)) == [.close(9)])
        #expect(planner.nextDeadline == nil)
    }

    @Test func aNotificationTheServerDidNotShowIsTriedAgain() {
        var planner = NotificationPlanner()
        let report = Self.offer(Self.desk, "Report")
        _ = planner.offers([report], now: Self.at(0))
        planner.notShown(device: Self.desk)
        #expect(planner.nextDeadline == Self.at(5))
        #expect(planner.tick(now: Self.at(5)) == [.show(report, replacing: nil)])
    }

    @Test func theTextSaysWhatWhereAndWithWhatAndEscapesMarkup() {
        var offer = Self.offer(Self.desk, "Q&A <draft>")
        offer.target.name = "Editor & Co"
        let note = Note.offer(offer, capabilities: ["actions", "body-markup"])
        #expect(note.summary == "Continue “Q&A <draft>” from desk")
        #expect(note.body == "Opens in Editor &amp; Co")
        #expect(note.actions.map { $0.key } == ["default", "continue"])
        // A server without actions: the command does the same.
        let plain = Note.offer(offer, capabilities: [])
        #expect(plain.actions.isEmpty && plain.body == "Opens in Editor & Co\nhandoffctl continue desk")
    }
}
