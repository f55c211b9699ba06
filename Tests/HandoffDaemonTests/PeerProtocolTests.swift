import Foundation
import HandoffModel
import HandoffPeer
import HandoffTLS
import HandoffTestSupport
import Testing

@testable import DaemonAccounts
@testable import DaemonCore
@testable import DaemonLinks
@testable import HandoffDaemon

@Suite(.timeLimit(.minutes(3))) struct PeerProtocolTests {
    static let id = DeviceID(digest: Array(repeating: 5, count: 32))

    /// What a dialler offers, in order, while the other side does not know the key (docs/security.md).
    @Test(arguments: [
        (HelloAddressee.advert(id, instanceName: "x"), 2, false, ["0 advert", "0 device", "1 device"]),
        (.advert(id, instanceName: "x"), 1, false, ["0 advert", "0 device"]),
        (.advert(id, instanceName: "x"), 2, true, ["resume advert", "0 advert", "0 device", "1 device"]),
        (.device(id), 2, false, ["0 device", "1 device"]),
        (.device(id), 1, true, ["resume device", "0 device"]),
        (.anyone, 2, false, ["0 anyone", "1 anyone"]),
        (.anyone, 1, false, ["0 anyone"]),
    ])
    func helloAttemptsGoFromNarrowToWide(addressee: HelloAddressee, generations: Int, resuming: Bool, expected: [String]) {
        #expect(Self.attempts(PeerDialer.helloAttempts(addressee, secretGenerations: generations, resuming: resuming)) == expected)
    }

    /// A dial at start to where a device was last reached offers its advert of then, and nothing
    /// wider: not the device alone, not the previous secret (docs/security.md, "A captured ClientHello").
    @Test(arguments: [(2, false, ["0 advert"]), (1, false, ["0 advert"]), (2, true, ["resume advert", "0 advert"])])
    func aRememberedDialOffersOnlyTheAdvertItRemembers(generations: Int, resuming: Bool, expected: [String]) {
        let only = PeerDialer.helloAttempts(.advert(Self.id, instanceName: "x"), secretGenerations: generations, resuming: resuming, asAddressedOnly: true)
        #expect(Self.attempts(only) == expected)
    }

    static func attempts(_ attempts: [PeerDialer.HelloAttempt]) -> [String] {
        attempts.map { attempt in
            let key = attempt.resume ? "resume" : "\(attempt.generation)"
            switch attempt.addressee {
            case .advert: return "\(key) advert"
            case .device: return "\(key) device"
            case .anyone: return "\(key) anyone"
            }
        }
    }

    @Test func everyMessageRoundTrips() throws {
        let state = SignedAccountState(stateBytes: [1, 2, 3], signature: Array(repeating: 9, count: 64))
        let messages: [PeerMessage] = [
            .hello(PeerHello(deviceID: Self.id, deviceName: "desk", accountStateVersion: 7)),
            .hello(PeerHello(deviceID: Self.id, deviceName: "desk", accountStateVersion: 7, clock: Timestamp(microsecondsSinceEpoch: 1_795_000_000_123_456))),
            .hello(PeerHello(deviceID: Self.id, deviceName: "desk", accountStateVersion: 7, clock: Timestamp(microsecondsSinceEpoch: 1), keyRotations: 2)),
            .accountState(state, accountSecret: Array(repeating: 4, count: 32)),
            .activityNotice(ActivityNotice(sequence: 99, activity: nil)),
            .activityNotice(
                ActivityNotice(
                    sequence: 100,
                    activity: ActivitySummary(
                        id: UUID(), type: "com.example.edit", title: "Report", updatedAt: Timestamp(secondsSinceEpoch: 1_800_000_000),
                        expirationDate: Timestamp(secondsSinceEpoch: 1_800_000_600), supportsContinuationStreams: true
                    )
                )
            ),
            .getActivity(requestID: 7, seenID: UUID()),
            .getActivity(requestID: 8, seenID: nil),
            .activity(requestID: 9, encoded: [1, 2, 3]),
            .activityUnavailable(requestID: 10, ActivityUnavailable(.changed, currentID: UUID(), message: "now something else")),
            .activityUnavailable(requestID: 11, ActivityUnavailable(.none, message: "nothing")),
            .joinRequest(JoinRequest(deviceName: "laptop", publicKey: Array(repeating: 1, count: 32))),
            .joinAccepted(JoinAccepted(deviceCertificate: [1], rootCertificate: [2], accountState: state, accountSecret: Array(repeating: 3, count: 32))),
            .joinRefused(JoinRefusal(.expired, "too late")),
            .failure(PeerFailure(.revoked, "gone")),
            .activityContinued(activityID: UUID()),
            .openStream(activityID: UUID()),
            .streamAccepted(streamID: UUID()),
            .streamRefused(StreamRefusal(.noServer, "no app serves streams")),
            .savedDeletions([]),
            .activityTarget(sequence: 7, target: "item-7"),
            .activityTarget(sequence: 1 << 40, target: nil),
            .clipboardNotice(ClipboardNotice(copiedAt: Timestamp(microsecondsSinceEpoch: 1_700_000_000_000_000), lifetimeSeconds: 120, items: [
                ClipboardItem(type: "text/plain;charset=utf-8", size: 11), ClipboardItem(type: "image/png", size: 5 << 20),
            ])),
            .clipboardNotice(ClipboardNotice(copiedAt: Timestamp(microsecondsSinceEpoch: 0), lifetimeSeconds: 1, items: [])),
            .openClipboardStream(copyID: UUID(), type: "image/png"),
            .openClipboardStream(copyID: UUID(), type: "text/uri-list#999"),
            .keyOffer(offerID: UUID(), expiresAt: Timestamp(microsecondsSinceEpoch: 1_800_000_000_000_000)),
            .keyAccept(requestID: 12, offerID: UUID()),
            .keyHandover(requestID: 13, rootKey: Array(repeating: 5, count: 32), state: state, accountSecret: Array(repeating: 4, count: 32)),
            .keyRefused(requestID: 14, message: "no such offer"),
            .keyStored(offerID: UUID()),
            .renewCertificate(requestID: 15, publicKey: Array(repeating: 6, count: 32)),
            .certificateRenewed(requestID: 16, certificate: [0x30, 1, 2]),
            .certificateRenewed(requestID: 17, certificate: []),
            .advertName(instanceName: "q7xk2mbv0a4hj9ts", port: 47810),
            .advertName(instanceName: String(repeating: "é", count: 31) + "x", port: 1),
            .savedDeletions([
                SavedActivityDeletion(at: Timestamp(microsecondsSinceEpoch: 1_700_000_000_000_000), persistentIdentifiers: ["note-7", "home:ü.txt"]),
                SavedActivityDeletion(at: Timestamp(microsecondsSinceEpoch: -5), types: ["org.example.notes.edit"], everything: true),
            ]),
        ]
        for message in messages {
            let (kind, payload) = message.encodedPayload()
            #expect(try PeerMessage(kind: kind, payload: payload) == message)
            // A hello's last fields are optional (older peers send fewer): read either way.
            if case .hello = message { continue }
            #expect(throws: PeerMessageError.self) { try PeerMessage(kind: kind, payload: payload + [0]) }
            if !payload.isEmpty {
                #expect(throws: PeerMessageError.self) { try PeerMessage(kind: kind, payload: Array(payload.dropLast())) }
            }
        }
        // A newer peer's message is skipped, not fatal.
        #expect(try PeerMessage(kind: 200, payload: [1, 2]) == .unknown(kind: 200))
        // An advert name is one DNS label, and a port is never 0.
        for bad in [PeerMessage.advertName(instanceName: "", port: 1), .advertName(instanceName: String(repeating: "a", count: 64), port: 1), .advertName(instanceName: "a", port: 0)] {
            let (kind, payload) = bad.encodedPayload()
            #expect(throws: PeerMessageError.self) { try PeerMessage(kind: kind, payload: payload) }
        }
    }

    @Test func randomPayloadsNeverCrashTheDecoder() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let kind = UInt8.random(in: 0...32, using: &rng)
            let payload = (0..<Int.random(in: 0..<64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            _ = try? PeerMessage(kind: kind, payload: payload)
        }
    }

    @Test func peerAddresses() throws {
        #expect(try PeerAddress(parsing: "192.168.1.4:5000", defaultPort: 1) == PeerAddress(host: "192.168.1.4", port: 5000))
        #expect(try PeerAddress(parsing: "desk.local", defaultPort: 47810) == PeerAddress(host: "desk.local", port: 47810))
        #expect(try PeerAddress(parsing: "[fe80::1%eth0]:47810", defaultPort: 1) == PeerAddress(host: "fe80::1%eth0", port: 47810))
        #expect(try PeerAddress(parsing: "[::1]", defaultPort: 9) == PeerAddress(host: "::1", port: 9))
        #expect(PeerAddress(host: "::1", port: 9).description == "[::1]:9")
        for bad in ["", ":80", "host:", "host:0", "host:70000", "[::1", "[::1]80", "a b:1", "host:port"] {
            #expect(throws: (any Error).self, "\(bad)") { try PeerAddress(parsing: bad, defaultPort: 47810) }
        }
    }

    @Test func admissionLimitsHandshakesUnauthenticatedConnectionsAndWrongCodes() {
        var limits = AdmissionLimits()
        limits.handshakesPerMinute = 3
        limits.maximumUnauthenticated = 4
        limits.reservedForMembers = 1
        limits.perAddress = 2
        limits.joinFailures = 2
        limits.penaltySeconds = 60
        let control = AdmissionControl(limits: limits)
        let t0 = ContinuousClock.now
        // One address: two at a time, three a minute.
        #expect((0..<3).map { _ in control.admit("10.0.0.1", now: t0) } == [.admitted, .admitted, .rateLimited])
        control.settled("10.0.0.1")
        #expect(control.admit("10.0.0.1", now: t0) == .admitted)
        control.settled("10.0.0.1")
        #expect(control.admit("10.0.0.1", now: t0) == .rateLimited, "three this minute")
        // Strangers share what is not reserved for members…
        #expect(control.admit("10.0.0.2", now: t0) == .admitted)
        #expect(control.admit("10.0.0.3", now: t0) == .admitted)
        #expect(control.admit("10.0.0.4", now: t0) == .tooManyUnauthenticated)
        // …and an address that completed a member handshake takes the reserved slot, without a
        // per-minute budget, up to the whole cap.
        control.memberAuthenticated("10.0.0.9", now: t0)
        #expect(control.admit("10.0.0.9", now: t0) == .admitted)
        #expect(control.admit("10.0.0.9", now: t0) == .tooManyUnauthenticated)
        for address in ["10.0.0.1", "10.0.0.2", "10.0.0.9"] { control.settled(address) }
        #expect(control.unauthenticatedCount == 1)
        #expect((0..<5).map { _ in control.admit("10.0.0.9", now: t0) }.filter { $0 == .admitted }.count == 3, "a member's address: the whole cap")
        #expect(control.admit("10.0.0.1", now: t0 + .seconds(20)) == .tooManyUnauthenticated)
        (0..<3).forEach { _ in control.settled("10.0.0.9") }
        #expect(control.admit("10.0.0.1", now: t0 + .seconds(20)) == .admitted, "a token back after 20 s")
        // Wrong join codes shut an address out, and the verdict says the address is refused.
        control.joinFailed("10.0.0.3", now: t0)
        control.joinFailed("10.0.0.3", now: t0)
        let penalised = control.admit("10.0.0.3", now: t0 + .seconds(30))
        #expect(penalised == .penalised && penalised.refusesTheAddress)
        #expect(!AdmissionControl.Verdict.tooManyUnauthenticated.refusesTheAddress)
        #expect(control.admit("10.0.0.3", now: t0 + .seconds(61)) == .admitted)
    }

    @Test func invitesAreSingleUseAndRememberWhyTheyEnded() {
        let clock = ManualDaemonClock()
        let book = InviteBook(lifetimeSeconds: 600, clock: clock)
        let (code, _, _) = book.create()
        let identity = JoinPSK(code: code).identity
        #expect(book.psk(forIdentity: identity) == JoinPSK(code: code).key)
        #expect(book.psk(forIdentity: [1, 2, 3]) == nil)
        #expect(book.claim(identity) == .granted)
        #expect(book.claim(identity) == .alreadyUsed)
        let (dropped, _, _) = book.create()
        book.cancel(JoinPSK(code: dropped).identity)
        #expect(book.psk(forIdentity: JoinPSK(code: dropped).identity) == nil, "a cancelled code is forgotten")
        let (late, _, _) = book.create()
        #expect(book.newestPending() == late)
        clock.advance(seconds: 601)
        #expect(book.claim(JoinPSK(code: late).identity) == .expired)
        #expect(book.newestPending() == nil)
    }
}
