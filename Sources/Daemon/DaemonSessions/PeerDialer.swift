import DaemonCore
import HandoffAPI
import HandoffModel
import HandoffPeer
import HandoffTLS
import Logging
import NIOCore
import NIOPosix

/// Connecting to another device, and turning what can go wrong into messages a user can act on.
package enum PeerDialer {
    package static let connectTimeout: TimeAmount = .seconds(5)

    /// Connects and completes the TLS handshake. For member connections the other side may still
    /// refuse us afterwards (TLS 1.3); `MemberGreeting.asClient` waits for its hello to know.
    ///
    /// When the other device does not know the key we offered, we try again (`helloAttempts`).
    static func connect(
        _ address: PeerAddress, context: TLSContext, expectedPeer: DeviceID? = nil, addressee: HelloAddressee = .anyone, asAddressedOnly: Bool = false,
        connectTimeout: TimeAmount = PeerDialer.connectTimeout
    ) async throws(DaemonError) -> (PeerConnection, TLSPeer) {
        let attempts = helloAttempts(
            addressee, secretGenerations: context.secretGenerations, resuming: expectedPeer.map(context.canResume) ?? false, asAddressedOnly: asAddressedOnly
        )
        for (index, attempt) in attempts.enumerated() {
            let connection = try await open(address, connectTimeout: connectTimeout) {
                try attempt.connection(context: context, expectedPeer: expectedPeer)
            }
            do {
                let done = try await connection.completedHandshake()
                return (connection, done.peer)
            } catch {
                await connection.discard()
                if let tls = error as? TLSError, tls.code == .accountKeyUnknown, index + 1 < attempts.count { continue }
                throw describe(error, address: address)
            }
        }
        preconditionFailure("helloAttempts is never empty")
    }

    /// One message sent and one answer read on a connection of its own, to the first of
    /// `addresses` that answers — for an exchange that comes before any session (joining an
    /// account). If none answers, the error that says most: a refusal over a silent address's
    /// time-out.
    package static func exchangeOnce(
        _ addresses: [PeerAddress], context: TLSContext, sending message: PeerMessage, within limit: TimeAmount, logger: Logger
    ) async throws(DaemonError) -> (PeerAddress, PeerMessage) {
        var failures: [DaemonError] = []
        for address in addresses {
            let connection: PeerConnection
            do {
                connection = try await connect(address, context: context).0
            } catch {
                logger.debug("the device does not answer at this address", metadata: ["address": "\(address)", "error": "\(error)"])
                failures.append(error)
                continue
            }
            do {
                let reply = try await connection.channel.executeThenClose { inbound, outbound in
                    var messages = inbound.makeAsyncIterator()
                    try await outbound.write(message)
                    return try await MemberGreeting.receive(&messages, connection: connection, within: limit)
                }
                return (address, reply)
            } catch {
                throw describe(error, address: address)
            }
        }
        throw failures.first { $0.code != .unreachable && $0.code != .timeout } ?? failures.last ?? DaemonError(.unreachable, "the device does not answer")
    }

    /// One offer a dial makes (`helloAttempts`).
    package struct HelloAttempt: Sendable, Equatable {
        /// Which account secret keys it (0: the current one), unless it resumes.
        package var generation: Int
        package var addressee: HelloAddressee
        /// Keyed from what our last session with the device derived (`ResumptionBook`).
        package var resume = false

        package func connection(context: TLSContext, expectedPeer: DeviceID?) throws(TLSError) -> TLSConnection {
            try TLSConnection(context: context, expectedPeer: expectedPeer, secretGeneration: generation, addressee: addressee, resume: resume)
        }
    }

    /// What to offer, in order, while the other device answers that it does not know the key:
    /// first, if we had a session with it, the key that session left (one round trip, no device
    /// proofs: docs/security.md, "Resuming a session"); our current secret addressed as asked;
    /// then — if that was its advert — to the device alone (it may have restarted under a new name
    /// we have not seen yet); then the previous secret, for a device that has not heard of the last
    /// removal (each side accepts both; docs/security.md). `asAddressedOnly`: nothing wider — a dial
    /// at start to where a device was last reached (`MemberSessions.dialRemembered`) offers only what
    /// that device's advert then would have been sent, and leaves the rest to discovery.
    package static func helloAttempts(_ addressee: HelloAddressee, secretGenerations: Int, resuming: Bool = false, asAddressedOnly: Bool = false)
        -> [HelloAttempt]
    {
        var attempts = [HelloAttempt(generation: 0, addressee: addressee)]
        if resuming { attempts.insert(HelloAttempt(generation: 0, addressee: addressee, resume: true), at: 0) }
        if asAddressedOnly { return attempts }
        if addressee.withoutAdvert != addressee { attempts.append(HelloAttempt(generation: 0, addressee: addressee.withoutAdvert)) }
        if secretGenerations > 1 { attempts.append(HelloAttempt(generation: 1, addressee: addressee.withoutAdvert)) }
        return attempts
    }

    private static func open(
        _ address: PeerAddress, connectTimeout: TimeAmount, connection: @escaping @Sendable () throws -> TLSConnection
    ) async throws(DaemonError) -> PeerConnection {
        do {
            return try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(connectTimeout)
                .connect(host: address.host, port: address.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try PeerPipeline.enableKeepalive(channel)
                        return try PeerPipeline.configure(channel, connection: try connection())
                    }
                }
        } catch {
            throw DaemonError(
                .unreachable, "cannot reach \(address): \(describeConnectError(error, timeout: connectTimeout)); is handoffd running there, and is its port open?"
            )
        }
    }

    /// What a failure talking to `address` means for the user.
    package static func describe(_ error: any Error, address: PeerAddress) -> DaemonError {
        if let e = error as? DaemonError { return e }
        if let e = error as? PeerSessionError {
            switch e {
            case .versionMismatch: return DaemonError(.versionMismatch, "\(address) \(e); update handoff on both devices")
            case .peerFailed(let f) where f.code == .revoked:
                return DaemonError(.revoked, "\(address) refused this device: it has been removed from the account")
            case .closed: return DaemonError(.unreachable, "\(address) closed the connection")
            default: return DaemonError(.refused, "\(address): \(e)")
            }
        }
        if let e = error as? PeerMessageError {
            return DaemonError(.versionMismatch, "\(address) sent a message this handoff cannot read (\(e)); are both devices up to date?")
        }
        guard let tls = error as? TLSError else {
            if error is ChannelError { return DaemonError(.unreachable, "\(address) closed the connection") }
            return DaemonError(.unreachable, "the connection to \(address) failed: \(SocketErrorText.describe(error))")
        }
        switch tls.code {
        case .joinCodeRejected:
            return DaemonError(.codeRejected, "\(address) did not accept the code: it is wrong, or no invite is waiting there (run handoffctl account invite on that device)")
        case .refusedByPeer:
            if tls.message.contains("revoked") {
                return DaemonError(.revoked, "\(address) refused this device: it has been removed from the account")
            }
            return DaemonError(.refused, "\(address) refused this device: it is not a member of that device's account (\(tls.message))")
        case .revoked:
            return DaemonError(.revoked, "\(address) has been removed from this account")
        case .otherAccount, .accountKeyUnknown, .selfSigned, .noPeerCertificate, .wrongDeviceID, .expired:
            return DaemonError(.refused, "\(address) is not a device of this account: \(tls.message)")
        case .protocolVersion, .applicationProtocol, .malformed:
            return DaemonError(.versionMismatch, "\(address) does not speak the handoff protocol (\(tls.message))")
        case .handshakeTimeout:
            return DaemonError(.timeout, "\(address) did not finish the TLS handshake in time")
        case .tooManyAttempts:
            return DaemonError(
                .rateLimited,
                "\(address) refuses this address for now: too many attempts from it (wrong invite codes shut it out for 10 minutes; too many connections, for a minute); wait and try again"
            )
        case .truncated:
            return DaemonError(
                .unreachable,
                "\(address) closed the connection during the TLS handshake (it may be busy with other connections, or not handoff); try again in a moment"
            )
        case .crypto, .other:
            return DaemonError(.unreachable, "the connection to \(address) failed: \(tls.message)")
        }
    }

    package static func describeConnectError(_ error: any Error, timeout: TimeAmount = PeerDialer.connectTimeout) -> String {
        if let e = error as? NIOConnectionError, let first = e.connectionErrors.first { return describeConnectError(first.error, timeout: timeout) }
        if let e = error as? ChannelError, case .connectTimeout = e {
            let ms = timeout.nanoseconds / 1_000_000
            return ms % 1000 == 0 ? "no answer within \(ms / 1000) s" : "no answer within \(ms) ms"
        }
        return SocketErrorText.describe(error)
    }
}
