import DaemonAccounts
import DaemonCore
import DaemonSessions
import HandoffAPI
import HandoffModel
import HandoffPeer

/// What a device without the account key asks of the devices it has sessions with: to be
/// removed, or renamed. The device holding the key does it and answers with the state after it;
/// the others answer with the state they have.
package enum AccountRequests {
    /// `account leave`: asks every device it has a session with to remove it. The names that
    /// answered, and whether the key holder's answer lists this device as removed.
    package static func askToBeRemoved(store: AccountStore, sessions: MemberSessions) async -> (told: [String], removed: Bool) {
        guard let me = await store.hello()?.deviceID else { return ([], false) }
        let open = await sessions.openSessions
        let timeout = await sessions.deadlines.membershipRequest
        return await withTaskGroup(of: (String, Bool)?.self) { group in
            for session in open {
                group.addTask {
                    guard case .accountStateReply(_, let signed, _)? = try? await session.request({ .leaving(requestID: $0) }, timeout: timeout) else {
                        return nil
                    }
                    return (session.peerName, (try? AccountState(decoding: signed.stateBytes))?.isRevoked(me) ?? false)
                }
            }
            var told: [String] = []
            var removed = false
            for await answer in group {
                guard let (name, listed) = answer else { continue }
                told.append(name)
                removed = removed || listed
            }
            return (told.sorted(), removed)
        }
    }

    /// `devices rename NAME`: the device holding the key signs the new name; whoever answers
    /// sends the state it has, which this device adopts.
    package static func askToBeRenamed(_ name: String, store: AccountStore, sessions: MemberSessions) async throws(DaemonError) -> DeviceInfo {
        guard let me = await store.hello()?.deviceID else { throw .noAccount }
        let open = await sessions.openSessions
        let timeout = await sessions.deadlines.membershipRequest
        var reached: [String] = []
        for session in open {
            guard case .accountStateReply(_, let signed, let secret)? = try? await session.request({ .renameRequest(requestID: $0, name: name) }, timeout: timeout)
            else { continue }
            reached.append(session.peerName)
            if await store.adopt(signed, accountSecret: secret) == .updated { await sessions.stateChanged() }
            if let mine = await store.currentState?.device(me), mine.name == name {
                return DeviceInfo(id: me, name: name, addedAt: mine.addedAt, isThisDevice: true)
            }
        }
        let tried = reached.isEmpty ? "no other device is reachable now" : "\(reached.joined(separator: ", ")) answered but \(reached.count == 1 ? "does" : "do") not hold it, or refused the name"
        throw DaemonError(
            .unreachable,
            "names in the account are signed by the device holding the account key, and \(tried); try again when it is reachable, or rename this one there (handoffctl devices rename THIS-DEVICE \(name))"
        )
    }
}
