import Foundation
import HandoffAPI
import HandoffModel
import HandoffTestSupport
import Testing

/// Nothing the network does ends handoffd. A path that goes dark — a rule or route that drops
/// (`blackhole`), refuses (`prohibit`) or has no way (`unreachable`), as VPN kill-switches and
/// network managers install them — ends the session when the kernel's keepalive gives up: the
/// devices list each other unreachable, and reach each other again once the path heals. Seen: an
/// IPv6 session expiring under a blackhole rule killed both daemons (Linux reports that expiry as
/// EINVAL, which SwiftNIO takes for a bug of its own; docs/platform.md).
/// The two links of the second test run at once, in its one slot: both mostly wait for the
/// kernel's keepalive, each on simulated hosts of its own.
@Suite(.heavy, .timeLimit(.minutes(5))) struct LivenessTests {
    /// Both families on the link: IPv4 goes dark and the session moves to IPv6; then IPv6 does.
    @Test func aDualStackLinkGoingDarkFamilyByFamily() async throws {
        await Rig.withHosts(["alpha", "bravo"], family: .dual) { rig in
            let ids = try await EndToEndTests().startPaired(rig)
            try await Self.waitForReach(rig, ids, true, "after pairing")
            // Addresses are dialled IPv4 first; two crossed dials settle on one session.
            try await Rig.waitFor("one session, on IPv4") {
                let first = try await Self.sessionAddresses(rig, "bravo")
                return first.count == 1 && first[0].hasPrefix("169.254.")
            }

            try await Self.cut(rig, "-4", "blackhole")
            // The IPv4 session ends (keepalive) and one over IPv6 takes its place, often before a
            // look at `peers` could see the device unreachable: the sockets tell.
            try await Rig.waitFor("the session to move to IPv6", seconds: 60) {
                let now = try await Self.sessionAddresses(rig, "bravo")
                return now.count == 1 && now[0].hasPrefix("[fe80:")
            }
            try await Self.waitForReach(rig, ids, true, "over IPv6, IPv4 still dark")

            try await Self.cut(rig, "-6", "blackhole")
            try await Self.waitForReach(rig, ids, false, "with both families dark")
            try await Self.heal(rig, "-6")
            try await Self.heal(rig, "-4")
            try await Self.waitForReach(rig, ids, true, "after the heal")
        }
    }

    /// One family on the link, dark in each of the three ways in turn.
    @Test(arguments: [Rig.Family.ipv4, .ipv6]) func aLinkGoingDarkEachWay(_ family: Rig.Family) async throws {
        await Rig.withHosts(["alpha", "bravo"], family: family) { rig in
            let ids = try await EndToEndTests().startPaired(rig)
            try await Self.waitForReach(rig, ids, true, "after pairing")
            let flag = family == .ipv6 ? "-6" : "-4"
            for action in ["blackhole", "prohibit", "unreachable"] {
                try await Self.cut(rig, flag, action)
                try await Self.waitForReach(rig, ids, false, "under \(action)")
                try await Self.heal(rig, flag)
                try await Self.waitForReach(rig, ids, true, "after \(action) was lifted")
            }
        }
    }

    /// A rule ahead of the main table on both hosts (root: a user cannot change routes either).
    static func cut(_ rig: Rig, _ family: String, _ action: String) async throws {
        for host in ["alpha", "bravo"] {
            let r = try await rig.root(host, ["ip", family, "rule", "add", "pref", "100", action])
            guard r.status == 0 else { throw TestFailure("cannot add a \(action) rule on \(host): \(r)") }
        }
    }

    static func heal(_ rig: Rig, _ family: String) async throws {
        for host in ["alpha", "bravo"] {
            let r = try await rig.root(host, ["ip", family, "rule", "del", "pref", "100"])
            guard r.status == 0 else { throw TestFailure("cannot remove the rule on \(host): \(r)") }
        }
    }

    /// The remote ends of `host`'s established connections on handoff's port (as root: `ss`
    /// inside the host).
    static func sessionAddresses(_ rig: Rig, _ host: String) async throws -> [String] {
        let r = try await rig.root(host, ["ss", "-Htn", "state", "established", "( sport = :47810 or dport = :47810 )"])
        guard r.status == 0 else { throw TestFailure("ss on \(host): \(r)") }
        return r.stdout.split(separator: "\n").compactMap { $0.split(separator: " ", omittingEmptySubsequences: true).last.map(String.init) }
    }

    static func peer(_ rig: Rig, from host: String, _ id: DeviceID) async throws -> PeerInfo? {
        try await rig.ctlJSON(host, PeersResponse.self, ["peers"]).peers.first { $0.id == id }
    }

    /// Waits until each daemon lists the other as `reachable`, both daemons alive all along. The
    /// product's bound (unreachable within 10 s) is measured by bench/liveness, not here: this
    /// wait is only a guard.
    static func waitForReach(_ rig: Rig, _ ids: (DeviceID, DeviceID), _ reachable: Bool, _ when: String) async throws {
        let took = try await Rig.waitFor("alpha and bravo \(reachable ? "reachable" : "unreachable") \(when)", seconds: 60) {
            for (host, other) in [("alpha", ids.1), ("bravo", ids.0)] {
                guard let daemon = rig.daemon(host), daemon.isRunning else {
                    throw TestFailure("handoffd on \(host) ended \(when): \(rig.daemon(host)?.stderr.suffix(3000) ?? "")")
                }
                guard try await peer(rig, from: host, other)?.reachable == reachable else { return false }
            }
            return true
        }
        print("liveness: \(reachable ? "reachable" : "unreachable") \(when) after \(took)")
    }
}
