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

/// `continue PEER` (docs/cli.md, docs/local-api.md): fetch another device's current activity — the one we saw, or we say
/// it changed — then hand it to an app here (or return it to the caller), with the lifecycle
/// events `willContinue`, then exactly one of `continued` or `continueFailed`.
///
/// `willContinue` is published as soon as the activity's type is known: at once when the device
/// was seen advertising it, else once it arrived. A failure before that (a `HOST:PORT` that does not
/// answer) publishes nothing: no continuation of any type began.
package struct ContinueFlow: Sendable {
    let accounts: AccountStore
    let fetch: ActivityFetch
    let book: StreamBook
    let handover: Handover
    let events: EventHub

    package init(accounts: AccountStore, fetch: ActivityFetch, book: StreamBook, handover: Handover, events: EventHub) {
        self.accounts = accounts
        self.fetch = fetch
        self.book = book
        self.handover = handover
        self.events = events
    }

    package func run(_ request: ContinueRequest) async throws(DaemonError) -> ContinueResponse {
        let account = try await accounts.requireMembership()
        let (state, me) = (account.state, account.deviceID)
        let continuationID = UUID()
        var announced: (type: String, peer: LocalEvent.PeerRef)?
        func announce(_ type: String, _ peer: LocalEvent.PeerRef) async {
            guard announced == nil else { return }
            announced = (type, peer)
            events.publish(LocalEvent(at: .now(), .willContinue(continuationID: continuationID, type: type, peer: peer)))
            if request.delivery == .dispatch { await handover.willContinue(continuationID: continuationID, type: type, from: peer) }
        }
        do throws(DaemonError) {
            let fetched = try await fetch.run(request.peer, expected: request.activityID, state: state, me: me, seen: announce)
            let (activity, peer, session) = (fetched.activity, fetched.peer, fetched.session)
            await announce(activity.type, peer)
            book.record(
                StreamBook.Continuation(
                    id: continuationID, peer: peer, activityID: activity.id,
                    supportsStreams: activity.content.supportsContinuationStreams, address: fetched.address
                )
            )
            let delivered: DeliveryOutcome
            switch request.delivery {
            case .returnToCaller:
                delivered = DeliveryOutcome(kind: .caller, handler: "caller", command: [])
            case .dispatch:
                delivered = try await handover.deliver(activity, continuationID: continuationID, from: peer, session: request.environment)
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
                await handover.failed(continuationID: continuationID, error)
                events.publish(
                    LocalEvent(at: .now(), .continueFailed(continuationID: continuationID, type: type, peer: peer, code: APIErrorCode(error.code), reason: error.message))
                )
            }
            throw error
        }
    }
}
