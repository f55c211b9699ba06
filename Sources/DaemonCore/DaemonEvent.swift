#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffModel

/// What one feature tells the others. Features below do not know the ones above them, so they
/// announce, and the composition root (`HandoffDaemon`) routes each event in one `switch`.
package enum DaemonEvent: Sendable {
    /// An activity went to a device that asked for it: that device may open the activity's
    /// continuation streams.
    case activityGiven(to: DeviceID, activityID: UUID)
}
