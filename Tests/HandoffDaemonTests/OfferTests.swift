import Foundation
import HandoffAPI
import HandoffClient
import HandoffDaemon
import HandoffModel
import HandoffTestSupport
import Testing

/// `GET /v1/offers` (what the desktop notifies about) and continuing exactly the activity offered,
/// between two daemons in this process.
@Suite(.timeLimit(.minutes(3))) struct OfferTests {
    static func desktopFile(_ daemon: TestDaemon, id: String, _ body: String) throws {
        let applications = daemon.directory + "/share/applications"
        try FileManager.default.createDirectory(atPath: applications, withIntermediateDirectories: true)
        try body.write(toFile: applications + "/" + id, atomically: true, encoding: .utf8)
    }

    @Test func whatTakesTheActivityIsNamedAsTheUserKnowsIt() async throws {
        let type = "org.example.editor.edit"
        let (a, b, activity) = try await ContinuationTests.paired(ActivityContent(type: type, title: "Report"))
        // Nothing here continues it, and it has no web page: no offer.
        #expect(try await b.client.send(.offers).offers.isEmpty)

        try Self.desktopFile(b, id: "org.example.Editor.desktop", """
            [Desktop Entry]
            Type=Application
            Name=Example Editor
            Icon=accessories-text-editor
            Exec=/bin/true %f
            DBusActivatable=true
            X-Handoff-ActivityTypes=\(type);
            """)
        let offer = try #require(try await b.client.send(.offers).offers.first)
        #expect(offer.peer.name == "desk" && offer.activity.id == activity.id && offer.activity.title == "Report" && offer.notify)
        #expect(offer.target == ContinueTarget(kind: .handler, handler: "org.example.Editor.desktop", name: "Example Editor", icon: "accessories-text-editor", dbusActivatable: true))

        // A running app for the type comes first, named by its .desktop file.
        let app = try await b.client.subscribe(.registerApp(AppRegistration(appID: "org.example.Editor", continues: [type])))
        _ = try await AppRoutesTests.registered(app)
        #expect(try await b.client.send(.offers).offers.first?.target.kind == .app)
        #expect(try await b.client.send(.offers).offers.first?.target.name == "Example Editor")
        app.close()

        // Resigned: nothing to offer.
        _ = try await a.client.send(.resignCurrent)
        try await PeerDiscoveryTests.waitForPeers(b, "A's resign") { $0.peers.first?.activity == nil }
        #expect(try await b.client.send(.offers).offers.isEmpty)
        try await a.finish()
        try await b.finish()
    }

    @Test func aWebPageIsOfferedForTheBrowserAndMutedTypesAreNotNotified() async throws {
        let type = "org.example.reader.read"
        let (a, b, _) = try await ContinuationTests.paired(
            ActivityContent(type: type, title: "An article", webpageURL: "https://example.org/article"),
            configureB: { $0.mutedNotificationTypes = [type] }
        )
        let offer = try #require(try await b.client.send(.offers).offers.first)
        #expect(offer.activity.hasWebpage)
        #expect(offer.target.kind == .browser && offer.target.handler == "xdg-open")
        #expect(!offer.notify)
        try await a.finish()
        try await b.finish()
    }

    @Test func continuingTheOfferedActivityFailsOnceTheDeviceMovedOn() async throws {
        let type = "org.example.reader.read"
        let (a, b, first) = try await ContinuationTests.paired(ActivityContent(type: type, title: "One", webpageURL: "https://example.org/1"))
        let aID = try await a.client.send(.account).deviceID
        let second = try await a.client.send(.becomeCurrent(PutCurrentActivityRequest(content: ActivityContent(type: type, title: "Two"))))
        try await PeerDiscoveryTests.waitForPeers(b, "A's second activity") { $0.peers.first { $0.id == aID }?.activity?.id == second.activity.id }
        await expectFailure(.activityChanged) {
            _ = try await b.client.send(.continueActivity(ContinueRequest(peer: "desk", activityID: first.id)))
        }
        let taken = try await b.client.send(.continueActivity(ContinueRequest(peer: "desk", activityID: second.activity.id)))
        #expect(taken.activity.id == second.activity.id)
        try await a.finish()
        try await b.finish()
    }
}
