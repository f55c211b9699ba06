import Foundation
import HandoffAPI
import HandoffModel
import HandoffTestSupport
import Testing

/// Two subnets joined by a router that forwards unicast only (rig.sh's `HOST@2`): multicast DNS
/// stays on each link, and the devices find each other through a zone on a real DNS server —
/// BIND 9, then Knot — run as the test user on a host of the first subnet (docs/discovery.md,
/// "Beyond one link"). Every handoffd and handoffctl runs as the test user.
@Suite(.heavy, .timeLimit(.minutes(8))) struct WideAreaEndToEndTests {
    func peers(_ rig: Rig, _ host: String) async throws -> [PeerInfo] {
        try await rig.ctlJSON(host, PeersResponse.self, ["peers"]).peers
    }

    /// The zone's server on `dns`, and handoffd on each of `hosts` configured for it. Without
    /// `namingTheServer`, the server listens on port 53, the zone names it for updates
    /// (`_dns-update._udp` SRV, RFC 6763 §11), and each host's resolver is that server: the
    /// devices are given the domain and the key only.
    func start(_ rig: Rig, _ kind: ZoneServer.Kind, hosts: [String], namingTheServer: Bool = true) async throws -> ZoneServer {
        let address = try await rig.address("dns")
        if !namingTheServer {
            // Root, for the namespace's settings only: port 53 for the unprivileged server, and
            // each host's /etc/resolv.conf (its own mount namespace) pointing at it.
            #expect(try await rig.root("dns", ["/usr/sbin/sysctl", "-qw", "net.ipv4.ip_unprivileged_port_start=53"]).status == 0)
            let resolver = rig.directory + "/resolv.conf"
            try rig.write(to: resolver, "nameserver \(address)\n")
            for host in hosts {
                let mounted = try await rig.root(host, ["/usr/bin/mount", "--bind", resolver, "/etc/resolv.conf"])
                #expect(mounted.status == 0, "\(mounted)")
            }
        }
        let zone = try await ZoneServer(
            kind, address: address, port: namingTheServer ? nil : 53, extra: namingTheServer ? "" : "_dns-update._udp SRV 0 0 53 ns\n"
        ) { rig.asUser("dns", $0) }
        for host in hosts {
            // Browsing every 5 s and records of 10 s, so that a change shows within the test's patience.
            try rig.write(
                to: rig.home(host) + "/.config/handoff/handoffd.toml", zone.configuration(browseInterval: 5, ttl: 10, namingTheServer: namingTheServer)
            )
            try await rig.startDaemon(host)
        }
        return zone
    }

    /// Creates the account on alpha and joins `joiner` by code, with no `--peer`: it finds the
    /// inviter's join tag in the zone.
    func join(_ rig: Rig, _ zone: ZoneServer, _ joiner: String, name: String) async throws -> DeviceID {
        let invite = try RunningProcessForInvite(rig)
        let code = try await invite.code()
        // The inviter's record gains the join tag in the zone (the TXT as dig prints it).
        do {
            try await Rig.waitFor("the invite in the zone") { try await zone.records("TXT").contains { $0.contains("\"j=") } }
        } catch {
            let status = try await rig.ctl("alpha", ["status", "--json"]).stdout
            throw TestFailure("\(error); the zone: \(try await zone.records()); alpha: \(status) \(rig.daemon("alpha")?.stderr.suffix(3000) ?? "")")
        }
        let join = try await rig.ctl(joiner, ["account", "join", code, "--device-name", name, "--json"])
        #expect(join.status == 0, "join: \(join); \(joiner): \(rig.daemon(joiner)?.stderr.suffix(3000) ?? "")")
        try await invite.finished()
        return try LocalAPIJSON.decoder().decode(AccountInfo.self, from: Data(join.stdout.utf8)).deviceID
    }

    @Test func acrossTwoSubnetsThroughBIND() async throws {
        await Rig.withHosts(["alpha", "dns", "charlie", "bravo", "delta"], secondSubnet: ["bravo", "delta"]) { rig in
            let zone = try await start(rig, .bind, hosts: ["alpha", "bravo", "charlie"])
            let alphaID = try await rig.ctlJSON("alpha", AccountInfo.self, ["account", "create", "--device-name", "desk"]).deviceID
            let bravoID = try await join(rig, zone, "bravo", name: "laptop")
            try await Rig.waitFor("alpha reachable from bravo, found in the zone") {
                try await peers(rig, "bravo").contains { $0.id == alphaID && $0.reachable && $0.foundVia.contains("wide-area") }
            }
            try await Rig.waitFor("bravo reachable from alpha") { try await peers(rig, "alpha").contains { $0.id == bravoID && $0.reachable } }
            // Charlie, on alpha's link, joins too; it is found there by multicast as well.
            let charlieID = try await join(rig, zone, "charlie", name: "den")
            try await Rig.waitFor("charlie reachable from alpha by mDNS") {
                try await peers(rig, "alpha").contains { $0.id == charlieID && $0.reachable && $0.foundVia.contains("mdns") }
            }
            // Alpha's and charlie's adverts are on their link; no multicast crosses the router, so
            // bravo's Avahi sees nothing of that subnet, and bravo found alpha in the zone only.
            let browse = try await rig.run("bravo", ["avahi-browse", "-rpt", "_handoff._tcp"])
            #expect(browse.status == 0 && !browse.stdout.contains("10.77.1."), "\(browse.stdout)")
            #expect(try await peers(rig, "bravo").first { $0.id == alphaID }?.foundVia == ["wide-area"])
            // Issue 54: doctor on bravo, which finds its devices through the zone only, does not
            // warn that multicast found none nor suggest `peers`.
            let zoneOnly = try await rig.ctl("bravo", ["doctor"])
            #expect(zoneOnly.stdout.contains("found in the zone handoff.test.") && !zoneOnly.stdout.contains("peers = ["), "\(zoneOnly)")

            // Continue, with a 64 MiB stream, from one subnet to the other.
            let file = rig.home("alpha") + "/payload"
            #expect(try await rig.run("alpha", ["/bin/sh", "-c", "head -c 67108864 /dev/urandom > \(file)"]).status == 0)
            let server = try rig.ctlProcess("alpha", ["become-current", "--type", "org.example.Far", "--title", "Across the router", "--stream-file", file])
            try await server.wait(for: "the stream server to attach") { $0.stderr.contains("attached") }
            try await Rig.waitFor("the activity on bravo") {
                try await peers(rig, "bravo").first { $0.id == alphaID }?.activity?.title == "Across the router"
            }
            let copy = rig.home("bravo") + "/copy"
            let received = try await rig.ctl("bravo", ["continue", "desk", "--stream-to", copy])
            #expect(received.status == 0, "\(received)")
            let sums = try await rig.run("bravo", ["/usr/bin/sha256sum", file, copy])
            let digests = Set(sums.stdout.split(separator: "\n").map { $0.prefix(64) })
            #expect(sums.status == 0 && digests.count == 1, "the stream arrived whole: \(sums)")
            _ = try await server.stop()

            // The server stops: doctor says what failed; discovery on the link goes on (charlie,
            // started again, is found by alpha through Avahi).
            try await zone.stop()
            try await Rig.waitFor("the failure in bravo's status") {
                try await rig.ctlJSON("bravo", DaemonStatus.self, ["status"]).discovery.wideArea?.problem != nil
            }
            let doctor = try await rig.ctl("bravo", ["doctor"])
            #expect(doctor.stdout.contains("PROBLEM") && doctor.stdout.contains("did not answer; discovery on this link is not affected"), "\(doctor.stdout)")
            _ = try await rig.daemon("charlie")?.stop()
            try await Rig.waitFor("charlie gone from alpha") { try await !peers(rig, "alpha").contains { $0.id == charlieID && $0.reachable } }
            try await rig.startDaemon("charlie")
            try await Rig.waitFor("charlie back on alpha by mDNS, the zone's server away") {
                try await peers(rig, "alpha").contains { $0.id == charlieID && $0.reachable && $0.foundVia.contains("mdns") }
            }
            // And on bravo's link: delta (no handoffd) sees bravo's advert there.
            let bravoAddress = try await rig.address("bravo")
            try await Rig.waitFor("bravo's advert on its own link") {
                try await rig.run("delta", ["avahi-browse", "-rpt", "_handoff._tcp"]).stdout.contains(bravoAddress)
            }

            // It comes back without its journal: every device's records return.
            try await zone.start(forgetting: true)
            try await Rig.waitFor("three devices registered again", seconds: 60) {
                try await zone.records("PTR").count == 3
            }
            try await Rig.waitFor("bravo's status well again") {
                try await rig.ctlJSON("bravo", DaemonStatus.self, ["status"]).discovery.wideArea?.problem == nil
            }
        }
    }

    /// With Knot, and a configuration that names only the zone and the key.
    @Test func acrossTwoSubnetsThroughKnot() async throws {
        await Rig.withHosts(["alpha", "dns", "bravo"], secondSubnet: ["bravo"]) { rig in
            let zone = try await start(rig, .knot, hosts: ["alpha", "bravo"], namingTheServer: false)
            let alphaID = try await rig.ctlJSON("alpha", AccountInfo.self, ["account", "create", "--device-name", "desk"]).deviceID
            let bravoID = try await join(rig, zone, "bravo", name: "laptop")
            try await Rig.waitFor("alpha reachable from bravo, found in the zone") {
                try await peers(rig, "bravo").contains { $0.id == alphaID && $0.reachable && $0.foundVia.contains("wide-area") }
            }
            try await Rig.waitFor("bravo reachable from alpha") { try await peers(rig, "alpha").contains { $0.id == bravoID && $0.reachable } }
            // At exit each takes its records out of the zone.
            _ = try await rig.daemon("bravo")?.stop()
            _ = try await rig.daemon("alpha")?.stop()
            #expect(try await zone.records().filter { $0.contains("_handoff") }.isEmpty)
        }
    }
}
