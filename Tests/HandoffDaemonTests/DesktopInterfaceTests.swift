import DesktopAgent
import Foundation
import HandoffAPI
import HandoffClient
import HandoffDBus
import HandoffModel
import HandoffTestSupport
import Testing

/// `org.handoff.Desktop1` (docs/dbus.md) served by the agent in this process, to apps that are
/// D-Bus connections of this test, on real session buses (one per device), with two daemons in
/// this process. `DBusExampleEndToEndTests` runs the Python example the same way as the test user
/// on two simulated hosts.
@Suite(.heavy, .timeLimit(.minutes(3))) struct DesktopInterfaceTests {
    static let type = "org.example.notes.edit"

    /// An app's calls, as any language makes them.
    struct App {
        let bus: DBusConnection

        func call(_ member: String, _ arguments: [DBusValue] = []) async throws(DBusError) -> [DBusValue] {
            try await bus.call(
                DBusMethodCall(destination: DesktopAgent.busName, path: DesktopInterface.path, interface: DesktopInterface.interface, member: member, arguments: arguments),
                timeout: .seconds(20)
            )
        }

        /// The call fails with `name`; returns its message.
        @discardableResult
        func refused(_ name: String, _ member: String, _ arguments: [DBusValue] = [], sourceLocation: SourceLocation = #_sourceLocation) async -> String {
            do {
                let answer = try await call(member, arguments)
                Issue.record("\(member) answered \(answer), not \(name)", sourceLocation: sourceLocation)
            } catch {
                #expect(error.name == name, "\(member): \(error)", sourceLocation: sourceLocation)
                return error.message
            }
            return ""
        }
    }

    static func note(_ title: String, needsSave: Bool = false) -> DBusValue {
        .vardict([
            "type": .string(type), "title": .string(title), "userInfo": .vardict(["page": .int32(3)]), "supportsContinuationStreams": .bool(true),
            "needsSave": .bool(needsSave),
        ])
    }

    static func register(_ app: App, continues: [String] = [], receiver: String = "/") async throws -> [DBusValue] {
        try await app.call("Register", [.string("org.example.Notes"), .strings(continues), .objectPath(receiver)])
    }

    static func readAll(_ fd: Int32) async throws -> [UInt8] {
        try await onOwnThread {
            var all: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0 { throw TestFailure("read: \(errno)") }
                if n == 0 { return all }
                all += buffer[0..<n]
            }
        }
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { return }
            offset += n
        }
    }

    @Test func anAppInAnyLanguageOriginatesReceivesAndStreams() async throws {
        let directory = try TempDirectory.make(prefix: "handoff-dbus")
        defer { TempDirectory.remove(directory) }
        for host in ["a", "b"] { try FileManager.default.createDirectory(atPath: directory + "/" + host, withIntermediateDirectories: true) }
        let busA = try await SessionBus(directory: directory + "/a")
        let busB = try await SessionBus(directory: directory + "/b")
        let (a, b, _) = try await ContinuationTests.paired(ActivityContent(type: "org.example.placeholder", title: "Before"))

        try await DesktopAgentTests.withAgent(a, bus: busA) {
            try await DesktopAgentTests.withAgent(b, bus: busB) {
                // A: the originating app.
                let origin = App(bus: try DBusConnection.connect(address: busA.address))
                let originSignals = try await origin.bus.signals(matching: "type='signal',interface='org.handoff.Desktop1'")
                await origin.refused("org.handoff.Error.not_registered", "BecomeCurrent", [.string("w1"), Self.note("Draft")])
                #expect(try await Self.register(origin) == [.array(element: "{sa{sv}}", [])])
                await origin.refused("org.handoff.Error.already_registered", "Register", [.string("org.example.Notes"), .strings([]), .objectPath("/")])
                // Wrong arguments are named, before anything reaches handoffd.
                #expect(await origin.refused(DBusError.invalidArgsName, "BecomeCurrent", [.string("w1")]).contains("(sa{sv})"))
                #expect(await origin.refused(DBusError.invalidArgsName, "BecomeCurrent", [.string("w1"), .vardict(["type": .string(Self.type), "colour": .string("red")])]).contains("colour"))
                await origin.refused("org.handoff.Error.invalid_type", "BecomeCurrent", [.string("w1"), .vardict(["type": .string("no dots")])])
                await origin.refused("org.handoff.Error.no_activity", "Update", [.string("w2"), Self.note("Other")])
                await origin.refused(DBusError.unknownMethodName, "Explode")
                let id = try #require(try await origin.call("BecomeCurrent", [.string("w1"), Self.note("Draft", needsSave: true)]).first?.stringValue)
                try await PeerDiscoveryTests.waitForPeers(b, "the app's activity") { $0.peers.first?.activity?.id.lowercasedString == id }

                // B: the receiving app, with its Receiver1 object.
                let receiving = App(bus: try DBusConnection.connect(address: busB.address))
                let incoming = try await receiving.bus.export(path: "/org/example/Notes", introspection: "<node/>")
                let receivingSignals = try await receiving.bus.signals(matching: "type='signal',interface='org.handoff.Desktop1'")
                _ = try await Self.register(receiving, continues: [Self.type], receiver: "/org/example/Notes")

                // A saves when asked (needsSave), and echoes the stream B opens.
                let originSide = Task { () async throws -> [String] in
                    var heard: [String] = []
                    for await signal in originSignals {
                        heard.append(signal.member)
                        switch signal.member {
                        case "WillSave":
                            #expect(signal.arguments.first == .string("w1") && signal.arguments.last == .string("laptop"))
                            _ = try await origin.call("Update", [.string("w1"), Self.note("Draft, saved")])
                        case "StreamRequested":
                            guard case .unixFD(let fd) = try await origin.call("TakeStream", [signal.arguments[2]]).first else { throw TestFailure("no descriptor") }
                            let got = try await Self.readAll(fd)
                            Self.writeAll(fd, Array(got.reversed()))
                            close(fd)
                        default: break
                        }
                        if heard.contains("StreamRequested"), heard.contains("WasContinued") { return heard }
                    }
                    return heard
                }

                let client = b.client
                let continuing = Task { try await client.send(.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch))) }
                var calls = incoming.makeAsyncIterator()
                let call = try #require(await calls.next())
                #expect(call.member == "Continue" && call.interface == "org.handoff.Receiver1")
                let activity = try #require(call.arguments[1].dictionary)
                #expect(activity["title"] == .string("Draft, saved") && activity["id"] == .string(id))
                #expect(activity["userInfo"]?.dictionary?["page"] == .int64(3))
                #expect(call.arguments[2] == .string("desk"))
                receiving.bus.reply(to: call, [.bool(true), .string("w9"), .string("")])
                let response = try await continuing.value
                #expect(response.delivered?.kind == .app)
                let continuationID = try #require(call.arguments[0].stringValue)
                #expect(continuationID == response.continuationID.lowercasedString)
                var receivedSignals = receivingSignals.makeAsyncIterator()
                let willContinue = try #require(await receivedSignals.next())
                #expect(willContinue.member == "WillContinue" && willContinue.arguments == [.string(continuationID), .string(Self.type), .string("desk"), .string("")])

                // A continuation stream, as a descriptor both ways.
                guard case .unixFD(let fd) = try await receiving.call("OpenStream", [.string(continuationID)]).first else { throw TestFailure("no descriptor") }
                Self.writeAll(fd, Array("hello from the laptop".utf8))
                shutdown(fd, Int32(SHUT_WR))
                #expect(String(decoding: try await Self.readAll(fd), as: UTF8.self) == "potpal eht morf olleh")
                close(fd)
                let heard = try await originSide.value
                #expect(heard.first == "WillSave" && heard.contains("WasContinued"), "\(heard)")
                await receiving.refused(DBusError.invalidArgsName, "OpenStream", [.string("not an id")])

                // Continue for the caller itself: no registration needed.
                let asker = App(bus: try DBusConnection.connect(address: busB.address))
                let fetched = try await asker.call("Continue", [.string("desk")])
                #expect(fetched.count == 3 && fetched[1].dictionary?["title"] == .string("Draft, saved") && fetched[2] == .string("desk"))
                await asker.refused("org.handoff.Error.unknown_peer", "Continue", [.string("nobody")])
                // What this device saw: the activity it fetched, from desk (History).
                try await waitUntil("B's history") { try await !b.client.send(.history).entries.isEmpty }
                let entries = try await asker.call("History", []).first?.arrayItems ?? []
                let newest = try #require(entries.first?.dictionary)
                #expect(newest["device_name"] == .string("desk") && newest["own"] == .bool(false))
                #expect(newest["activity"]?.dictionary?["title"] == .string("Draft, saved"))
                // Reopened by a link (OpenLink): from desk, where it is still current, to the
                // app here again.
                let made = try await b.client.send(.link(LinkRequest(peer: "desk")))
                let linkCall = Task { try await asker.call("OpenLink", [.string(made.link)]) }
                let again = try #require(await calls.next())
                #expect(again.member == "Continue" && again.arguments[1].dictionary?["title"] == .string("Draft, saved"))
                receiving.bus.reply(to: again, [.bool(true), .string("w9"), .string("")])
                let reopened = try await linkCall.value
                #expect(reopened.count == 4 && reopened[0] == .string("device") && reopened[3] == .string("desk"), "\(reopened)")
                #expect(reopened[1] == again.arguments[0])
                await asker.refused("org.handoff.Error.invalid_link", "OpenLink", [.string("handoff:v1.AAAA")])
                // SavedActivity: nothing kept of a content nobody showed.
                #expect(try await asker.call("SavedActivity", [.string("note-none")]) == [.vardict([:])])
                // Deleted by type, everywhere: B's history empties.
                let deletion = try await asker.call("DeleteAllSavedActivities", [.strings([Self.type])])
                #expect(deletion.count == 1 && UUID(uuidString: deletion[0].stringValue ?? "") != nil, "\(deletion)")
                #expect(try await b.client.send(.history).entries.isEmpty)
                await asker.refused("org.handoff.Error.invalid_value", "DeleteSavedActivities", [.strings([]), .strings([])])
                asker.bus.close()

                // Invalidated: no update brings it back; B no longer sees it.
                _ = try await origin.call("Invalidate", [.string("w1")])
                await origin.refused("org.handoff.Error.invalidated", "Update", [.string("w1"), Self.note("Zombie")])
                try await PeerDiscoveryTests.waitForPeers(b, "the invalidated activity gone") { $0.peers.first?.activity == nil }

                // The app's connection ending is the app quitting: its window's activity goes.
                _ = try await origin.call("BecomeCurrent", [.string("w1"), Self.note("Again")])
                try await PeerDiscoveryTests.waitForPeers(b, "the new activity") { $0.peers.first?.activity?.title == "Again" }
                origin.bus.close()
                try await PeerDiscoveryTests.waitForPeers(b, "the quit app's activity gone") { $0.peers.first?.activity == nil }
                receiving.bus.close()
            }
        }
        try await a.finish()
        try await b.finish()
        await busA.stop()
        await busB.stop()
    }

    /// An app that claims a site (`RegisterClaiming`) gets a page of it, continued from another
    /// device, as a browsing-web activity; a domain that claims nothing is refused.
    @Test func anAppClaimingASiteGetsItsPages() async throws {
        let directory = try TempDirectory.make(prefix: "handoff-dbus")
        defer { TempDirectory.remove(directory) }
        let bus = try await SessionBus(directory: directory)
        let page = ActivityContent(type: "org.example.Reader.read", title: "Item 7", userInfo: ["scroll": .int(420)], webpageURL: "https://shop.example.com/item/7")
        let (_, b, _) = try await ContinuationTests.paired(page)
        try await DesktopAgentTests.withAgent(b, bus: bus) {
            let app = App(bus: try DBusConnection.connect(address: bus.address))
            await app.refused("org.handoff.Error.bad_request", "RegisterClaiming", [.string("org.example.Shop"), .strings([]), .strings(["*.com"]), .objectPath("/")])
            let incoming = try await app.bus.export(path: "/org/example/Shop", introspection: "<node/>")
            _ = try await app.call("RegisterClaiming", [.string("org.example.Shop"), .strings([]), .strings(["*.example.com"]), .objectPath("/org/example/Shop")])
            let client = b.client
            let continuing = Task { try await client.send(.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch))) }
            var calls = incoming.makeAsyncIterator()
            let call = try #require(await calls.next())
            let activity = try #require(call.arguments[1].dictionary)
            #expect(activity["type"] == .string("org.handoff.browsing-web") && activity["webpageURL"] == .string("https://shop.example.com/item/7"), "\(activity)")
            #expect(activity["title"] == .string("Item 7") && activity["userInfo"] == nil, "nothing of the app that showed it: \(activity)")
            app.bus.reply(to: call, [.bool(true), .string("main"), .string("")])
            #expect(try await continuing.value.delivered?.handler == "org.example.Shop")
        }
    }

    /// A call too large for handoffd is refused on its own: the app stays registered and its
    /// activity current. Seen: a 5 MB SaveRestoration answered "lost the connection to handoffd",
    /// and the app's registration and activity were gone.
    @Test func anOversizedCallIsRefusedAloneAndTheAppStays() async throws {
        let directory = try TempDirectory.make(prefix: "handoff-dbus")
        defer { TempDirectory.remove(directory) }
        let bus = try await SessionBus(directory: directory)
        let daemon = try await TestDaemon.start()
        try await DesktopAgentTests.withAgent(daemon, bus: bus) {
            let app = App(bus: try DBusConnection.connect(address: bus.address))
            defer { app.bus.close() }
            // It declares no type: what it makes current need not be one it takes (docs/dbus.md).
            _ = try await Self.register(app)
            _ = try await app.call("BecomeCurrent", [.string("w1"), Self.note("Draft")])
            let huge = DBusValue.vardict(["type": .string(Self.type), "title": .string("Huge"), "userInfo": .vardict(["blob": .array(element: "y", Array(repeating: .byte(7), count: 5 << 20))])])
            for member in ["SaveRestoration", "BecomeCurrent", "Update"] {
                let message = await app.refused("org.handoff.Error.payload_too_large", member, [.string("w1"), huge])
                #expect(message.contains("continuation stream"), "\(member): \(message)")
            }
            #expect(try await daemon.client.send(.currentActivity).activity.title == "Draft")
            _ = try await app.call("Update", [.string("w1"), Self.note("Draft 2")])
            #expect(try await daemon.client.send(.currentActivity).activity.title == "Draft 2")
            // The advice on size reaches the app in the reply, as handoffctl prints it.
            #expect(try await app.call("Update", [.string("w1"), Self.note("Draft 3")]).last == .strings([]))
            let large = DBusValue.vardict(["type": .string(Self.type), "title": .string("Large"), "userInfo": .vardict(["text": .string(String(repeating: "x", count: 4096))])])
            let advised = try await app.call("BecomeCurrent", [.string("w1"), large])
            #expect(advised.count == 2 && advised[1].arrayItems?.first?.stringValue?.contains("continuation stream") == true, "\(advised)")
            // A window's activation conditions: bounded; closing it may keep its activity for next time.
            await app.refused("org.handoff.Error.invalid_value", "SetActivationConditions", [.string("w1"), .strings([""]), .strings([])])
            _ = try await app.call("SetActivationConditions", [.string("w1"), .strings(["item-*"]), .strings(["item-7"])])
            _ = try await app.call("CloseWindowKeepingRestoration", [.string("w1")])
            app.bus.close()
            let again = App(bus: try DBusConnection.connect(address: bus.address))
            defer { again.bus.close() }
            let restored = try await Self.register(again).first?.arrayItems ?? []
            #expect(restored.count == 1, "\(restored)")

            // The handoff switch as a property: read, written, and followed (PropertiesChanged,
            // also when it changes by other means).
            func properties(_ member: String, _ arguments: [DBusValue]) async throws -> [DBusValue] {
                try await again.bus.call(
                    DBusMethodCall(destination: DesktopAgent.busName, path: DesktopInterface.path, interface: "org.freedesktop.DBus.Properties", member: member, arguments: arguments),
                    timeout: .seconds(20)
                )
            }
            let changes = try await again.bus.signals(matching: "type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'")
            var changed = changes.makeAsyncIterator()
            #expect(try await properties("Get", [.string(DesktopInterface.interface), .string("Handoff")]) == [.variant(.bool(true))])
            #expect(try await properties("GetAll", [.string(DesktopInterface.interface)]) == [.vardict(["Handoff": .bool(true)])])
            _ = try await properties("Set", [.string(DesktopInterface.interface), .string("Handoff"), .variant(.bool(false))])
            #expect(try await daemon.client.send(.settings).handoff == false)
            #expect(await changed.next()?.arguments.dropFirst().first == .vardict(["Handoff": .bool(false)]))
            _ = try await daemon.client.send(.changeSettings(SettingsChange(handoff: true)))
            #expect(await changed.next()?.arguments.dropFirst().first == .vardict(["Handoff": .bool(true)]))
            do {
                _ = try await properties("Set", [.string(DesktopInterface.interface), .string("Handoff"), .variant(.string("yes"))])
                Issue.record("a string set the switch")
            } catch {}
        }
        try await daemon.finish()
        await bus.stop()
    }

    /// A continuation a D-Bus app heard `WillContinue` for, which then fails (what desk showed
    /// changed as laptop asked for it): the app gets `ContinueFailed` with the code and reason.
    @Test func aReceivingAppHearsWhyAContinuationFailed() async throws {
        let directory = try TempDirectory.make(prefix: "handoff-dbus")
        defer { TempDirectory.remove(directory) }
        let bus = try await SessionBus(directory: directory)
        var content = ActivityContent(type: Self.type, title: "Item 3")
        content.needsSave = true
        let (a, b, current) = try await ContinuationTests.paired(content)
        let attachment = try await a.client.subscribe(.attach(AttachRequest(activityID: current.id)))
        _ = try await attachment.next()
        let aClient = a.client
        // Desk's app answers willSave with another activity: what laptop saw is gone.
        let originator = Task { () async throws in
            guard case .willSave = try await attachment.next()?.body else { throw TestFailure("no willSave") }
            _ = try await aClient.send(.becomeCurrent(PutCurrentActivityRequest(content: ActivityContent(type: Self.type, title: "Item 4"))))
        }
        try await DesktopAgentTests.withAgent(b, bus: bus) {
            let app = App(bus: try DBusConnection.connect(address: bus.address))
            defer { app.bus.close() }
            let signals = try await app.bus.signals(matching: "type='signal',interface='org.handoff.Desktop1'")
            _ = try await Self.register(app, continues: [Self.type])
            await expectFailure(.activityChanged) { _ = try await b.client.send(.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch))) }
            var heard = signals.makeAsyncIterator()
            let will = try #require(await heard.next())
            let failed = try #require(await heard.next())
            #expect(will.member == "WillContinue" && failed.member == "ContinueFailed", "\(will.member) \(failed.member)")
            #expect(failed.arguments.count == 4 && failed.arguments[0] == will.arguments[0] && failed.arguments[1] == .string(Self.type))
            #expect(failed.arguments[2] == .string("activity_changed") && failed.arguments[3].stringValue?.isEmpty == false, "\(failed.arguments)")
        }
        try await originator.value
        try await a.finish()
        try await b.finish()
        await bus.stop()
    }

    /// An `a{sv}`'s entries.
    static func entries(_ value: DBusValue?) -> [String: DBusValue] {
        guard case .array(_, let items)? = value else { return [:] }
        var out: [String: DBusValue] = [:]
        for item in items {
            if case .dictEntry(let key, .variant(let inner)) = item, let name = key.stringValue { out[name] = inner }
        }
        return out
    }

    /// An app in any language hears of another device's copy (`ClipboardChanged`), reads what it
    /// is (`Clipboard`) and pastes it explicitly (`PasteFromDevice`): the bytes come from the other
    /// device only then.
    @Test func anAppSeesAndPastesAnotherDevicesCopy() async throws {
        let directory = try TempDirectory.make(prefix: "handoff-dbus")
        defer { TempDirectory.remove(directory) }
        let bus = try await SessionBus(directory: directory)
        let (a, b) = try await ContinuationTests.pair()
        let origin = try await ClipboardTests.Holder(a.client)
        try await DesktopAgentTests.withAgent(b, bus: bus) {
            let app = App(bus: try DBusConnection.connect(address: bus.address))
            defer { app.bus.close() }
            let signals = try await app.bus.signals(matching: "type='signal',interface='org.handoff.Desktop1',member='ClipboardChanged'")
            #expect(try await app.call("Clipboard") == [.vardict(["enabled": .bool(true)])])
            let text = Array("from the desk".utf8)
            await app.refused("org.handoff.Error.no_clipboard", "PasteFromDevice", [.string("")])
            let copy = try #require(try await origin.announce([ClipboardItem(type: "text/plain;charset=utf-8", size: Int64(text.count))]).local)
            var heard = signals.makeAsyncIterator()
            var said: [String: DBusValue] = [:]
            while said["device"] == nil {
                guard let signal = await heard.next() else { throw TestFailure("no ClipboardChanged") }
                said = Self.entries(signal.arguments.first)
            }
            #expect(said["device"] == .string("desk") && said["copy"] == .string(copy.id.lowercasedString) && said["sizes"] == .array(element: "t", [.uint64(13)]))
            #expect(try await app.call("Clipboard") == [.vardict(said)])
            // The paste: desk's agent (this test) is asked for the bytes, and gives them.
            let serving = Task { () async throws in
                let (streamID, _, _) = try await origin.nextPasteRequest()
                let pipe = try await a.client.pipe(.takeStream(streamID))
                try await pipe.write(text)
                pipe.finishWriting()
                _ = try await pipe.readToEnd()
            }
            guard case .unixFD(let fd) = try await app.call("PasteFromDevice", [.string("")]).first else { throw TestFailure("no descriptor") }
            #expect(try await Self.readAll(fd) == text)
            // The app is done with it: the stream ends on both devices.
            close(fd)
            try await serving.value
            await app.refused("org.handoff.Error.no_clipboard", "PasteFromDevice", [.string("image/png")])
        }
        origin.leave()
        try await a.finish()
        try await b.finish()
        await bus.stop()
    }

    @Test func theInterfaceIsAsTheRepositorySaysAndSurvivesHandoffdRestarting() async throws {
        let directory = try TempDirectory.make(prefix: "handoff-dbus")
        defer { TempDirectory.remove(directory) }
        let bus = try await SessionBus(directory: directory)
        let first = try await TestDaemon.start()
        try await DesktopAgentTests.withAgent(first, bus: bus) {
            let app = App(bus: try DBusConnection.connect(address: bus.address))
            defer { app.bus.close() }
            // What the agent serves is the file in the repository, verbatim.
            let xml = try #require(
                try await app.bus.call(
                    DBusMethodCall(destination: DesktopAgent.busName, path: DesktopInterface.path, interface: "org.freedesktop.DBus.Introspectable", member: "Introspect")
                ).first?.stringValue
            )
            let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("Sources/Apps/DesktopAgent/Interfaces/org.handoff.Desktop1.xml")
            #expect(xml == (try String(contentsOf: file, encoding: .utf8)))
            // …and names every method the agent answers.
            for member in ["Register", "Unregister", "BecomeCurrent", "Update", "Resign", "Invalidate", "Focus", "CloseWindow", "SaveRestoration", "RemoveRestoration", "Continue", "OpenStream", "TakeStream"] {
                #expect(xml.contains("<method name=\"\(member)\""), "\(member)")
            }

            _ = try await Self.register(app)
            _ = try await app.call("BecomeCurrent", [.string("w1"), Self.note("Draft")])
            _ = try await app.call("SaveRestoration", [.string("w1"), Self.note("Draft")])
            #expect(try await first.client.send(.currentActivity).activity.title == "Draft")

            // handoffd restarts: the app is told it is away, and what it does meanwhile is given
            // once handoffd is back.
            try await first.stop()
            await app.refused("org.handoff.Error.handoffd_not_running", "BecomeCurrent", [.string("w2"), Self.note("Written while away")])
            let second = try await TestDaemon.start(directory: first.directory)
            let deadline = ContinuousClock.now + .seconds(15)
            while (try? await second.client.send(.currentActivity).activity.title) != "Written while away" {
                guard ContinuousClock.now < deadline else { throw TestFailure("the app's activity was not given again") }
                try await Task.sleep(for: .milliseconds(50))
            }
            _ = try await app.call("Unregister")
            await app.refused("org.handoff.Error.not_registered", "Focus", [.string("w1")])
            // Registering again hands back the window's restoration activity.
            let restored = try await Self.register(app)
            #expect(restored.first?.arrayItems?.count == 1)
            if case .dictEntry(let window, let activity)? = restored.first?.arrayItems?.first {
                #expect(window == .string("w1") && activity.dictionary?["title"] == .string("Draft"))
            }
            try await second.finish()
        }
    }
}
