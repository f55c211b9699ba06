import DaemonSessions
import Foundation
import HandoffAPI
@testable import HandoffDaemon
import HandoffModel
import HandoffPeer
import HandoffTestSupport
import Synchronization
import Testing

/// Peer messages are answered by the feature that registered their kind (`PeerMessageHandlers`,
/// docs/architecture.md "Adding a peer message"): a handler from a module above DaemonSessions —
/// this test's — takes a kind on one daemon and hears it from the other, with who sent it; the
/// session carries on, and the built-in handlers keep the other kinds.
@Suite(.timeLimit(.minutes(2))) struct PeerMessageHandlerTests {
    /// Hears `activityContinued` instead of the activity feature.
    final class Continued: PeerMessageHandler, Sendable {
        let heard = Mutex<[(String, UUID)]>([])
        var kinds: Set<PeerMessage.Kind> { [.activityContinued] }

        func handle(_ message: PeerMessage, _ talk: PeerTalk) async throws {
            guard case .activityContinued(let id) = message else { return }
            heard.withLock { $0.append((talk.peer.name, id)) }
        }
    }

    @Test func aHandlerFromAboveTakesItsKindBetweenTwoDaemons() async throws {
        let (a, b, activity) = try await ContinuationTests.paired(ActivityContent(type: "org.example.item", title: "Item 7"))
        let handler = Continued()
        a.daemon.peerMessages.register(handler, replacing: true)
        let said = UUID()
        // Sent again until heard: right after pairing, a session that lost a crossed dial may
        // still be listed, closing, and what is sent on it goes nowhere (a broadcast promises no
        // delivery; sessions exchange what matters when they open).
        _ = try await Rig.waitFor("desk's handler to hear the laptop") {
            await b.daemon.sessions.broadcast(.activityContinued(activityID: said))
            try await Task.sleep(for: .milliseconds(200))
            return handler.heard.withLock { !$0.isEmpty }
        }
        let heard = try #require(handler.heard.withLock { $0.first })
        #expect(heard.0 == "laptop" && heard.1 == said)
        // The session goes on, its other kinds answered as before: the laptop continues.
        let continued = try await b.client.send(.continueActivity(ContinueRequest(peer: "desk")))
        #expect(continued.activity.id == activity.id)
        try await a.finish()
        try await b.finish()
    }

    /// Every kind a member session answers belongs to a feature: MemberSessions names none of them.
    @Test func memberSessionsSwitchOverNoFeaturesMessages() throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Sources/Daemon/DaemonSessions")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("MemberSession") && $0.hasSuffix(".swift") }
        #expect(files.count >= 4, "\(files)")
        let text = try files.map { try String(contentsOf: directory.appendingPathComponent($0), encoding: .utf8) }.joined()
        for kind in ["activityNotice", "getActivity", "activityContinued", "accountState", "getAccountState", "leaving", "renameRequest", "removed"] {
            #expect(!text.contains("case .\(kind)(") && !text.contains("case .\(kind):"), "MemberSessions switches over \(kind)")
        }
    }
}
