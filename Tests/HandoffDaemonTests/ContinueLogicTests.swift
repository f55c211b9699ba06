import Foundation
import HandoffAPI
import HandoffModel
import HandoffPeer
import HandoffTestSupport
import Testing

@testable import DaemonContinue
@testable import DaemonCore
@testable import DaemonSessions
@testable import HandoffDaemon

/// How a device answers "send me your current activity", and how the asker reads the answer.
@Suite(.timeLimit(.minutes(3))) struct ContinueLogicTests {
    static let now = Timestamp(rfc3339: "2026-11-22T10:00:00Z")!

    static func activity(expires: Timestamp? = nil) -> Activity {
        Activity(
            content: ActivityContent(type: "com.example.edit", title: "Report", userInfo: ["page": .int(3)], expirationDate: expires),
            createdAt: now
        )
    }

    func expectError(_ code: APIErrorCode, _ body: () throws -> Activity, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            _ = try body()
            Issue.record("no error, expected \(code)", sourceLocation: sourceLocation)
        } catch let error as DaemonError {
            #expect(APIErrorCode(error.code) == code, "\(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func theAskerNamesEveryReasonThereIsNoActivity() throws {
        let a = Self.activity()
        let encoded = ActivityEncoding.encode(a)
        #expect(try ActivityFetch.interpret(.activity(requestID: 1, encoded: encoded), seenID: a.id, peerName: "desk", maximumActivityBytes: 65536, now: Self.now) == a)
        #expect(try ActivityFetch.interpret(.activity(requestID: 1, encoded: encoded), seenID: nil, peerName: "desk", maximumActivityBytes: 65536, now: Self.now) == a)
        expectError(.activityChanged) {
            try ActivityFetch.interpret(.activity(requestID: 1, encoded: encoded), seenID: UUID(), peerName: "desk", maximumActivityBytes: 65536, now: Self.now)
        }
        expectError(.activityChanged) {
            try ActivityFetch.interpret(
                .activityUnavailable(requestID: 1, ActivityUnavailable(.changed, currentID: UUID(), message: "now another")), seenID: a.id,
                peerName: "desk", maximumActivityBytes: 65536, now: Self.now
            )
        }
        expectError(.noCurrentActivity) {
            try ActivityFetch.interpret(.activityUnavailable(requestID: 1, ActivityUnavailable(.none, message: "")), seenID: nil, peerName: "desk", maximumActivityBytes: 65536)
        }
        expectError(.expired) {
            try ActivityFetch.interpret(.activityUnavailable(requestID: 1, ActivityUnavailable(.expired, message: "")), seenID: nil, peerName: "desk", maximumActivityBytes: 65536)
        }
        // An activity that expired on the way, or that breaks the rules, or is too big, is refused.
        let late = ActivityEncoding.encode(Self.activity(expires: Self.now.adding(seconds: 1)))
        expectError(.expired) {
            try ActivityFetch.interpret(.activity(requestID: 1, encoded: late), seenID: nil, peerName: "desk", maximumActivityBytes: 65536, now: Self.now.adding(seconds: 2))
        }
        expectError(.refused) {
            try ActivityFetch.interpret(.activity(requestID: 1, encoded: encoded), seenID: nil, peerName: "desk", maximumActivityBytes: 16, now: Self.now)
        }
        expectError(.refused) {
            try ActivityFetch.interpret(.activity(requestID: 1, encoded: [0x48, 0x4F, 0x01, 0xFF]), seenID: nil, peerName: "desk", maximumActivityBytes: 65536)
        }
        expectError(.versionMismatch) {
            try ActivityFetch.interpret(.activity(requestID: 1, encoded: [0x48, 0x4F, 0x02]), seenID: nil, peerName: "desk", maximumActivityBytes: 65536)
        }
        expectError(.versionMismatch) {
            try ActivityFetch.interpret(.hello(PeerHello(deviceID: DeviceID(digest: Array(repeating: 1, count: 32)), deviceName: "x", accountStateVersion: 1)),
                                       seenID: nil, peerName: "desk", maximumActivityBytes: 65536)
        }
    }

    @Test func theOriginatorAnswersWithTheActivityOnlyIfItIsTheOneSeen() async throws {
        let dir = try TempDirectory.make()
        defer { TempDirectory.remove(dir) }
        let registry = ActivityRegistry(stateDirectory: dir, limits: ActivityLimits(), events: EventHub(), logger: TestLogger.make("t"))
        #expect(await ActivityAnswer.answer(1, seen: nil, registry: registry) == .activityUnavailable(requestID: 1, ActivityUnavailable(.none, message: "there is no current activity")))
        let current = try await registry.becomeCurrent(PutCurrentActivityRequest(content: ActivityContent(type: "com.example.a", title: "A"))).activity
        #expect(await ActivityAnswer.answer(2, seen: current.id, registry: registry) == .activity(requestID: 2, encoded: ActivityEncoding.encode(current)))
        #expect(await ActivityAnswer.answer(3, seen: nil, registry: registry) == .activity(requestID: 3, encoded: ActivityEncoding.encode(current)))
        guard case .activityUnavailable(4, let why) = await ActivityAnswer.answer(4, seen: UUID(), registry: registry) else {
            Issue.record("a stale id was answered with an activity")
            return
        }
        #expect(why.reason == .changed)
        #expect(why.currentID == current.id)
        var brief = ActivityContent(type: "com.example.brief", title: "B")
        brief.expirationDate = Timestamp.now().adding(seconds: 10)
        let expiring = try await registry.becomeCurrent(PutCurrentActivityRequest(content: brief)).activity
        let later = Timestamp.now().adding(seconds: 20)
        #expect(
            await ActivityAnswer.answer(5, seen: expiring.id, registry: registry, now: later)
                == .activityUnavailable(requestID: 5, ActivityUnavailable(.expired, currentID: expiring.id, message: "the activity expired"))
        )
        await registry.stop()
    }
}
