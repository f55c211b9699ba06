import DaemonCore
import DaemonDiscovery
import DaemonSessions
import HandoffPeer

/// The activity's peer messages: what each device is doing (`activityNotice`, told first on
/// every session), the activity for a device that continues it (`getActivity`), and its word
/// that it did (`activityContinued`); and where its advert is (`advertName`, told on every session).
package struct ActivityMessages: PeerMessageHandler {
    let directory: PeerDirectory
    let answerer: ActivityAnswerer

    package init(directory: PeerDirectory, answerer: ActivityAnswerer) {
        self.directory = directory
        self.answerer = answerer
    }

    package var kinds: Set<PeerMessage.Kind> { [.activityNotice, .activityTarget, .getActivity, .activityContinued, .advertName] }

    package func opened(_ talk: PeerTalk) async throws {
        for message in PeerMessage.telling(answerer.notice) { try await talk.send(message) }
        if let own = await directory.ownAdvert, let port = UInt16(exactly: own.port) {
            try await talk.send(.advertName(instanceName: own.instanceName, port: port))
        }
    }

    package func handle(_ message: PeerMessage, _ talk: PeerTalk) async throws {
        switch message {
        case .activityNotice(let notice):
            await directory.notice(talk.session.peerID, notice)
        case .activityTarget(let sequence, let target):
            await directory.target(talk.session.peerID, sequence: sequence, target)
        case .getActivity(let id, let seen):
            // Its own task: saving a needsSave activity may take a second, and the session must
            // not stall meanwhile.
            let (answerer, peer) = (self.answerer, talk.peer)
            talk.sessions.spawn { try? await talk.send(await answerer.answer(id, seen: seen, to: peer)) }
        case .activityContinued(let activityID):
            answerer.continued(activityID, by: talk.peer)
        case .advertName(let name, let port):
            await directory.advertised(talk.session.peerID, instanceName: name, port: Int(port))
        default:
            break
        }
    }
}
