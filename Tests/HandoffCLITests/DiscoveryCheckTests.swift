import HandoffAPI
import HandoffModel
import Testing

@testable import handoffctl

/// `doctor`'s check of how this device finds the others (issue 54): a device that reaches its
/// peers only through the wide-area zone, or at the addresses in `peers`, is not told to set
/// `peers`.
@Suite struct DiscoveryCheckTests {
    static func peer(_ via: [String]) -> PeerInfo {
        PeerInfo(
            id: DeviceID(digest: Array(repeating: 7, count: 32)), name: "laptop", reachable: true, foundVia: via, addresses: [], activity: nil,
            lastSeen: nil, lastAdvert: nil, unreachableSince: nil
        )
    }

    static let zone = WideAreaStatus(domain: "handoff.example.net.", registering: true, registered: true)

    @Test(arguments: [
        ([["mdns"]], 0, false, Doctor.Check.Verdict.ok, "multicast DNS works: 1", false),
        ([["mdns", "wide-area"]], 0, true, .ok, "multicast DNS works: 1", false),
        ([], 3, false, .ok, "multicast DNS works: 3", false),
        ([["wide-area"]], 0, true, .ok, "1 found in the zone handoff.example.net.", false),
        ([["wide-area"]], 2, true, .ok, "1 found in the zone handoff.example.net.", false),
        ([["static"]], 0, false, .ok, "1 reached at the addresses in peers", false),
        ([], 2, true, .warning, "or in the zone handoff.example.net.", false),
        ([], 0, false, .warning, "through multicast DNS", true),
    ])
    func verdicts(via: [[String]], strangers: Int, wideArea: Bool, verdict: Doctor.Check.Verdict, says: String, suggestsPeers: Bool) {
        let check = Doctor.discoveryCheck(peers: via.map(Self.peer), strangers: strangers, wideArea: wideArea ? Self.zone : nil)
        #expect(check.verdict == verdict, "\(check)")
        #expect(check.message.contains(says), "\(check.message)")
        #expect((check.fix ?? "").contains("peers =") == suggestsPeers, "\(String(describing: check.fix))")
    }
}
