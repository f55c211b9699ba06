#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonAccounts
import DaemonCore
import DaemonLinks
import DaemonStreams
import HandoffAPI
import HandoffModel
import HandoffPeer

/// `continue PEER` (SPEC §5): fetch another device's current activity — the one we saw, or we say
/// it changed — then hand it to an app here (or return it to the caller), with the lifecycle
/// events `willContinue`, then exactly one of `continued` or `continueFailed`.
///
/// `willContinue` is published as soon as the activity's type is known: at once when the device
/// was seen advertising it, else once it arrived. A failure before that (a `HOST:PORT` that does not
/// answer) publishes nothing: no continuation of any type began.
package struct ContinueFlow: Sendable {
    let accounts: AccountStore
    let directory: PeerDirectory
    let links: MemberLinks
    let book: StreamBook
    let launcher: Launcher
    let events: EventHub
    let peerPort: @Sendable () -> Int
    let maximumActivityBytes: Int

    package init(
        accounts: AccountStore, directory: PeerDirectory, links: MemberLinks, book: StreamBook, launcher: Launcher, events: EventHub,
        peerPort: @escaping @Sendable () -> Int, maximumActivityBytes: Int
    ) {
        self.accounts = accounts
        self.directory = directory
        self.links = links
        self.book = book
        self.launcher = launcher
        self.events = events
        self.peerPort = peerPort
        self.maximumActivityBytes = maximumActivityBytes
    }

    package func run(_ request: ContinueRequest) async throws(DaemonError) -> ContinueResponse {
        let account = try await accounts.requireMembership()
        let (state, me) = (account.state, account.deviceID)
        let continuationID = UUID()
        var announced: (type: String, peer: LocalEvent.PeerRef)?
        func announce(_ type: String, _ peer: LocalEvent.PeerRef) {
            guard announced == nil else { return }
            announced = (type, peer)
            events.publish(LocalEvent(at: .now(), .willContinue(continuationID: continuationID, type: type, peer: peer)))
        }
        do throws(DaemonError) {
            let target = try await PeerTarget.resolve(request.peer, state: state, me: me, directory: directory, defaultPort: peerPort())
            if let device = target.device, let seen = target.seen { announce(seen.type, device) }
            var session = try await target.session(links: links, directory: directory)
            var answer: PeerMessage?
            // A session can end under us (both devices dialled at once and one connection gave
            // way, or the other side restarted): one fresh connection is worth a try.
            for attempt in 1...2 where answer == nil {
                do {
                    answer = try await session.request { PeerMessage.getActivity(requestID: $0, seenID: target.seen?.id) }
                } catch is PeerRequestTimeout {
                    throw DaemonError(.timeout, "\(session.peerName) did not answer in time")
                } catch {
                    guard attempt == 1 else { throw DaemonError(.unreachable, "the connection to \(session.peerName) ended before it answered") }
                    try? await Task.sleep(for: .milliseconds(100))
                    session = try await target.session(links: links, directory: directory)
                }
            }
            let peer = LocalEvent.PeerRef(id: session.peerID, name: session.peerName)
            guard let answer else { throw DaemonError(.unreachable, "\(peer.name) did not answer") }
            let activity = try Self.interpret(answer, seenID: target.seen?.id, peerName: peer.name, maximumActivityBytes: maximumActivityBytes)
            announce(activity.type, peer)
            book.record(
                StreamBook.Continuation(
                    id: continuationID, peer: peer, activityID: activity.id,
                    supportsStreams: activity.content.supportsContinuationStreams, address: target.address
                )
            )
            let delivered: DeliveryOutcome
            switch request.delivery {
            case .returnToCaller:
                delivered = DeliveryOutcome(kind: .caller, handler: "caller", command: [])
            case .dispatch:
                delivered = try await launcher.deliver(activity, continuationID: continuationID, from: peer, session: request.environment)
            }
            events.publish(LocalEvent(at: .now(), .continued(continuationID: continuationID, activity: activity, peer: peer, delivered: delivered)))
            // The originating app hears wasContinued; the continuation stands whether or not it does.
            try? await session.send(.activityContinued(activityID: activity.id))
            return ContinueResponse(
                peerID: peer.id, peerName: peer.name, activity: activity, continuationID: continuationID,
                delivered: request.delivery == .dispatch ? delivered : nil
            )
        } catch {
            if let (type, peer) = announced {
                events.publish(
                    LocalEvent(at: .now(), .continueFailed(continuationID: continuationID, type: type, peer: peer, code: APIErrorCode(error.code), reason: error.message))
                )
            }
            throw error
        }
    }

    /// What the other device's answer means: the activity, or the precise reason there is none.
    static func interpret(_ answer: PeerMessage, seenID: UUID?, peerName name: String, maximumActivityBytes: Int, now: Timestamp = .now())
        throws(DaemonError) -> Activity
    {
        switch answer {
        case .activity(_, let encoded):
            let activity: Activity
            do {
                activity = try ActivityEncoding.decode(encoded, maximumSize: maximumActivityBytes)
                try activity.content.validate(now: now)
            } catch {
                if error.code == .expired { throw DaemonError(.expired, "\(name)'s activity expired") }
                throw DaemonError(error.code == .unsupportedVersion ? .versionMismatch : .refused, "\(name) sent an activity this device cannot accept: \(error.message)")
            }
            if let seenID, activity.id != seenID {
                throw DaemonError(.activityChanged, "\(name)'s activity changed since you looked; run handoffctl peers, then continue again")
            }
            return activity
        case .activityUnavailable(_, let why):
            switch why.reason {
            case .none: throw DaemonError(.noCurrentActivity, "\(name) has no current activity")
            case .changed: throw DaemonError(.activityChanged, "\(name)'s activity changed since you looked (\(why.message)); run continue again to get the new one")
            case .expired: throw DaemonError(.expired, "\(name)'s activity expired")
            }
        default:
            throw DaemonError(.versionMismatch, "\(name) answered with a \(answer.kindName); are both devices up to date?")
        }
    }
}
