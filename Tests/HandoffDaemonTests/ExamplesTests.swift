import Foundation
import HandoffAPI
import HandoffClient
import HandoffTestSupport
import Testing

/// The examples (Examples/), built by `swift build`, run as their users would — driven through
/// their stdin — against two daemons in this process: desk and laptop.
@Suite(.timeLimit(.minutes(3))) struct ExamplesTests {
    static func app(_ product: String, _ daemon: TestDaemon, _ arguments: [String] = []) throws -> ScriptedApp {
        try ScriptedApp(fifo: daemon.directory + "/\(product).\(UUID().uuidString.prefix(8)).in", [Subprocess.product(product), "--socket", daemon.socketPath] + arguments) {
            ($0[0], Array($0.dropFirst()))
        }
    }

    static func waitUntilSeen(_ laptop: TestDaemon, _ title: String) async throws {
        _ = try await PeerDiscoveryTests.waitForPeers(laptop, "desk's \(title)") { $0.peers.first { $0.name == "desk" && $0.reachable }?.activity?.title == title }
    }

    /// The notes editor: what was typed is saved at willSave and arrives with the note; the
    /// attachment comes over a continuation stream.
    @Test func notesTheTypedTextAndTheAttachmentFollowTheNote() async throws {
        // Room for the app's willSave round trip on a machine busy with the other tests.
        let (desk, laptop) = try await PeerDiscoveryTests.pair()
        let attachment = desk.directory + "/photo.bin"
        let bytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try bytes.write(to: URL(fileURLWithPath: attachment))
        let deskNotes = try Self.app("handoff-example-notes", desk, ["--dir", desk.directory])
        let laptopNotes = try Self.app("handoff-example-notes", laptop, ["--dir", laptop.directory])
        try await deskNotes.expect("ready")
        try await laptopNotes.expect("ready")

        deskNotes.send("new Groceries")
        try await deskNotes.expect("current Groceries")
        deskNotes.send("attach \(attachment)")
        deskNotes.send("type milk, eggs")
        try await deskNotes.expect("typed 10 characters")
        // The app hands over needsSave as it comes, not before printing: wait for handoffd to have it.
        try await waitUntil("needsSave given") { (try? await desk.client.send(.currentActivity).activity.content.needsSave) == true }
        try await Self.waitUntilSeen(laptop, "Groceries")

        let response = try await laptop.client.send(.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch)))
        #expect(response.delivered?.kind == .app && response.delivered?.handler == "org.handoff.example.Notes")
        try await laptopNotes.expect("continued Groceries from desk: milk, eggs")
        try await laptopNotes.expect("received attachment \(bytes.count) bytes")
        #expect(FileManager.default.contents(atPath: laptop.directory + "/attachment") == bytes)
        try await deskNotes.expect("sent attachment \(bytes.count) bytes")
        try await deskNotes.expect("wasContinued")
        #expect(deskNotes.output.contains("willSave"))
        #expect(try await deskNotes.quit() == 0)
        #expect(try await laptopNotes.quit() == 0)
        try await desk.finish()
        try await laptop.finish()
    }

    /// The viewer: item 7, shown in a window on the laptop, goes to that window; item 9 opens a
    /// new one; the windows come back when the viewer starts again.
    @Test func viewerContinuesIntoTheWindowShowingTheItemElseANewOne() async throws {
        let (desk, laptop) = try await PeerDiscoveryTests.pair()
        let deskViewer = try Self.app("handoff-example-viewer", desk)
        var laptopViewer = try Self.app("handoff-example-viewer", laptop)
        try await deskViewer.expect("ready")
        try await laptopViewer.expect("ready")
        laptopViewer.send("open 7")
        laptopViewer.send("open 8")
        try await laptopViewer.expect("window w8 shows item 8")

        deskViewer.send("open 7")
        try await Self.waitUntilSeen(laptop, "Item 7")
        let seven = try await laptop.client.send(.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch)))
        #expect(seven.delivered?.window == "w7")
        try await laptopViewer.expect("item 7 continued in open window w7")

        deskViewer.send("open 9")
        try await Self.waitUntilSeen(laptop, "Item 9")
        let nine = try await laptop.client.send(.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch)))
        #expect(nine.delivered?.window == "w9")
        try await laptopViewer.expect("item 9 continued in new window w9")
        #expect(try await laptop.client.send(.currentActivity).activity.title == "Item 9", "the new window has focus")

        laptopViewer.send("close 8")
        try await laptopViewer.expect("closed w8")
        #expect(try await laptopViewer.quit() == 0)
        laptopViewer = try Self.app("handoff-example-viewer", laptop)
        try await laptopViewer.expect("ready")
        for window in ["w7", "w9"] { #expect(laptopViewer.output.contains("restored window \(window)")) }
        #expect(!laptopViewer.output.contains("w8"), "a closed window does not come back")
        #expect(try await laptopViewer.quit() == 0)
        #expect(try await deskViewer.quit() == 0)
        try await desk.finish()
        try await laptop.finish()
    }
}
