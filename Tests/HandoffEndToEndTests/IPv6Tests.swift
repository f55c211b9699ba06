import Foundation
import HandoffAPI
import HandoffModel
import HandoffTestSupport
import Testing

/// IPv6 as a first-class path: a link with only IPv6 link-local addresses (a home network's
/// second stack), where a join, a continue, a stream and a static peer must work as on IPv4;
/// then a global-scope address on the same link.
@Suite(.heavy, .timeLimit(.minutes(5))) struct IPv6Tests {
    @Test func anIPv6OnlyLinkWorksLikeAnyOther() async throws {
        await Rig.withHosts(["alpha", "bravo"], family: .ipv6) { rig in
            try await rig.startDaemon("alpha")
            try await rig.startDaemon("bravo")
            // Joining finds the inviter by its code on the network: no --peer.
            let (alphaID, _) = try await EndToEndTests().pair(rig)
            let alphaLink = try await rig.linkLocal("alpha")
            try await Rig.waitFor("bravo to reach alpha") {
                try await rig.ctlJSON("bravo", PeersResponse.self, ["peers"]).peers.contains { $0.id == alphaID && $0.reachable }
            }
            let seen = try #require(try await rig.ctlJSON("bravo", PeersResponse.self, ["peers"]).peers.first { $0.id == alphaID })
            #expect(seen.addresses.contains("[\(alphaLink)]:47810"), "link-local, with its interface: \(seen.addresses)")

            // Continue and a stream.
            let file = rig.home("alpha") + "/payload"
            #expect(try await rig.run("alpha", ["/bin/sh", "-c", "head -c 3145728 /dev/urandom > \(file)"]).status == 0)
            let server = try rig.ctlProcess("alpha", ["become-current", "--type", "org.example.Six", "--title", "Over IPv6", "--stream-file", file])
            try await server.wait(for: "the stream server to attach") { $0.stderr.contains("attached") }
            try await Rig.waitFor("the activity on bravo") {
                try await rig.ctlJSON("bravo", PeersResponse.self, ["peers"]).peers.first { $0.id == alphaID }?.activity?.title == "Over IPv6"
            }
            let copy = rig.home("bravo") + "/copy"
            let received = try await rig.ctl("bravo", ["continue", "desk", "--stream-to", copy])
            #expect(received.status == 0, "\(received)")
            #expect(FileManager.default.contents(atPath: copy) == FileManager.default.contents(atPath: file), "the stream arrived whole")
            _ = try await server.stop()

            // By address, link-local with its interface: continue and sync.
            let byAddress = try await rig.ctl("bravo", ["continue", "[\(alphaLink)]:47810", "--json"])
            #expect(byAddress.status == 0 && byAddress.stdout.contains("Over IPv6"), "\(byAddress)")
            #expect(try await rig.ctl("bravo", ["account", "sync", "[\(alphaLink)]:47810"]).status == 0)

            // A static peer, without multicast at all: Avahi stopped on bravo, handoffd given alpha's address.
            _ = try await rig.daemon("bravo")?.stop()
            try await rig.avahi("bravo", "stop")
            try await rig.startDaemon("bravo", arguments: ["--peer", "[\(alphaLink)]:47810"])
            try await Rig.waitFor("bravo to reach alpha as a static peer", seconds: 60) {
                try await rig.ctlJSON("bravo", PeersResponse.self, ["peers"]).peers.contains { $0.id == alphaID && $0.reachable && $0.foundVia.contains("static") }
            }
            #expect(try await rig.ctl("bravo", ["continue", "desk", "--json"]).status == 0)

            // A global-scope address on the same link (root adds it, as a router's advertisement would).
            #expect(try await rig.root("alpha", ["ip", "addr", "add", "fd00:77::1/64", "dev", "eth0", "nodad"]).status == 0)
            #expect(try await rig.root("bravo", ["ip", "addr", "add", "fd00:77::2/64", "dev", "eth0", "nodad"]).status == 0)
            let global = try await rig.ctl("bravo", ["continue", "[fd00:77::1]:47810", "--json"])
            #expect(global.status == 0 && global.stdout.contains("Over IPv6"), "\(global)")
        }
    }
}
