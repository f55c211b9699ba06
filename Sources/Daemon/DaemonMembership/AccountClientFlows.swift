import DaemonAccounts
import DaemonCore
import DaemonDiscovery
import DaemonSessions
import HandoffAPI
import HandoffModel
import HandoffPeer
import HandoffTLS
import Logging

/// `account join`: prove the code to the inviting device over a PSK-keyed TLS 1.3 connection, send
/// our public key, and keep the certificate, root and account state it sends back.
package enum AccountJoiner {
    /// How long `account join CODE` looks for the inviting device on the network: its advert
    /// carries the code's tag within about a second of `account invite` (docs/discovery.md), so
    /// a longer wait would only be a silent one.
    package static let findInviterTimeout: Duration = .seconds(3)

    package static func join(
        _ request: JoinAccountRequest, store: AccountStore, defaultPort: Int, logger: Logger,
        findInviter: @Sendable (InviteCode) async -> [PeerAddress]
    ) async throws(DaemonError) -> AccountInfo {
        guard await !store.isMember else {
            throw .alreadyMember
        }
        let code: InviteCode
        do {
            code = try InviteCode(parsing: request.code)
        } catch {
            throw DaemonError(.invalidCode, error.description)
        }
        let addresses: [PeerAddress]
        if let peerText = request.peer {
            addresses = [try PeerAddress(parsing: peerText, defaultPort: defaultPort)]
        } else {
            // The inviter advertises a tag derived from the code while the invite is open, with
            // every address it has (in a zone: all of a host's networks, of which only some
            // may lead here).
            addresses = await findInviter(code)
        }
        guard !addresses.isEmpty else {
            throw DaemonError(
                .unreachable,
                "no device on this network is inviting with this code (is `handoffctl account invite` still waiting there, on the same network?); or give its address: --peer HOST:PORT"
            )
        }
        let deviceName = try AccountStore.validName(request.deviceName ?? AccountStore.hostName(), what: "device name")

        let key: SigningKey
        let context: TLSContext
        do {
            key = try SigningKey.generate()
            context = try TLSContext.joinClient(psk: JoinPSK(code: code))
        } catch {
            throw DaemonError(.internalError, "cannot prepare the join: \(error)")
        }
        let (address, reply) = try await PeerDialer.exchangeOnce(
            addresses, context: context, sending: .joinRequest(JoinRequest(deviceName: deviceName, publicKey: key.publicKey)), within: .seconds(30), logger: logger
        )

        switch reply {
        case .joinAccepted(let accepted):
            let material = try validate(accepted, key: key, deviceName: deviceName, from: address)
            return try await store.completeJoin(material)
        case .joinRefused(let refusal):
            switch refusal.reason {
            case .expired: throw DaemonError(.inviteExpired, refusal.message)
            case .alreadyUsed: throw DaemonError(.inviteUsed, refusal.message)
            case .invalidRequest, .internalError: throw DaemonError(.codeRejected, "\(address) refused the join: \(refusal.message)")
            }
        default:
            throw DaemonError(.versionMismatch, "\(address) answered the join with a \(reply.kindName); are both devices up to date?")
        }
    }

    /// Everything the inviter sent must fit together: a certificate for our key, issued by the root,
    /// and a state signed by that root that lists us.
    private static func validate(_ a: JoinAccepted, key: SigningKey, deviceName: String, from address: PeerAddress) throws(DaemonError)
        -> AccountMaterial
    {
        let bad = DaemonError(.refused, "\(address) sent an inconsistent account; the join was not completed")
        do {
            let first = try Certificate(der: a.rootCertificate)
            let certificate = try Certificate(der: a.deviceCertificate)
            guard certificate.publicKey == key.publicKey, let (state, chain, current) = AccountMaterial.verify(a.accountState, chain: try RootChain(first: first)),
                current, state.device(key.id) != nil, a.accountSecret.count == 32
            else { throw bad }
            let trust = try TrustPolicy(chain: chain, accountSecrets: [a.accountSecret])
            _ = try TLSContext.memberClient(identity: try DeviceIdentity(key: key, certificate: certificate), trust: trust)
            return AccountMaterial(
                deviceName: deviceName,
                identity: try DeviceIdentity(key: key, certificate: certificate),
                chain: chain,
                rootKey: nil,
                accountSecret: a.accountSecret,
                signedState: a.accountState,
                state: state
            )
        } catch let e as DaemonError {
            throw e
        } catch {
            throw bad
        }
    }
}

/// `account sync PEER`: exchange account states with one device now, as members do whenever
/// they meet (this is how a revocation reaches a device). Over the session with it — the open
/// one, or a new one whose greeting already did the exchange — it asks for the device's state
/// and keeps it if newer, and sends ours if the device's is older.
package enum AccountSync {
    package static func sync(
        _ request: SyncRequest, store: AccountStore, sessions: MemberSessions, directory: PeerDirectory, defaultPort: Int
    ) async throws(DaemonError) -> SyncResponse {
        let account = try await store.requireMembership()
        let (state, me) = (account.state, account.deviceID)
        let before = await store.stateRank
        let target = try await PeerTarget.resolve(request.peer, state: state, me: me, directory: directory, defaultPort: defaultPort)
        let session = try await target.session(sessions: sessions, directory: directory)
        let reply: PeerMessage
        do {
            reply = try await session.request { PeerMessage.getAccountState(requestID: $0) }
        } catch is PeerRequestTimeout {
            throw DaemonError(.timeout, "\(session.peerName) did not send its account state in time; is it up to date?")
        } catch {
            throw DaemonError(.unreachable, "the connection to \(session.peerName) ended before it answered")
        }
        guard case .accountStateReply(_, let signed, let secret) = reply else {
            throw DaemonError(.versionMismatch, "\(session.peerName) answered with a \(reply.kindName); are both devices up to date?")
        }
        let theirRank = AccountStateRank(rotations: UInt64(signed.rootLinks.count), version: (try? AccountState(decoding: signed.stateBytes))?.version ?? 0)
        switch await store.adopt(signed, accountSecret: secret) {
        case .updated:
            await sessions.stateChanged()
        case .notNewer:
            if theirRank < (await store.stateRank), let (mine, secret) = await store.stateToShare(with: session.peerID) {
                try? await session.send(.accountState(mine, accountSecret: secret ?? []))
            }
        case .invalid:
            throw DaemonError(.refused, "\(session.peerName) sent an account state that is not this account's")
        }
        // A key handed to that device is settled now: it holds it (its newer state was adopted
        // above and named it), or — its state no newer than ours — it never took it.
        await store.settleKeyTransfer(with: session.peerID, theirs: theirRank)
        let after = await store.stateRank
        return SyncResponse(peerID: session.peerID, peerName: session.peerName, stateVersion: after.version, updated: after > before)
    }
}
