#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffModel

/// How often a wrong recovery code may be tried on this device (docs/security.md, "Losing the key
/// holder"), as a value: five tries, then a wait that doubles with each wrong one — a minute, two,
/// four… at most a day — counted from the last wrong one. A right code starts over. Kept across
/// restarts (`AccountStore` saves it beside the account, and deletes it with the account). The
/// code's 128 bits are what protect the key; this keeps someone at a member's keyboard from
/// trying codes all night, and each try costs a key derivation of 128 MiB besides.
package struct RecoveryAttempts: Codable, Equatable, Sendable {
    package var failures = 0
    package var lastFailure: Timestamp?

    static let free = 5
    static let longestWaitSeconds: Int64 = 86_400

    package init() {}

    /// Seconds to wait before the next try may be made; nil: it may be made now.
    package func wait(now: Timestamp) -> Int64? {
        guard failures >= Self.free, let lastFailure else { return nil }
        let wait = min(Self.longestWaitSeconds, 60 << Int64(min(failures - Self.free, 20)))
        let waited = (now.microsecondsSinceEpoch - lastFailure.microsecondsSinceEpoch) / 1_000_000
        // A clock set back counts as no time waited.
        let left = wait - max(0, waited)
        return left > 0 ? left : nil
    }

    /// A last wrong code later than `now` (the clock was set back) counts as made now: the wait
    /// is then what it says. Returns whether anything changed.
    package mutating func settle(now: Timestamp) -> Bool {
        guard let lastFailure, lastFailure > now else { return false }
        self.lastFailure = now
        return true
    }

    package mutating func failed(now: Timestamp) {
        failures += 1
        lastFailure = now
    }

    /// Tries left before waits begin.
    package var freeLeft: Int { max(0, Self.free - failures) }
}
