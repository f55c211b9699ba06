import Foundation
import HandoffAPI
@testable import HandoffClient
import HandoffDaemon
import HandoffDiscovery
import HandoffModel
import HandoffTestSupport
import Testing

/// The device-wide switch (`PUT /v1/settings`, docs/local-api.md "Settings") and the count of
/// devices inviting nearby, between daemons in this process.
@Suite(.timeLimit(.minutes(3))) struct DeviceSwitchTests {
    /// Two daemons in one account on one in-memory network: the desk (which made the account) and
    /// the laptop.
    static func deskAndLaptop() async throws -> (TestDaemon, TestDaemon, DiscoveryNetwork) {
        let network = DiscoveryNetwork()
        let desk = try await TestDaemon.start(network: network)
        _ = try await desk.client.send(.createAccount(CreateAccountRequest(deviceName: "desk")))
        let laptop = try await TestDaemon.start(network: network)
        let updates = try await desk.client.subscribe(.invite)
        let code = try #require(try await updates.next()?.invite?.code)
        _ = try await laptop.client.send(.joinAccount(JoinAccountRequest(code: code, deviceName: "laptop")))
        _ = try await updates.next()
        return (desk, laptop, network)
    }

    @Test func offTheDeviceTellsAndAnswersNothingYetContinuesWhenAsked() async throws {
        var (a, b, network) = try await Self.deskAndLaptop()
        let aID = try await a.client.send(.account).deviceID
        let onA = try await a.client.send(.becomeCurrent(PutCurrentActivityRequest(content: ActivityContent(type: "org.example.reader.read", title: "On desk", webpageURL: "https://example.org/a"))))
        let onB = try await b.client.send(.becomeCurrent(PutCurrentActivityRequest(content: ActivityContent(type: "org.example.reader.read", title: "On laptop", webpageURL: "https://example.org/b"))))
        try await PeerDiscoveryTests.waitForPeers(b, "desk's activity") { $0.peers.first { $0.id == aID }.map { $0.reachable && $0.activity?.id == onA.activity.id } == true }
        // The offer follows the peer's change a moment later (seen to lag under load).
        _ = try await Rig.waitFor("the laptop to offer the desk's activity, to notify") { try await b.client.send(.offers).offers.first?.notify == true }
        #expect(try await a.client.send(.settings) == DeviceSettings(handoff: true))

        let events = try await a.client.subscribe(.events)
        #expect(try await a.client.send(.changeSettings(SettingsChange(handoff: false))) == DeviceSettings(handoff: false))
        try await Self.next(.statusChanged, in: events)
        #expect(try await a.client.send(.status).settings?.handoff == false)

        // The laptop no longer sees the desk's activity, nor reaches it: no session, and its port
        // answers no connection at all.
        try await PeerDiscoveryTests.waitForPeers(b, "desk gone quiet") { response in
            response.peers.first { $0.id == aID }.map { !$0.reachable && $0.activity == nil } ?? true
        }
        #expect(try await b.client.send(.offers).offers.isEmpty)
        await expectFailure(.unreachable) { _ = try await b.client.send(.continueActivity(ContinueRequest(peer: a.peerAddress))) }
        // No invite while nobody could reach this device to use it.
        await expectFailure(.handoffOff) {
            let invite = try await a.client.subscribe(.invite)
            defer { invite.close() }
            _ = try await invite.next()
        }
        // Continuing here when the user asks still works; the laptop hears nothing of the desk.
        let continued = try await a.client.send(.continueActivity(ContinueRequest(peer: "laptop")))
        #expect(continued.activity.id == onB.activity.id)
        let desk = try await b.client.send(.peers).peers.first { $0.id == aID }
        #expect(desk?.activity == nil)
        // …and what the desk sees is never for a notification while it is off.
        try await PeerDiscoveryTests.waitForPeers(a, "the laptop's activity") { $0.peers.first?.activity?.id == onB.activity.id }
        #expect(try await a.client.send(.offers).offers.allSatisfy { !$0.notify })
        events.close()

        // Kept across a restart.
        try await a.stop()
        a = try await TestDaemon.start(directory: a.directory, network: network)
        #expect(try await a.client.send(.settings).handoff == false)
        #expect(try await a.client.send(.status).discovery.detail == "browsing only: handoff is off on this device")

        // On again: the laptop sees the desk and its activity at once.
        _ = try await a.client.send(.changeSettings(SettingsChange(handoff: true)))
        try await PeerDiscoveryTests.waitForPeers(b, "desk back") { $0.peers.first { $0.id == aID }.map { $0.reachable && $0.activity?.id == onA.activity.id } == true }
        #expect(try await b.client.send(.continueActivity(ContinueRequest(peer: "desk"))).activity.id == onA.activity.id)
        try await a.finish()
        try await b.finish()
    }

    /// Switched off and on in a quick row, the last word counts: the daemon reacts to each change
    /// in tasks that can meet in any order, and must still end as the user left it.
    @Test func quickTogglesEndAsTheLastOneSays() async throws {
        let (a, b, _) = try await Self.deskAndLaptop()
        let aID = try await a.client.send(.account).deviceID
        let onA = try await a.client.send(.becomeCurrent(PutCurrentActivityRequest(content: ActivityContent(type: "org.example.reader.read", title: "On desk"))))
        try await PeerDiscoveryTests.waitForPeers(b, "desk") { $0.peers.first { $0.id == aID }?.reachable == true }
        for round in 0..<3 {
            for on in [false, true, false, true, false, true, false, true] { _ = try await a.client.send(.changeSettings(SettingsChange(handoff: on))) }
            try await PeerDiscoveryTests.waitForPeers(b, "desk back after round \(round)") {
                $0.peers.first { $0.id == aID }.map { $0.reachable && $0.activity?.id == onA.activity.id } == true
            }
            for on in [true, false, true, false, true, false] { _ = try await a.client.send(.changeSettings(SettingsChange(handoff: on))) }
            try await PeerDiscoveryTests.waitForPeers(b, "desk quiet after round \(round)") {
                $0.peers.first { $0.id == aID }.map { !$0.reachable && $0.activity == nil } ?? true
            }
            _ = try await Rig.waitFor("the desk's sessions to end too") { try await a.client.send(.status).reachablePeers == 0 }
            _ = try await a.client.send(.changeSettings(SettingsChange(handoff: true)))
        }
        try await a.finish()
        try await b.finish()
    }

    /// `handoff = false` in handoffd.toml: off whatever the switch says, and it cannot be turned
    /// on; a reload without it gives the switch back, as the user left it.
    @Test func theConfigurationCanKeepHandoffOff() async throws {
        let a = try await TestDaemon.start { $0.settings.handoffAllowed = false }
        #expect(try await a.client.send(.settings).handoff == false)
        let message = await expectFailure(.handoffOff) { _ = try await a.client.send(.changeSettings(SettingsChange(handoff: true))) }
        #expect(message.contains("handoffd.toml"), "\(message)")
        #expect(try await a.client.send(.changeSettings(SettingsChange(handoff: false))).handoff == false)
        var settings = DaemonSettings()
        settings.handoffAllowed = true
        _ = try a.daemon.reload(settings)
        #expect(try await a.client.send(.settings).handoff == false, "the user turned it off meanwhile")
        #expect(try await a.client.send(.changeSettings(SettingsChange(handoff: true))).handoff)
        settings.handoffAllowed = false
        _ = try a.daemon.reload(settings)
        #expect(try await a.client.send(.settings).handoff == false)
        try await a.finish()
    }

    @Test func aBadSettingsRequestChangesNothing() async throws {
        let a = try await TestDaemon.start()
        let socketPath = a.socketPath
        let answer = try await onOwnThread {
            let c = try UnixHTTPConnection(socketPath: socketPath, timeoutSeconds: 60)
            let body = Array(#"{"handoff":"maybe"}"#.utf8)
            try c.sendRaw("PUT \(LocalAPIRoute.settings) HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: \(body.count)\r\n\r\n", body: body)
            let r = try c.readResponse()
            return (r.status, String(decoding: r.body, as: UTF8.self))
        }
        #expect(answer.0 == 400 && answer.1.contains("bad_request"), "\(answer)")
        #expect(try await a.client.send(.settings).handoff)
        // A settings file nobody can read is moved aside, and handoff is off (it may have been).
        try await a.stop()
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: a.stateDirectory + "/settings.json"))
        let again = try await TestDaemon.start(directory: a.directory)
        #expect(try await again.client.send(.settings).handoff == false)
        #expect(FileManager.default.fileExists(atPath: a.stateDirectory + "/settings.json.unreadable"))
        try await again.finish()
    }

    @Test func aDeviceWithoutAnAccountCountsTheDevicesInvitingNearby() async throws {
        let network = DiscoveryNetwork()
        let a = try await TestDaemon.start(network: network)
        _ = try await a.client.send(.createAccount(CreateAccountRequest(deviceName: "desk")))
        let newcomer = try await TestDaemon.start(network: network)
        #expect(try await newcomer.client.send(.status).invitingNearby == 0)
        let events = try await newcomer.client.subscribe(.events)

        let invite = try await a.client.subscribe(.invite)
        let code = try #require(try await invite.next()?.invite?.code)
        try await Self.next(.statusChanged, in: events)
        try await Self.waitForInviting(newcomer, 1)
        // The invite ends: nobody is inviting any more.
        invite.close()
        try await Self.waitForInviting(newcomer, 0)

        // Joined, the device counts no inviter (it follows only its own account's devices).
        let again = try await a.client.subscribe(.invite)
        let second = try #require(try await again.next()?.invite?.code)
        #expect(second != code)
        try await Self.waitForInviting(newcomer, 1)
        _ = try await newcomer.client.send(.joinAccount(JoinAccountRequest(code: second, deviceName: "laptop")))
        _ = try await again.next()
        try await Self.waitForInviting(newcomer, 0)
        events.close()
        try await a.finish()
        try await newcomer.finish()
    }

    static func next(_ wanted: LocalEvent.Body, in events: EventSubscription) async throws {
        while let event = try await events.next() {
            if event.body == wanted { return }
        }
        throw TestFailure("the events ended before \(wanted.name)")
    }

    static func waitForInviting(_ daemon: TestDaemon, _ count: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while try await daemon.client.send(.status).invitingNearby != count {
            guard ContinuousClock.now < deadline else {
                Issue.record("never \(count) devices inviting nearby", sourceLocation: sourceLocation)
                throw TestFailure("never \(count) devices inviting nearby")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
