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

    /// The viewer: on the laptop, window w:item-7 prefers item-7 and w:item-8 can take any
    /// item-*. Item 7 goes to w:item-7 (prefers beats can), item 5 to w:item-8 (can), photo-9,
    /// which no window takes, to a new window; the windows come back when the viewer starts again.
    @Test func viewerContinuesIntoTheWindowThatPrefersOrCanTakeTheItemElseANewOne() async throws {
        let (desk, laptop) = try await PeerDiscoveryTests.pair()
        let deskViewer = try Self.app("handoff-example-viewer", desk)
        var laptopViewer = try Self.app("handoff-example-viewer", laptop)
        try await deskViewer.expect("ready")
        try await laptopViewer.expect("ready")
        laptopViewer.send("open item-7")
        laptopViewer.send("open item-8")
        laptopViewer.send("can item-8 item-*")
        try await laptopViewer.expect("window w:item-8 can take item-*")
        // w:item-8 had focus last: conditions, not focus, choose.
        laptopViewer.send("focus item-8")
        try await laptopViewer.expect("focused w:item-8")

        func continueOnLaptop(_ item: String) async throws -> ContinueResponse {
            deskViewer.send("open \(item)")
            try await Self.waitUntilSeen(laptop, "Item \(item)")
            return try await laptop.client.send(.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch)))
        }
        #expect(try await continueOnLaptop("item-7").delivered?.window == "w:item-7")
        try await laptopViewer.expect("item item-7 continued in open window w:item-7")
        #expect(try await continueOnLaptop("item-5").delivered?.window == "w:item-8")
        try await laptopViewer.expect("item item-5 continued in open window w:item-8")
        #expect(try await continueOnLaptop("photo-9").delivered?.window == "w:photo-9")
        try await laptopViewer.expect("item photo-9 continued in new window w:photo-9")
        #expect(try await laptop.client.send(.currentActivity).activity.title == "Item photo-9", "the new window has focus")

        laptopViewer.send("close item-8")
        try await laptopViewer.expect("closed w:item-8")
        #expect(try await laptopViewer.quit() == 0)
        laptopViewer = try Self.app("handoff-example-viewer", laptop)
        try await laptopViewer.expect("ready")
        for window in ["w:item-7", "w:photo-9"] { #expect(laptopViewer.output.contains("restored window \(window)")) }
        #expect(!laptopViewer.output.contains("w:item-8"), "a closed window does not come back")
        #expect(try await laptopViewer.quit() == 0)
        #expect(try await deskViewer.quit() == 0)
        try await desk.finish()
        try await laptop.finish()
    }
}
