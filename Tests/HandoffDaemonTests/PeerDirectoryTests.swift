import DaemonCore
import DaemonDiscovery
import HandoffModel
import HandoffPeer
import Testing

/// Where `PeerDirectory` says a device can be dialled for a stream.
@Suite struct PeerDirectoryTests {
    /// A device that dialled us before its advert was resolved here (or whose advert does not
    /// reach this link) is dialled where its session comes from, while that session lasts.
    @Test func aDeviceKnownOnlyByItsSessionIsDialledWhereTheSessionComesFrom() async {
        let directory = PeerDirectory(events: EventHub())
        let id = DeviceID(digest: Array(repeating: 7, count: 32))
        #expect(await directory.dialTargets(id) == [])
        await directory.sessionUp(id, name: "desk", address: "192.0.2.7")
        #expect(await directory.dialTargets(id) == [PeerAddress(host: "192.0.2.7", port: PeerAddress.defaultPeerPort)])
        await directory.sessionDown(id)
        #expect(await directory.dialTargets(id) == [])
    }
}
