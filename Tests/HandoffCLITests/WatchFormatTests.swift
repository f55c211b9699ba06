import Foundation
import HandoffAPI
import HandoffModel
import Testing

@testable import handoffctl

/// `handoffctl watch` for people: aligned times, names rather than ids, each change once.
@Suite struct WatchFormatTests {
    @Test func linesNameThingsLineUpAndDoNotRepeat() throws {
        setenv("TZ", "UTC", 1)
        tzset()
        let desk = DeviceID(digest: [UInt8](repeating: 7, count: 32))
        let activity = Activity(content: ActivityContent(type: "com.example.edit", title: "Report"), createdAt: .now(), originDevice: nil)
        let summary = ActivitySummary(activity)
        func at(_ ms: Int64) -> Timestamp { Timestamp(microsecondsSinceEpoch: 1_800_000_000_000_000 + ms * 1000) }
        func peer(seen: Int64) -> PeerInfo {
            PeerInfo(
                id: desk, name: "desk", reachable: true, foundVia: ["mdns"], addresses: [], activity: summary,
                lastSeen: at(seen), lastAdvert: nil, unreachableSince: nil
            )
        }
        var format = WatchFormat()
        let lines = [
            LocalEvent(at: at(5), .currentActivityChanged(activity)),
            LocalEvent(at: at(1250), .peerChanged(peer(seen: 1))),
            LocalEvent(at: at(2000), .peerChanged(peer(seen: 2))),  // only its last-seen time changed
            LocalEvent(at: at(3000), .willSave(activityID: activity.id, peer: .init(id: desk, name: "desk"))),
            LocalEvent(at: at(4000), .wasContinued(activityID: activity.id, peer: .init(id: desk, name: "desk"))),
            LocalEvent(at: at(61_000), .peerGone(desk)),
            LocalEvent(at: at(62_000), .currentActivityResigned(activityID: activity.id, reason: .expired)),
        ].compactMap { format.line($0) }
        #expect(lines == [
            "08:00:00.005  current     com.example.edit \"Report\"",
            "08:00:01.250  peer        desk reachable: com.example.edit \"Report\"",
            "08:00:03.000  saving      \"Report\" for desk",
            "08:00:04.000  taken       \"Report\" by desk",
            "08:01:01.000  gone        desk",
            "08:01:02.000  expired     \"Report\"",
        ])
    }
}
