import Foundation
import HandoffAPI
import HandoffDaemon
import HandoffModel
import HandoffTestSupport
import Testing

import DaemonCore
@testable import DaemonLocalAPI
@testable import HandoffClient
import Synchronization

/// The local API against a real daemon in this process, over its real Unix socket.
@Suite(.timeLimit(.minutes(3))) struct LocalAPITests {
    static let everyValue: [String: ActivityValue] = [
        "string": .string("héllo"), "int": .int(.min), "double": .double(-0.0), "nan": .double(.nan),
        "bool": .bool(true), "data": .data(Data([0, 255, 7])), "date": .date(Timestamp(rfc3339: "2026-11-22T10:00:00.5Z")!),
        "url": .url("https://example.com/a?b=c"), "uuid": .uuid(UUID()), "null": .null,
        "array": .array([.int(1), .array([.string("x")])]), "dictionary": .dictionary(["k": .dictionary(["j": .null])]),
    ]

    static func content(_ type: String = "com.example.editor.edit", userInfo: [String: ActivityValue] = ["page": .int(3)])
        -> ActivityContent
    {
        ActivityContent(type: type, title: "Report", userInfo: userInfo, webpageURL: "https://example.com/r")
    }

    /// The client reads an answer's status line by hand; anything but `HTTP/1.x` and three
    /// digits is not the local API.
    @Test(arguments: [
        ("HTTP/1.1 200 OK", 200), ("HTTP/1.0 404 Not Found", 404), ("HTTP/1.1 101", 101), ("HTTP/1.1 413 Payload Too Large", 413),
        ("HTTP/2 200 OK", nil), ("HTTP/1.1 20 OK", nil), ("HTTP/1.1 2000 OK", nil), ("HTTP/1.1 2x0 OK", nil), ("HTTP/1.1", nil),
        ("SSH-2.0-OpenSSH_9.2", nil), ("", nil), ("HTTP/1.1 +20 OK", nil),
    ] as [(String, Int?)])
    func statusLines(line: String, status: Int?) {
        #expect(UnixHTTPConnection.status(of: line) == status, "\(line)")
    }

    @Test func socketAndStateArePrivate() async throws {
        let d = try await TestDaemon.start()
        _ = try await d.client.send(.becomeCurrent(PutCurrentActivityRequest(content: Self.content())))
        #expect(try mode(d.socketPath) == 0o600)
        #expect(try mode(d.directory + "/run") == 0o700)
        #expect(try mode(d.stateDirectory) == 0o700)
        #expect(try mode(d.stateDirectory + "/current-activity") == 0o600)
        try await d.finish()
    }

    @Test func everyValueTypeRoundTripsThroughTheDaemon() async throws {
        let d = try await TestDaemon.start()
        let put = try await d.client.send(.becomeCurrent(PutCurrentActivityRequest(content: Self.content(userInfo: Self.everyValue))))
        let got = try await d.client.send(.currentActivity)
        #expect(got.activity == put.activity)
        #expect(got.activity.userInfo == Self.everyValue)
        #expect(got.activity.content == Self.content(userInfo: Self.everyValue))
        #expect(got.warnings.isEmpty)
        let resigned = try await d.client.send(.resignCurrent)
        #expect(resigned.resigned?.id == put.activity.id)
        await #expect(throws: HandoffClientError.self) { try await d.client.send(.currentActivity) }
        #expect(try await d.client.send(.resignCurrent).resigned == nil, "resigning twice is fine")
        try await d.finish()
    }

    @Test func badActivitiesAreRefusedAndChangeNothing() async throws {
        let d = try await TestDaemon.start(limits: ActivityLimits(maximumEncodedSize: 4096))
        let good = try await d.client.send(.becomeCurrent(PutCurrentActivityRequest(content: Self.content())))
        let cases: [(ActivityContent, APIErrorCode)] = [
            (ActivityContent(type: "nodots"), .invalidType),
            (ActivityContent(type: "a.b", title: "line\nbreak"), .invalidTitle),
            (ActivityContent(type: "a.b", webpageURL: "file:///etc/passwd"), .invalidWebpageURL),
            (ActivityContent(type: "a.b", userInfo: ["u": .url("no scheme")]), .invalidValue),
            (ActivityContent(type: "a.b", requiredUserInfoKeys: ["page"]), .missingRequiredKey),
            (ActivityContent(type: "a.b", userInfo: ["blob": .data(Data(count: 5000))]), .payloadTooLarge),
            (ActivityContent(type: "a.b", expirationDate: Timestamp.now().adding(seconds: -5)), .expired),
        ]
        for (content, code) in cases {
            do {
                _ = try await d.client.send(.becomeCurrent(PutCurrentActivityRequest(content: content)))
                Issue.record("accepted \(content)")
            } catch {
                #expect(error.code == .api(code), "\(error)")
                #expect(!error.message.contains("\n"))
            }
            #expect(try await d.client.send(.currentActivity).activity == good.activity, "state unchanged after \(code)")
        }
        try await d.finish()
    }

    @Test func largeActivitiesWarn() async throws {
        let d = try await TestDaemon.start()
        let r = try await d.client.send(.becomeCurrent(
            PutCurrentActivityRequest(content: Self.content(userInfo: ["blob": .data(Data(count: 4000))]))
        ))
        #expect(r.encodedSize > 4000)
        #expect(r.warnings.count == 1)
        #expect(r.warnings.first?.contains("3 KiB") == true)
        try await d.finish()
    }

    @Test func updatesKeepIdentityAndTypeIsImmutable() async throws {
        let d = try await TestDaemon.start()
        let first = try await d.client.send(.becomeCurrent(PutCurrentActivityRequest(content: Self.content()))).activity
        var changed = Self.content(userInfo: ["page": .int(4)])
        changed.title = "Report v2"
        let updated = try await d.client.send(.becomeCurrent(PutCurrentActivityRequest(id: first.id, content: changed))).activity
        #expect(updated.id == first.id)
        #expect(updated.createdAt == first.createdAt)
        #expect(updated.updatedAt >= first.updatedAt)
        #expect(updated.userInfo["page"] == .int(4))

        do {
            _ = try await d.client.send(.becomeCurrent(PutCurrentActivityRequest(id: first.id, content: Self.content("com.example.other"))))
            Issue.record("type changed")
        } catch {
            #expect(error.code == .api(.typeImmutable))
        }
        do {
            _ = try await d.client.send(.becomeCurrent(PutCurrentActivityRequest(id: UUID(), content: Self.content())))
            Issue.record("stale id accepted")
        } catch {
            #expect(error.code == .api(.activityChanged))
        }
        try await d.finish()
    }

    @Test func eventsArriveInOrder() async throws {
        let d = try await TestDaemon.start()
        let subscription = try await d.client.subscribe(.events)
        let a = try await d.client.send(.becomeCurrent(PutCurrentActivityRequest(content: Self.content()))).activity
        let b = try await d.client.send(.becomeCurrent(PutCurrentActivityRequest(content: Self.content("com.example.b")))).activity
        _ = try await d.client.send(.resignCurrent)
        #expect(try await subscription.next()?.body == .currentActivityChanged(a))
        #expect(try await subscription.next()?.body == .currentActivityChanged(b))
        #expect(try await subscription.next()?.body == .currentActivityResigned(activityID: b.id, reason: .resigned))
        try await d.stop()
        #expect(try await subscription.next() == nil, "the stream ends when the daemon stops")
        TempDirectory.remove(d.directory)
    }

    @Test func expiredActivitiesAreWithdrawn() async throws {
        let d = try await TestDaemon.start()
        let subscription = try await d.client.subscribe(.events)
        var content = Self.content()
        content.expirationDate = Timestamp.now().adding(seconds: 8)  // room for a loaded machine (the end-to-end suites run beside)
        let a = try await d.client.send(.becomeCurrent(PutCurrentActivityRequest(content: content))).activity
        #expect(try await subscription.next()?.body == .currentActivityChanged(a))
        #expect(try await subscription.next()?.body == .currentActivityResigned(activityID: a.id, reason: .expired))
        await #expect(throws: HandoffClientError.self) { try await d.client.send(.currentActivity) }
        try await d.finish()
    }

    @Test func theCurrentActivitySurvivesARestartUnlessItExpired() async throws {
        let first = try await TestDaemon.start()
        let a = try await first.client.send(.becomeCurrent(PutCurrentActivityRequest(content: Self.content(userInfo: Self.everyValue)))).activity
        try await first.stop()

        let clock = ManualDaemonClock()
        let second = try await TestDaemon.start(directory: first.directory) { $0.clock = clock }
        #expect(try await second.client.send(.currentActivity).activity == a)
        var brief = Self.content()
        let expiry = Timestamp.now().adding(seconds: 60)
        brief.expirationDate = expiry
        let made = try await second.client.send(.becomeCurrent(PutCurrentActivityRequest(content: brief))).activity
        #expect(try await second.client.send(.currentActivity).activity.id == made.id, "still current when the daemon stops (else this tests nothing)")
        try await second.stop()
        // The daemon is down while the activity expires.
        clock.advance(seconds: clock.now().microseconds(until: expiry) / 1_000_000 + 1)

        let third = try await TestDaemon.start(directory: first.directory) { $0.clock = clock }
        do {
            _ = try await third.client.send(.currentActivity)
            Issue.record("an activity that expired while the daemon was down came back")
        } catch {
            #expect(error.code == .api(.noCurrentActivity))
        }
        #expect(!FileManager.default.fileExists(atPath: third.stateDirectory + "/current-activity"))
        try await third.finish()
    }

    @Test func anUnreadableSavedActivityIsSetAsideNotLost() async throws {
        let dir = try TempDirectory.make()
        try FileManager.default.createDirectory(atPath: dir + "/state/handoff", withIntermediateDirectories: true)
        let garbage = Data("HO\u{2}not version one".utf8)
        try garbage.write(to: URL(fileURLWithPath: dir + "/state/handoff/current-activity"))
        let d = try await TestDaemon.start(directory: dir)
        await #expect(throws: HandoffClientError.self) { try await d.client.send(.currentActivity) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: d.stateDirectory + "/current-activity.unreadable")) == garbage)
        try await d.finish()
    }

    @Test func aSecondDaemonDoesNotStealTheSocketButAStaleOneIsReplaced() async throws {
        let d = try await TestDaemon.start()
        let config = DaemonConfiguration(socketPath: d.socketPath, stateDirectory: d.directory + "/state2")
        let intruder = try HandoffDaemon(configuration: config, logger: TestLogger.make("intruder"))
        do {
            try await intruder.run(handleSignals: false)
            Issue.record("a second daemon started on the same socket")
        } catch let e as DaemonError {
            #expect(e.code == .alreadyRunning)
            #expect(e.message.contains("already running"))
        }
        #expect(try await d.client.send(.status).pid == getpid(), "the first daemon still answers")
        try await d.stop()
        #expect(!FileManager.default.fileExists(atPath: d.socketPath), "a clean stop removes the socket")

        // A socket file whose daemon died (no one listening) must not block the next start.
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(d.socketPath.utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        close(fd)
        #expect(bound == 0)
        let restarted = try await TestDaemon.start(directory: d.directory)
        #expect(try await restarted.client.send(.status).socketPath == d.socketPath)
        try await restarted.finish()
    }

    @Test(arguments: ["laptop", "Ana's laptop", "ü/%?#", "", "%", "a%2", "😀 x"])
    func pathSegmentsSurviveTheTrip(text: String) {
        let escaped = PathSegment.escape(text)
        #expect(!escaped.contains(where: { "/?# ".contains($0) }))
        #expect(PathSegment.unescape(escaped) == text)
    }

    /// The route table: every endpoint has a row, no two rows take the same request.
    @Test func everyEndpointHasOneRoute() {
        let routes = LocalAPIEndpoints.routes
        #expect(Set(LocalAPIEndpoints.Endpoint.allCases.map { "\($0)" }) == Set(routes.map { "\($0.endpoint)" }))
        for route in routes {
            let path: Substring
            switch route.path {
            case .exact(let p): path = p[...]
            case .under(let p): path = (p + "/x")[...]
            case .window(let part): path = LocalAPIRoute.window("main", of: UUID(), part)[...]
            case .continuationAnswer: path = (LocalAPIRoute.apps + "/" + UUID().lowercasedString + "/continuations/" + UUID().lowercasedString)[...]
            }
            #expect(LocalAPIEndpoints.match(method: route.method, path: path) == .endpoint(route.endpoint), "\(route.method) \(path)")
        }
        // Each endpoint has one method, which the client takes from the same table.
        for endpoint in LocalAPIEndpoints.Endpoint.allCases {
            #expect(Set(routes.filter { $0.endpoint == endpoint }.map(\.method)) == [LocalAPIEndpoints.method(of: endpoint)], "\(endpoint)")
        }
        #expect(LocalAPIEndpoints.match(method: "GET", path: "/v1/nope") == .notFound)
        #expect(LocalAPIEndpoints.match(method: "PATCH", path: "/v1/devices/abc") == .methodNotAllowed(allowed: "DELETE"))
    }

    /// Every endpoint of the table reaches a handler: asked with an empty JSON object, none is
    /// answered "no endpoint" or `405` — a route a feature forgot to register would be (issue 55's
    /// router dispatches from what features register; this holds it to the table).
    @Test func everyEndpointReachesAHandler() async throws {
        let d = try await TestDaemon.start()
        let socketPath = d.socketPath
        for route in LocalAPIEndpoints.routes {
            let path: String
            switch route.path {
            case .exact(let p): path = p
            case .under(let p): path = p + "/" + UUID().lowercasedString
            case .window(let part): path = LocalAPIRoute.window("main", of: UUID(), part)
            case .continuationAnswer: path = LocalAPIRoute.apps + "/" + UUID().lowercasedString + "/continuations/" + UUID().lowercasedString
            }
            let (status, body) = try await onOwnThread { () -> (Int, String) in
                let c = try UnixHTTPConnection(socketPath: socketPath, timeoutSeconds: 30)
                try c.sendRaw("\(route.method) \(path) HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2\r\n\r\n", body: Array("{}".utf8))
                let head = try c.readHead()
                // An event stream answers 200 and goes on: its head is enough.
                guard head.status != 200 else { return (200, "") }
                return (head.status, String(decoding: try c.readRemainingBody(head), as: UTF8.self))
            }
            // (A handler may answer not_found of what it looks for; "no endpoint" is the router's.)
            #expect(status != 405 && !body.contains("no endpoint") && !body.contains("no stream endpoint"), "\(route.method) \(path) (\(route.endpoint)): \(status) \(body)")
        }
        try await d.finish()
    }

    /// Every endpoint of the contract is answered by exactly one feature, as the daemon's router
    /// registered them (`LocalRoutes`).
    @Test func everyEndpointIsOneFeatures() async throws {
        let d = try await TestDaemon.start()
        let owners = d.daemon.localRouteOwners
        for endpoint in LocalAPIEndpoints.Endpoint.allCases {
            #expect(owners[endpoint]?.count == 1, "\(endpoint): \(owners[endpoint] ?? [])")
        }
        try await d.finish()
    }

    /// The table says what is wrong with what features register: each endpoint no feature
    /// answers, and each two claim.
    @Test func theRouteTableNamesWhatIsMissingAndWhatIsClaimedTwice() {
        struct Feature: LocalRoutes {
            var feature: String
            var endpoints: [LocalAPIEndpoints.Endpoint]
            var handlers: [LocalAPIEndpoints.Endpoint: LocalHandler] { Dictionary(uniqueKeysWithValues: endpoints.map { endpoint -> (LocalAPIEndpoints.Endpoint, LocalHandler) in (endpoint, { @Sendable _ in .ok(["ok": true]) }) }) }
        }
        let all = LocalAPIEndpoints.Endpoint.allCases
        #expect(LocalRouteTable([]).faults.count == all.count)
        #expect(LocalRouteTable([Feature(feature: "one", endpoints: all)]).faults.isEmpty)
        let twice = LocalRouteTable([Feature(feature: "one", endpoints: all), Feature(feature: "two", endpoints: [.status])])
        #expect(twice.faults == ["status is claimed by one and two"])
        let short = LocalRouteTable([Feature(feature: "one", endpoints: Array(all.dropFirst()))])
        #expect(short.faults == ["\(all[0]) is answered by no feature"])
    }

    @Test func webOriginsUnknownRoutesAndOversizedBodiesAreRefused() async throws {
        let d = try await TestDaemon.start()
        let socketPath = d.socketPath
        // On a thread of its own: the in-process daemon answers on the cooperative pool.
        func raw(_ method: String, _ path: String, headers: String = "", body: [UInt8] = []) async throws -> (Int, String, String?) {
            try await onOwnThread {
                let c = try UnixHTTPConnection(socketPath: socketPath, timeoutSeconds: 10)
                try c.sendRaw("\(method) \(path) HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: \(body.count)\r\n\(headers)\r\n", body: body)
                let r = try c.readResponse()
                return (r.status, String(decoding: r.body, as: UTF8.self), r.header("allow"))
            }
        }
        let origin = try await raw("GET", "/v1/status", headers: "Origin: https://evil.example\r\n")
        #expect(origin.0 == 403 && origin.1.contains("forbidden_origin"))
        let referer = try await raw("GET", "/v1/activity/current", headers: "Referer: https://evil.example/\r\n")
        #expect(referer.0 == 403 && referer.1.contains("forbidden_origin"))
        let unknown = try await raw("GET", "/v1/nope")
        #expect(unknown.0 == 404 && unknown.1.contains("not_found"))
        let wrongMethod = try await raw("POST", "/v1/activity/current")
        #expect(wrongMethod.0 == 405 && wrongMethod.2 == "GET, PUT, DELETE")
        let wrongMethodUnder = try await raw("DELETE", "/v1/streams/0c8d")
        #expect(wrongMethodUnder.0 == 405 && wrongMethodUnder.2 == "GET, POST")
        let notJSON = try await raw("PUT", "/v1/activity/current", body: Array("{nope".utf8))
        #expect(notJSON.0 == 400 && notJSON.1.contains("bad_request"))
        let missingType = try await raw("PUT", "/v1/activity/current", body: Array(#"{"title":"x"}"#.utf8))
        #expect(missingType.0 == 400 && missingType.1.contains("type is missing"))
        let huge = try await raw("PUT", "/v1/activity/current", body: [UInt8](repeating: 0x20, count: 400_000))
        #expect(huge.0 == 413 && huge.1.contains("request_too_large"))
        // Far beyond: answered at once, while the client still sends (it reads the answer when its
        // sending fails). Before, the connection closed without one: "lost the connection".
        let farTooLarge = try await raw("PUT", "/v1/activity/current", body: [UInt8](repeating: 0x20, count: 8 << 20))
        #expect(farTooLarge.0 == 413 && farTooLarge.1.contains("request_too_large"))
        #expect(try await d.client.send(.status).currentActivity == nil)
        try await d.finish()
    }

    /// A client that sends half a request (a head cut short, a body shorter than it said), or
    /// keeps a connection idle after its answer, is closed after the request deadline
    /// (`Deadlines.localRequest`, 10 s; here 1 s) — not before it (here, a minute: they are still
    /// open after another client's whole exchange) — and an events stream, which only the daemon
    /// writes to, stays open.
    @Test func halfRequestsAndIdleConnectionsAreClosedInTime() async throws {
        func halfRequests(_ d: TestDaemon) async throws -> [(String, UnixHTTPConnection)] {
            let halfHead = try UnixHTTPConnection(socketPath: d.socketPath, timeoutSeconds: 120)
            try halfHead.sendRaw("GET /v1/status HTTP/1.1\r\nHost: x\r\n", body: [])
            let halfBody = try UnixHTTPConnection(socketPath: d.socketPath, timeoutSeconds: 120)
            try halfBody.sendRaw("PUT /v1/activity/current HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n", body: Array(#"{"type""#.utf8))
            let halfUpgrade = try UnixHTTPConnection(socketPath: d.socketPath, timeoutSeconds: 120)
            try halfUpgrade.sendRaw("POST /v1/streams HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgr", body: [])
            let idle = try UnixHTTPConnection(socketPath: d.socketPath, timeoutSeconds: 120)
            try idle.sendRaw("GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n", body: [])
            // Blocking reads go to threads of their own: the in-process daemon answers on the pool.
            let idleBox = UncheckedBox(idle)
            #expect(try await onOwnThread { try idleBox.value.readResponse().status } == 200)
            return [("half a head", halfHead), ("half a body", halfBody), ("half an upgrade", halfUpgrade), ("idle", idle)]
        }

        // Not before the deadline.
        let patient = try await TestDaemon.start()
        let waiting = try await halfRequests(patient)
        _ = try await patient.client.send(.status)
        for (name, connection) in waiting {
            #expect(connection.isOpenAndSilent, "\(name): closed or answered before the request deadline")
        }
        try await patient.finish()

        let d = try await TestDaemon.start { $0.deadlines.localRequest = .seconds(1) }
        let connections = try await halfRequests(d)
        let events = try await d.client.subscribe(.events)
        // Each read blocks until the daemon closes the connection: on threads of their own.
        await withTaskGroup(of: Void.self) { group in
            for (name, connection) in connections {
                let box = UncheckedBox(connection)
                group.addTask {
                    let outcome = try? await onOwnThread { () -> String in
                        do {
                            return "answered \(try box.value.readResponse().status)"
                        } catch {
                            return "closed: \(error)"
                        }
                    }
                    #expect(outcome?.hasPrefix("closed") == true, "\(name): closed without an answer, not \(outcome ?? "?")")
                }
            }
        }
        // The events stream outlived the timeout: it still delivers.
        _ = try await d.client.send(.becomeCurrent(PutCurrentActivityRequest(content: ActivityContent(type: "com.example.late", title: "Late"))))
        var sawIt = false
        while let event = try await events.next() {
            if case .currentActivityChanged(let a) = event.body, a.type == "com.example.late" {
                sawIt = true
                break
            }
        }
        #expect(sawIt, "the events stream is still open after the request timeout")
        try await d.finish()
    }

    /// The budget of local connections by a table (issue 54): at most `maximum` open, the first
    /// one turned away said once; a burst (64 open) ending (8 or fewer left) gives memory back,
    /// once per burst.
    @Test func localConnectionsAreBoundedAndABurstEndsOnce() {
        var budget = LocalConnectionBudget(maximum: 100)
        var answers: [LocalConnectionBudget.Admission] = []
        for _ in 0..<102 { answers.append(budget.opened()) }
        #expect(answers.prefix(100).allSatisfy { $0 == .admitted })
        #expect(answers.suffix(2) == [.refused(first: true), .refused(first: false)], "the first turned away is said once")
        var ends = 0
        for _ in 0..<2 where budget.closed(.refused(first: false)) { ends += 1 }
        #expect(budget.open == 100 && budget.served == 100)
        #expect(budget.opened() == .refused(first: false), "still full")
        for _ in 0..<92 where budget.closed(.admitted) { ends += 1 }
        #expect(ends == 0 && budget.open == 9 && budget.served == 8, "9 still open, one turned away: the burst goes on")
        #expect(budget.opened() == .admitted, "a slot again")
        #expect(budget.opened() == .admitted)
        for _ in 0..<2 where budget.closed(.admitted) { ends += 1 }
        #expect(ends == 0)
        let over = budget.closed(.refused(first: false))
        #expect(over, "8 left: the burst is over")
        #expect(budget.peak == 8)
        for _ in 0..<8 where budget.closed(.admitted) { ends += 1 }
        for _ in 0..<63 { answers.append(budget.opened()) }
        for _ in 0..<63 where budget.closed(.admitted) { ends += 1 }
        #expect(ends == 0 && budget.open == 0 && budget.served == 0, "no burst since: 63 open at most")
        // Turned away beyond 64 at once: closed unanswered, so that descriptors stay bounded.
        var small = LocalConnectionBudget(maximum: 1)
        _ = small.opened()
        var refusals: [LocalConnectionBudget.Admission] = []
        for _ in 0..<66 { refusals.append(small.opened()) }
        #expect(refusals.filter { if case .refused = $0 { true } else { false } }.count == LocalConnectionBudget.answeredRefusals)
        #expect(refusals.suffix(2) == [.dropped, .dropped] && small.answering == 64)
        _ = small.closed(.refused(first: false))
        #expect(small.opened() == .refused(first: false), "one answered went: room for one more")
    }

    /// A client that opens more local connections than handoffd takes (here 8) gets a clear
    /// answer on the next — 429 `rate_limited`, whatever it asked — and a slot again once one
    /// closes; and a burst of connections (100) ending gives its memory back, once.
    @Test func tooManyLocalConnectionsAreToldSoAndABurstGivesItsMemoryBack() async throws {
        let limited = try await TestDaemon.start { $0.localConnections = 8 }
        let socketPath = limited.socketPath
        var held: [UnixHTTPConnection] = []
        for _ in 0..<8 {
            let connection = try UnixHTTPConnection(socketPath: socketPath, timeoutSeconds: 60)
            try connection.sendRaw("GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n", body: [])
            let box = UncheckedBox(connection)
            #expect(try await onOwnThread { try box.value.readResponse().status } == 200)
            held.append(connection)
        }
        func ninth() async throws -> (Int, String) {
            try await onOwnThread {
                let c = try UnixHTTPConnection(socketPath: socketPath, timeoutSeconds: 60)
                try c.sendRaw("GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n", body: [])
                let r = try c.readResponse()
                return (r.status, String(decoding: r.body, as: UTF8.self))
            }
        }
        let refused = try await ninth()
        #expect(refused.0 == 429 && refused.1.contains("rate_limited") && refused.1.contains("8 local connections open already"), "\(refused)")
        await expectFailure(.rateLimited) { _ = try await limited.client.send(.status) }
        held.removeLast().hangUp()
        try await waitUntil("a slot again") { (try? await limited.client.send(.status)) != nil }
        held.forEach { $0.hangUp() }
        try await limited.finish()

        let trims = Mutex(0)
        let d = try await TestDaemon.start { $0.localBurstEnded = { trims.withLock { $0 += 1 } } }
        var burst: [UnixHTTPConnection] = []
        for _ in 0..<100 { burst.append(try UnixHTTPConnection(socketPath: d.socketPath, timeoutSeconds: 60)) }
        _ = try await d.client.send(.status)  // all of them were accepted before it
        #expect(trims.withLock { $0 } == 0)
        burst.forEach { $0.hangUp() }
        try await waitUntil("the burst's memory given back") { trims.withLock { $0 } == 1 }
        for _ in 0..<20 { _ = try await d.client.send(.status) }
        #expect(trims.withLock { $0 } == 1, "once per burst")
        try await d.finish()
    }

    @Test func aSlowEventReaderIsCutOffRatherThanGivenGaps() async {
        let hub = EventHub(bufferLimit: 2)
        let stream = hub.subscribe()
        for i in 0..<5 {
            hub.publish(LocalEvent(at: Timestamp(microsecondsSinceEpoch: Int64(i)), .unknown(name: "e\(i)")))
        }
        var seen: [String] = []
        for await event in stream { seen.append(event.body.name) }
        #expect(seen == ["e0", "e1"], "the stream ended after the buffer overflowed")
        #expect(hub.subscriberCount == 0)
    }

    /// A subscriber that follows only some events is given only those (the others would wake
    /// its thread for nothing), and overflows by them alone.
    @Test func aSubscriberGetsOnlyTheEventsItFollows() async {
        let hub = EventHub(bufferLimit: 2)
        let stream = hub.subscribe(only: { $0.body.name.hasPrefix("kept") })
        for name in ["dropped0", "kept1", "dropped2", "kept3", "dropped4", "dropped5"] {
            hub.publish(LocalEvent(at: Timestamp(microsecondsSinceEpoch: 0), .unknown(name: name)))
        }
        #expect(hub.subscriberCount == 1, "four events it does not follow did not overflow its two places")
        hub.publish(LocalEvent(at: Timestamp(microsecondsSinceEpoch: 0), .unknown(name: "kept6")))
        var seen: [String] = []
        for await event in stream { seen.append(event.body.name) }
        #expect(seen == ["kept1", "kept3"], "the third it follows overflowed it")
    }
}

func mode(_ path: String) throws -> mode_t {
    var st = stat()
    guard lstat(path, &st) == 0 else { throw TestFailure("lstat \(path): \(errno)") }
    return st.st_mode & 0o7777
}

extension UnixHTTPConnection {
    func sendRaw(_ head: String, body: [UInt8]) throws(HandoffClientError) {
        try writeAll(Array(head.utf8) + body)
    }

    /// Connected, and nothing came from the daemon (neither an answer nor its close).
    var isOpenAndSilent: Bool { SocketProbe.isOpenAndSilent(fd) }
}

/// A connection handed to the thread that reads it (one reader at a time).
final class UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
