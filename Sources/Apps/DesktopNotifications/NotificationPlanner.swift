#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffModel

/// Which notifications the desktop shows for the other devices' activities (docs/desktop.md),
/// as a value: events in, actions out, time given by the caller. One notification per device,
/// replaced when that device's activity changes, withdrawn when it is resigned, expires or the
/// device becomes unreachable (it is then no longer offered), and at most one new one per device
/// per `spacing` — a device that changes faster is shown its latest activity when the time comes.
/// What the user dismissed or continued is not shown again until the device moves on.
package struct NotificationPlanner: Sendable {
    package enum Action: Equatable, Sendable {
        /// Show `offer` (in place of notification `replacing`); answer with `shown(device:id:)`.
        case show(Offer, replacing: UInt32?)
        case close(UInt32)
        /// The user asked for it: continue exactly this activity.
        case continueActivity(Offer)
    }

    package static let spacing: Int64 = 5_000_000

    private struct Showing {
        var offer: Offer
        /// The server's id, once it answered.
        var id: UInt32?
    }

    private var showing: [DeviceID: Showing] = [:]
    /// What waits for its device's spacing to pass.
    private var waiting: [DeviceID: Offer] = [:]
    private var lastShown: [DeviceID: Timestamp] = [:]
    /// The activity the user dismissed or continued, per device: not shown again while it is
    /// that device's activity — also across the device being away for a while.
    private var settled: [DeviceID: UUID] = [:]
    private var latest: [DeviceID: Offer] = [:]

    package init() {}

    /// What is offered now (`GET /v1/offers`), at `now`.
    package mutating func offers(_ offers: [Offer], now: Timestamp) -> [Action] {
        latest = [:]
        for offer in offers where offer.notify && !(offer.activity.expirationDate.map { $0 <= now } ?? false) {
            latest[offer.peer.id] = offer
        }
        for (device, activity) in settled where latest[device].map({ $0.activity.id != activity }) ?? false { settled[device] = nil }
        return reconcile(now: now)
    }

    /// Time passed (a spacing ended, an activity expired).
    package mutating func tick(now: Timestamp) -> [Action] {
        latest = latest.filter { !($0.value.activity.expirationDate.map { $0 <= now } ?? false) }
        return reconcile(now: now)
    }

    /// The server showed the notification for `device` as `id`.
    package mutating func shown(device: DeviceID, id: UInt32) {
        showing[device]?.id = id
    }

    /// The server could not show it: it is tried again when the device's spacing ends.
    package mutating func notShown(device: DeviceID) {
        showing[device] = nil
        if let offer = latest[device] { waiting[device] = offer }
    }

    /// Another notification server took over (or the same one restarted): the ids we had mean
    /// nothing now, so everything offered is shown anew.
    package mutating func serverChanged(now: Timestamp) -> [Action] {
        showing = [:]
        waiting = [:]
        lastShown = [:]
        return reconcile(now: now)
    }

    /// The ids of what is shown (to close when the agent stops).
    package var shownIDs: [UInt32] { showing.values.compactMap(\.id) }

    /// The user chose the notification (its action or its body).
    package mutating func invoked(id: UInt32) -> [Action] {
        guard let (device, entry) = showing.first(where: { $0.value.id == id }) else { return [] }
        showing[device] = nil
        settled[device] = entry.offer.activity.id
        return [.close(id), .continueActivity(entry.offer)]
    }

    /// The notification went: `byUser` (dismissed, or expired on the server) means not again for
    /// this activity; otherwise (we closed it, or the server went) nothing more is needed.
    package mutating func closed(id: UInt32, byUser: Bool) {
        guard let (device, entry) = showing.first(where: { $0.value.id == id }) else { return }
        showing[device] = nil
        if byUser { settled[device] = entry.offer.activity.id }
    }

    /// When `tick` has something to do next; nil: nothing until the next event.
    package var nextDeadline: Timestamp? {
        let spacings = waiting.keys.compactMap { lastShown[$0]?.adding(microseconds: Self.spacing) }
        let expiries = latest.values.compactMap(\.activity.expirationDate)
        return (spacings + expiries).min()
    }

    /// Whether the device's offered activity is one the user dismissed or continued.
    private func isSettled(_ device: DeviceID) -> Bool {
        settled[device].map { $0 == latest[device]?.activity.id } ?? false
    }

    private mutating func reconcile(now: Timestamp) -> [Action] {
        var actions: [Action] = []
        for (device, entry) in showing where latest[device] == nil || isSettled(device) {
            showing[device] = nil
            if let id = entry.id { actions.append(.close(id)) }
        }
        waiting = waiting.filter { latest[$0.key] != nil && !isSettled($0.key) }
        for (device, offer) in latest.sorted(by: { $0.key < $1.key }) where !isSettled(device) {
            guard showing[device].map({ !Self.sameNotification($0.offer, offer) }) ?? true else {
                waiting[device] = nil
                continue
            }
            if let last = lastShown[device], now < last.adding(microseconds: Self.spacing) {
                waiting[device] = offer
                continue
            }
            waiting[device] = nil
            lastShown[device] = now
            let replacing = showing[device]?.id
            showing[device] = Showing(offer: offer, id: nil)
            actions.append(.show(offer, replacing: replacing))
        }
        return actions
    }

    /// Whether a notification already says all of `new` (a newer `updatedAt` alone changes nothing
    /// the user sees).
    static func sameNotification(_ old: Offer, _ new: Offer) -> Bool {
        old.activity.id == new.activity.id && old.activity.title == new.activity.title && old.target == new.target
    }
}
