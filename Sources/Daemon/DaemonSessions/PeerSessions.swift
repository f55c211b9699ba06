import DaemonAccounts
import HandoffAPI
import HandoffModel
import HandoffPeer
import HandoffTLS
import Logging
import NIOCore

/// What two member devices say first, whichever side dialled.
///
/// The server speaks first: in TLS 1.3 the client's handshake ends before the server has judged
/// the client's certificate, so the client counts itself accepted only when this hello arrives.
/// Then each side sends its account state if the other's is older, so revocations spread.
enum MemberGreeting {
    struct Outcome: Sendable {
        var peer: PeerHello
        /// What this device said: its state then.
        var mine: PeerHello
        var learnedNewerState: Bool

        /// The state the other device holds after the greeting: its own, or ours if newer.
        var peerHas: AccountStateRank { max(peer.stateRank, mine.stateRank) }
    }

    static let deadline: TimeAmount = .seconds(10)

    static func asServer(
        peerID: DeviceID,
        connection: PeerConnection,
        inbound: inout NIOAsyncChannelInboundStream<PeerMessage>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<PeerMessage>,
        store: AccountStore
    ) async throws -> Outcome {
        guard let mine = await store.hello() else { throw PeerSessionError.noAccount }
        try await outbound.write(.hello(mine))
        let theirs = try await expectHello(from: peerID, connection: connection, inbound: &inbound)
        return try await afterHellos(mine: mine, theirs: theirs, connection: connection, inbound: &inbound, outbound: outbound, store: store)
    }

    static func asClient(
        peerID: DeviceID,
        connection: PeerConnection,
        inbound: inout NIOAsyncChannelInboundStream<PeerMessage>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<PeerMessage>,
        store: AccountStore
    ) async throws -> Outcome {
        let theirs = try await expectHello(from: peerID, connection: connection, inbound: &inbound)
        guard let mine = await store.hello() else { throw PeerSessionError.noAccount }
        try await outbound.write(.hello(mine))
        return try await afterHellos(mine: mine, theirs: theirs, connection: connection, inbound: &inbound, outbound: outbound, store: store)
    }

    /// Once both have spoken: larger frames are allowed, and the older account state is updated.
    private static func afterHellos(
        mine: PeerHello,
        theirs: PeerHello,
        connection: PeerConnection,
        inbound: inout NIOAsyncChannelInboundStream<PeerMessage>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<PeerMessage>,
        store: AccountStore
    ) async throws -> Outcome {
        connection.limit.raise(to: FrameLimit.member)
        let learned = try await exchangeStates(mine: mine, theirs: theirs, connection: connection, inbound: &inbound, outbound: outbound, store: store)
        return Outcome(peer: theirs, mine: mine, learnedNewerState: learned)
    }

    private static func expectHello(
        from peerID: DeviceID,
        connection: PeerConnection,
        inbound: inout NIOAsyncChannelInboundStream<PeerMessage>.AsyncIterator
    ) async throws -> PeerHello {
        let message = try await receive(&inbound, connection: connection, within: deadline)
        switch message {
        case .hello(let hello):
            guard hello.protocolVersion == PeerHello.currentProtocolVersion else {
                throw PeerSessionError.versionMismatch(hello.protocolVersion)
            }
            guard hello.deviceID == peerID else { throw PeerSessionError.unexpected("a hello naming another device") }
            return hello
        case .failure(let f):
            throw PeerSessionError.peerFailed(f)
        case .removed(let notice):
            throw PeerSessionError.removed(notice)
        default:
            throw PeerSessionError.unexpected("\(message)")
        }
    }

    private static func exchangeStates(
        mine: PeerHello,
        theirs: PeerHello,
        connection: PeerConnection,
        inbound: inout NIOAsyncChannelInboundStream<PeerMessage>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<PeerMessage>,
        store: AccountStore
    ) async throws -> Bool {
        if mine.stateRank > theirs.stateRank, let (signed, secret) = await store.stateToShare(with: theirs.deviceID) {
            try await outbound.write(.accountState(signed, accountSecret: secret ?? []))
        }
        guard theirs.stateRank > mine.stateRank else { return false }
        let message = try await receive(&inbound, connection: connection, within: deadline)
        guard case .accountState(let signed, let secret) = message else { throw PeerSessionError.unexpected("\(message)") }
        return await store.adopt(signed, accountSecret: secret) == .updated
    }

    /// The next message, or a failure if none arrives within `deadline` (the channel is closed).
    static func receive(
        _ inbound: inout NIOAsyncChannelInboundStream<PeerMessage>.AsyncIterator,
        connection: PeerConnection,
        within deadline: TimeAmount
    ) async throws -> PeerMessage {
        let channel = connection.channel.channel
        let timer = channel.eventLoop.scheduleTask(in: deadline) { channel.close(promise: nil) }
        defer { timer.cancel() }
        guard let message = try await inbound.next() else { throw PeerSessionError.closed }
        return message
    }
}

package enum PeerSessionError: Error, CustomStringConvertible {
    case noAccount
    case closed
    case versionMismatch(UInt16)
    case unexpected(String)
    case peerFailed(PeerFailure)
    /// The other device says this one was removed from the account.
    case removed(RemovalNotice)

    package var description: String {
        switch self {
        case .noAccount: "this device has no account"
        case .closed: "the other device closed the connection"
        case .versionMismatch(let v): "the other device speaks peer protocol \(v), we speak \(PeerHello.currentProtocolVersion)"
        case .unexpected(let what): "the other device sent \(what) out of turn"
        case .peerFailed(let f): "the other device reported: \(f.message)"
        case .removed: "the other device says this one was removed from the account"
        }
    }
}

/// The listening side of each accepted, authenticated connection.
enum ServerSessions {
    static func serveMember(_ peerID: DeviceID, connection: PeerConnection, store: AccountStore, sessions: MemberSessions) async throws {
        try await connection.channel.executeThenClose { inbound, outbound in
            var messages = inbound.makeAsyncIterator()
            let greeting = try await MemberGreeting.asServer(peerID: peerID, connection: connection, inbound: &messages, outbound: outbound, store: store)
            await sessions.serve(greeting, connection: connection, initiatedByUs: false, messages: &messages, outbound: outbound)
        }
    }

    /// A removed device of the account connected: it gets its removal notice — or, for a
    /// removal recorded without one, a failure saying so — and the connection ends.
    static func tellRemoved(_ id: DeviceID, connection: PeerConnection, store: AccountStore, logger: Logger) async {
        let notice = await store.removalNotice(for: id)
        try? await connection.channel.executeThenClose { _, outbound in
            try await outbound.write(notice.map { .removed($0) } ?? .failure(PeerFailure(.revoked, "this device has been removed from the account")))
        }
        logger.notice("told a removed device so", metadata: ["remote": "\(connection.remote)", "peer": "\(id.short)"])
    }

    static func serveJoiner(pskIdentity: [UInt8], connection: PeerConnection, store: AccountStore, logger: Logger) async throws {
        try await connection.channel.executeThenClose { inbound, outbound in
            var messages = inbound.makeAsyncIterator()
            let message = try await MemberGreeting.receive(&messages, connection: connection, within: .seconds(30))
            guard case .joinRequest(let request) = message else {
                try await outbound.write(.joinRefused(JoinRefusal(.invalidRequest, "expected a join request")))
                return
            }
            let reply = await store.handleJoin(pskIdentity: pskIdentity, request: request)
            try await outbound.write(reply)
            if case .joinRefused(let r) = reply {
                logger.notice("join refused", metadata: ["remote": "\(connection.remote)", "reason": "\(r.reason)"])
            }
        }
    }
}
