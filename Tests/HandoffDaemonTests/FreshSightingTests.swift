import HandoffDiscovery
import HandoffModel
import Testing
@testable import DaemonDiscovery

/// Which sightings of a member are news (`PeerDirectory.isFresh`): news is dialled at once,
/// whatever backoff is under way (`DialPlan`), so a sighting that only reorders or drops
/// addresses must not count.
@Suite struct FreshSightingTests {
    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let before: (host: String, port: Int, addresses: [String])?
        let after: (host: String, port: Int, addresses: [String])
        let fresh: Bool
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "an instance not seen before", before: nil, after: ("alpha.local.", 4700, ["10.0.0.1"]), fresh: true),
        Row(name: "the same again", before: ("alpha.local.", 4700, ["10.0.0.1"]), after: ("alpha.local.", 4700, ["10.0.0.1"]), fresh: false),
        Row(name: "its first address found", before: ("alpha.local.", 4700, []), after: ("alpha.local.", 4700, ["10.0.0.1"]), fresh: true),
        Row(
            name: "an address added", before: ("alpha.local.", 4700, ["10.0.0.1"]), after: ("alpha.local.", 4700, ["10.0.0.1", "fe80::1%2"]), fresh: true
        ),
        Row(
            name: "the same addresses in another order", before: ("alpha.local.", 4700, ["10.0.0.1", "fe80::1%2"]),
            after: ("alpha.local.", 4700, ["fe80::1%2", "10.0.0.1"]), fresh: false
        ),
        Row(name: "an address dropped", before: ("alpha.local.", 4700, ["10.0.0.1", "fe80::1%2"]), after: ("alpha.local.", 4700, ["10.0.0.1"]), fresh: false),
        Row(name: "moved to another address", before: ("alpha.local.", 4700, ["10.0.0.1"]), after: ("alpha.local.", 4700, ["10.0.0.2"]), fresh: true),
        Row(name: "another port (it restarted)", before: ("alpha.local.", 4700, ["10.0.0.1"]), after: ("alpha.local.", 4701, ["10.0.0.1"]), fresh: true),
        Row(name: "another host name", before: ("alpha.local.", 4700, ["10.0.0.1"]), after: ("alpha-2.local.", 4700, ["10.0.0.1"]), fresh: true),
    ]

    @Test(arguments: rows)
    func fresh(_ row: Row) {
        let instance = ServiceInstance(name: "x", domain: "local.")
        let sighting = Sighting(instance: instance, txt: TXTRecord([]), host: row.after.host, port: row.after.port, addresses: row.after.addresses, source: .mdns)
        let before = row.before.map { PeerDirectory.Sighted(source: .mdns, host: $0.host, port: $0.port, addresses: $0.addresses, at: .now()) }
        #expect(PeerDirectory.isFresh(sighting, after: before) == row.fresh)
    }
}
