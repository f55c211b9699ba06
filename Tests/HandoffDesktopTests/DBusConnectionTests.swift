import Foundation
import HandoffDBus
import HandoffTestSupport
import Testing

/// `DBusConnection` against a real `dbus-daemon --session`: calls and replies with every type,
/// exported objects and introspection, the caller's user from the bus, unicast signals, file
/// descriptors, and what happens when the bus goes away.
@Suite(.timeLimit(.minutes(1))) struct DBusConnectionTests {
    static let path = "/org/handoff/Test"
    static let interface = "org.handoff.Test1"

    /// A bus, and `count` connections to it.
    func withBus(_ count: Int, _ body: (SessionBus, [DBusConnection]) async throws -> Void) async throws {
        let directory = try TempDirectory.make(prefix: "handoff-dbus")
        defer { TempDirectory.remove(directory) }
        let bus = try await SessionBus(directory: directory)
        var connections: [DBusConnection] = []
        for _ in 0..<count { connections.append(try DBusConnection.connect(address: bus.address)) }
        defer { connections.forEach { $0.close() } }
        try await body(bus, connections)
        await bus.stop()
    }

    /// Answers every call to `path` with its own arguments, `Fail` with an error, and `Who` with
    /// the caller's uid.
    func echo(on connection: DBusConnection) async throws -> Task<Void, Never> {
        let calls = try await connection.export(path: Self.path, introspection: "<node><interface name=\"\(Self.interface)\"/></node>")
        return Task {
            for await call in calls {
                switch call.member {
                case "Fail": connection.reply(to: call, error: DBusError(name: "org.handoff.Error.Test", message: "as asked"))
                case "Who":
                    do { connection.reply(to: call, [.uint32(try await connection.unixUser(of: call.sender))]) } catch let e as DBusError { connection.reply(to: call, error: e) } catch {}
                default: connection.reply(to: call, call.arguments)
                }
            }
        }
    }

    func call(_ member: String, _ arguments: [DBusValue] = [], on service: DBusConnection, from client: DBusConnection) async throws(DBusError) -> [DBusValue] {
        try await client.call(DBusMethodCall(destination: service.uniqueName, path: Self.path, interface: Self.interface, member: member, arguments: arguments))
    }

    @Test func everyTypeGoesThereAndBackUnchanged() async throws {
        try await withBus(2) { _, c in
            let server = try await echo(on: c[0])
            defer { server.cancel() }
            let values: [DBusValue] = [
                .byte(7), .bool(true), .int16(-3), .uint16(65000), .int32(-70000), .uint32(4_000_000_000), .int64(-1 << 40), .uint64(1 << 63),
                .double(2.5), .string("Grüße “quoted”"), .objectPath("/a/b"), .signature("a{sv}"),
                .vardict(["title": .string("Notes"), "n": .int64(42), "tags": .strings(["a", "b"]), "nested": .vardict(["x": .double(1)])]),
                .array(element: "s", []), .structure([.string("s"), .int32(1)]), .variant(.array(element: "y", [.byte(1), .byte(2)])),
            ]
            let back = try await call("Echo", values, on: c[0], from: c[1])
            #expect(back == values)
        }
    }

    @Test func errorsIntrospectionAndTheCallersUserComeFromTheOtherSide() async throws {
        try await withBus(2) { _, c in
            let server = try await echo(on: c[0])
            defer { server.cancel() }
            await #expect(throws: DBusError(name: "org.handoff.Error.Test", message: "as asked")) {
                _ = try await call("Fail", on: c[0], from: c[1])
            }
            let xml = try await c[1].call(
                DBusMethodCall(destination: c[0].uniqueName, path: Self.path, interface: "org.freedesktop.DBus.Introspectable", member: "Introspect")
            )
            #expect(xml == [.string("<node><interface name=\"\(Self.interface)\"/></node>")])
            #expect(try await call("Who", on: c[0], from: c[1]) == [.uint32(geteuid())])
            // Nothing is exported there: sd-bus answers for us.
            await #expect(throws: DBusError.self) {
                _ = try await c[1].call(DBusMethodCall(destination: c[0].uniqueName, path: "/elsewhere", interface: Self.interface, member: "Echo"))
            }
        }
    }

    @Test func aWellKnownNameHasOneOwner() async throws {
        try await withBus(2) { _, c in
            try await c[0].requestName("org.handoff.Test")
            await #expect(throws: DBusError.self) { try await c[1].requestName("org.handoff.Test") }
        }
    }

    @Test func aUnicastSignalReachesOnlyItsDestination() async throws {
        try await withBus(3) { _, c in
            let rule = "type='signal',interface='\(Self.interface)'"
            let mine = try await c[1].signals(matching: rule)
            let theirs = try await c[2].signals(matching: rule)
            c[0].emit(DBusSignal(destination: c[1].uniqueName, path: Self.path, interface: Self.interface, member: "Private", arguments: [.string("for 1")]))
            c[0].emit(DBusSignal(path: Self.path, interface: Self.interface, member: "Public", arguments: [.int32(2)]))
            var mineSeen: [String] = []
            for await s in mine {
                mineSeen.append(s.member)
                #expect(s.sender == c[0].uniqueName)
                if mineSeen.count == 2 { break }
            }
            #expect(mineSeen == ["Private", "Public"])
            for await s in theirs {
                #expect(s.member == "Public", "a unicast signal reached another client")
                break
            }
        }
    }

    @Test func aDescriptorIsPassedAndTheHolderOwnsIt() async throws {
        try await withBus(2) { _, c in
            let server = try await echo(on: c[0])
            defer { server.cancel() }
            var ends: [Int32] = [0, 0]
            #expect(pipe(&ends) == 0)
            // Never blocks: a copy left open shows as EAGAIN instead of a hung test.
            _ = fcntl(ends[0], F_SETFL, O_NONBLOCK)
            // The connection takes the write end, the server's copy goes back with its reply.
            let back = try await call("Echo", [.unixFD(ends[1])], on: c[0], from: c[1])
            guard case .unixFD(let copy) = back.first else { Issue.record("no descriptor came back: \(back)"); return }
            #expect(write(copy, "hi", 2) == 2)
            close(copy)
            var buffer = [UInt8](repeating: 0, count: 8)
            #expect(read(ends[0], &buffer, 8) == 2)
            // Every copy of the write end goes (ours, the server's, the messages'): EOF, once the
            // server has let go of the call it answered.
            let deadline = ContinuousClock.now + .seconds(5)
            var last = read(ends[0], &buffer, 8)
            while last < 0, errno == EAGAIN, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
                last = read(ends[0], &buffer, 8)
            }
            #expect(last == 0, "a copy of the write end stayed open")
            close(ends[0])
        }
    }

    @Test func whenTheBusGoesAwayEverythingEnds() async throws {
        try await withBus(2) { bus, c in
            let calls = try await c[0].export(path: Self.path, introspection: "<node/>")
            let signals = try await c[1].signals(matching: "type='signal',interface='\(Self.interface)'")
            // A call nobody answers, under way while the bus dies.
            let pending = Task { () async throws(DBusError) -> [DBusValue] in try await call("Hang", on: c[0], from: c[1]) }
            for await _ in calls { break }
            await bus.stop()
            await c[0].closed()
            await c[1].closed()
            await #expect(throws: DBusError.self) { _ = try await pending.value }
            for await _ in signals { Issue.record("a signal after the end") }
            await #expect(throws: DBusError.self) { _ = try await c[1].call(DBusMethodCall.busDaemon("GetId", [])) }
        }
    }
}
