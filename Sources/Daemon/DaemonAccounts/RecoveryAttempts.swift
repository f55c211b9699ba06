#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffModel

/// How often a wrong recovery code may be tried on this device (docs/security.md, "Losing the key
/// holder"), as a value: five tries, then a wait that doubles with each wrong one — a minute, two,
/// four… at most a day — counted from the last wrong one. A right code starts over. Kept across
/// restarts (`AccountStore` saves it beside the account). Each try already costs a key derivation
/// of 128 MiB; this is what stops someone at the keyboard from trying codes all night.
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

    package mutating func failed(now: Timestamp) {
        failures += 1
        lastFailure = now
    }

    /// Tries left before waits begin.
    package var freeLeft: Int { max(0, Self.free - failures) }
}
