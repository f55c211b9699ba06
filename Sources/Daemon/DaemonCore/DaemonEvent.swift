#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffModel

/// What one feature tells the others. Features below do not know the ones above them, so they
/// announce, and the composition root (`HandoffDaemon`) routes each event in one `switch`.
package enum DaemonEvent: Sendable {
    /// The current activity changed (became current, updated, withdrawn, expired), or was
    /// restored at start: apps, grants, peers and the advert follow it.
    case currentActivityChanged(Activity?)
    /// The account changed (created, joined, left, a newer state): what discovery saw may read
    /// differently now, and the advert is sealed with other keys.
    case accountChanged
    /// Discovery started, stopped, or lost or found avahi-daemon again: what the daemon says of
    /// itself (systemd's STATUS) follows.
    case discoveryStateChanged
    /// The pending invites changed: the advert carries the newest open one's join tag.
    case invitesChanged
    /// An advert sealed by a device of the account was seen: a session with it is worth having.
    /// `fresh`: the advert is new to us (the device started, came back, or moved), so it is
    /// worth dialling at once even if dials failed a moment ago.
    case memberSighted(DeviceID, fresh: Bool)
    /// An activity went to a device that asked for it: that device may open the activity's
    /// continuation streams.
    case activityGiven(to: DeviceID, activityID: UUID)
    /// The device's settings changed (`DeviceSwitch`): with handoff off, nothing is told to or
    /// asked of the other devices; on again, they hear of this one at once.
    case settingsChanged(DeviceSettings)
    /// How many devices nearby are inviting changed (counted while this device has no account).
    case invitingNearbyChanged
}

/// How a feature announces (`DaemonEvent`): synchronously, from any isolation; what follows an
/// event is the composition root's to start.
package typealias Announce = @Sendable (DaemonEvent) -> Void
