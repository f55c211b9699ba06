import DaemonCore
import DaemonDiscovery
import HandoffAPI
import HandoffModel
import Synchronization

/// Which activities of the other devices may be shown as notifications (handoffd.toml
/// `[notifications]`): all, none, or all but some types.
package struct NotificationPolicy: Sendable, Equatable {
    package var enabled: Bool
    package var mutedTypes: Set<String>

    package init(enabled: Bool = true, mutedTypes: Set<String> = []) {
        self.enabled = enabled
        self.mutedTypes = mutedTypes
    }

    func allows(_ type: String) -> Bool { enabled && !mutedTypes.contains(type) }
}

/// What this device can continue from the others right now (`GET /v1/offers`): every
/// reachable device's unexpired current activity that a running app, a handler, a `.desktop` app
/// or (for a web page) the browser here would take — asked afresh each time, so an app installed
/// or started a moment ago counts.
package final class OfferFinder: Sendable {
    let directory: PeerDirectory
    let handover: Handover
    private let policy: Mutex<NotificationPolicy>
    /// Off: nothing is for a notification (the user continues only when they ask).
    let deviceSwitch: DeviceSwitch

    package init(directory: PeerDirectory, handover: Handover, policy: NotificationPolicy, deviceSwitch: DeviceSwitch) {
        self.deviceSwitch = deviceSwitch
        self.directory = directory
        self.handover = handover
        self.policy = Mutex(policy)
    }

    package func current(now: Timestamp = .now()) async -> OffersResponse {
        let rules = policy.withLock { $0 }
        let on = deviceSwitch.isOn
        var offers: [Offer] = []
        // Asked once per kind of activity: each answer reads the installed .desktop files.
        var targets: [String: ContinueTarget?] = [:]
        for peer in await directory.all() where peer.reachable {
            guard let activity = peer.activity, activity.expirationDate.map({ $0 > now }) ?? true else { continue }
            let key = activity.type + (activity.hasWebpage ? " web" : "")
            if targets[key] == nil { targets[key] = .some(await handover.target(for: activity.type, hasWebpage: activity.hasWebpage)) }
            guard let target = targets[key] ?? nil else { continue }
            offers.append(Offer(peer: LocalEvent.PeerRef(id: peer.id, name: peer.name), activity: activity, target: target, notify: on && rules.allows(activity.type)))
        }
        return OffersResponse(offers: offers)
    }

    /// From a reloaded configuration (SIGHUP).
    package func replace(policy new: NotificationPolicy) {
        policy.withLock { $0 = new }
    }
}
