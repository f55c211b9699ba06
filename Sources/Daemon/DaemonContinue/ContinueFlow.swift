#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonAccounts
import DaemonCore
import DaemonSessions
import DaemonStreams
import HandoffAPI
import HandoffModel
import HandoffPeer
import Synchronization

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

    /// A continuation done here, and the word its device is owed: that its activity was
    /// continued (the originating app hears `wasContinued`).
    package struct Continued: Sendable {
        package let response: ContinueResponse
        let session: MemberSession
        let activityID: UUID
        /// Settled when the tell went out (or could not): the continuation's streams wait for it.
        let told: Once<Void>

        /// Tells the device its activity was continued; the continuation stands whether or not
        /// it hears. The local API says it once the caller has its answer: said before, it put
        /// a write, and the other device's wake-up, on the path of every `continue`
        /// (docs/benchmarks.md, "handoffctl's share of continue").
        package func tellOrigin() async {
            try? await session.send(.activityContinued(activityID: activityID))
            told.settle(())
        }
    }

    package func run(_ request: ContinueRequest) async throws(DaemonError) -> Continued {
        guard case .continued(let continued) = try await attempt(request, link: nil) else {
            throw DaemonError(.internalError, "a continuation without a link ended without its activity")
        }
        return continued
    }

    /// What a link's device has for the link now (docs/apps.md, "Links").
    package enum LinkOutcome: Sendable {
        /// It was still current there: continued, as `continue` does.
        case continued(ContinueResponse)
        /// It is not to be had there: why (unreachable, moved on…). Nothing was published, and
        /// the device's app did not hear that it was continued.
        case unavailable(reason: String)
    }

    /// The activity `link` names, from its device, if the device is reachable and it is still
    /// current there: `request.peer` is the device.
    package func run(_ request: ContinueRequest, link: LinkTarget) async throws(DaemonError) -> LinkOutcome {
        switch try await attempt(request, link: link) {
        case .continued(let continued):
            await continued.tellOrigin()
            return .continued(continued.response)
        case .unavailable(let reason):
            return .unavailable(reason: reason)
        }
    }

    private enum Attempt {
        case continued(Continued)
        case unavailable(reason: String)
    }

    private func attempt(_ request: ContinueRequest, link: LinkTarget?) async throws(DaemonError) -> Attempt {
        let account = try accounts.requireMembershipNow()
        let (state, me) = (account.state, account.deviceID)
        let continuation = Continuation(id: .random(), request: request, flow: self)
        let fetched: ActivityFetch.Fetched
        do throws(DaemonError) {
            fetched = try await fetch.run(request.peer, expected: request.activityID, state: state, me: me) { summary, peer async in
                // A link's activity is announced only once it is known to be the linked one.
                let target: Continuation.Target = summary.targetKnown ? .known(summary.targetContentIdentifier) : .unknown
                if link == nil { await continuation.announce(summary.type, peer, target: target) }
            }
        } catch {
            if link != nil { return .unavailable(reason: error.message) }
            await continuation.fail(error)
            throw error
        }
        if let link, !link.names(fetched.activity) {
            return .unavailable(reason: "\(fetched.peer.name) has moved on to another activity")
        }
        let told = Once<Void>()
        book.record(
            StreamBook.Continuation(
                id: continuation.id, peer: fetched.peer, activityID: fetched.activity.id,
                supportsStreams: fetched.activity.content.supportsContinuationStreams, address: fetched.address, originTold: told
            )
        )
        let response: ContinueResponse
        do throws(DaemonError) {
            response = try await continuation.hand(fetched.activity, from: fetched.peer)
        } catch {
            told.settle(())  // nothing will be told: no stream waits for it
            throw error
        }
        return .continued(Continued(response: response, session: fetched.session, activityID: fetched.activity.id, told: told))
    }

    /// Hands an activity kept here (a linked one from the history) to an app, as a
    /// continuation from `peer` without streams: the device it came from is not asked.
    package func reopen(_ activity: Activity, from peer: LocalEvent.PeerRef, delivery: ContinueRequest.Delivery, environment: [String: String])
        async throws(DaemonError) -> ContinueResponse
    {
        var activity = activity
        activity.content.supportsContinuationStreams = false
        activity.content.needsSave = false
        let request = ContinueRequest(peer: peer.id.text, delivery: delivery, environment: environment)
        return try await Continuation(id: .random(), request: request, flow: self).hand(activity, from: peer)
    }

    /// One continuation's lifecycle events: `willContinue` once (as soon as its type is known),
    /// then `continued` or, once announced, `continueFailed`.
    final class Continuation: Sendable {
        let id: UUID
        let request: ContinueRequest
        let flow: ContinueFlow
        private let announced = Mutex<(type: String, peer: LocalEvent.PeerRef)?>(nil)

        /// What is known of the activity's target when it is announced: its window follows
        /// from it (docs/apps.md, "Where a continuation goes").
        enum Target {
            case unknown
            case known(String?)
        }

        init(id: UUID, request: ContinueRequest, flow: ContinueFlow) {
            self.id = id
            self.request = request
            self.flow = flow
        }

        func announce(_ type: String, _ peer: LocalEvent.PeerRef, target: Target) async {
            let first = announced.withLock { now in
                guard now == nil else { return false }
                now = (type, peer)
                return true
            }
            guard first else { return }
            flow.events.publish(LocalEvent(at: .now(), .willContinue(continuationID: id, type: type, peer: peer)))
            guard request.delivery == .dispatch else { return }
            switch target {
            case .unknown: await flow.handover.willContinue(continuationID: id, type: type, target: nil, targetKnown: false, from: peer)
            case .known(let known): await flow.handover.willContinue(continuationID: id, type: type, target: known, targetKnown: true, from: peer)
            }
        }

        /// Says the continuation failed, if it was announced (else no continuation of any
        /// type began).
        func fail(_ error: DaemonError) async {
            guard let (type, peer) = announced.withLock({ $0 }) else { return }
            await flow.handover.failed(continuationID: id, error)
            flow.events.publish(
                LocalEvent(at: .now(), .continueFailed(continuationID: id, type: type, peer: peer, code: APIErrorCode(error.code), reason: error.message))
            )
        }

        /// Announces `activity` (if it was not yet) and hands it where the request says.
        func hand(_ activity: Activity, from peer: LocalEvent.PeerRef) async throws(DaemonError) -> ContinueResponse {
            await announce(activity.type, peer, target: .known(activity.content.targetContentIdentifier))
            do throws(DaemonError) {
                let delivered: DeliveryOutcome
                switch request.delivery {
                case .returnToCaller:
                    delivered = DeliveryOutcome(kind: .caller, handler: "caller", command: [])
                case .dispatch:
                    delivered = try await flow.handover.deliver(activity, continuationID: id, from: peer, session: request.environment)
                }
                flow.events.publish(LocalEvent(at: .now(), .continued(continuationID: id, activity: activity, peer: peer, delivered: delivered)))
                return ContinueResponse(
                    peerID: peer.id, peerName: peer.name, activity: activity, continuationID: id,
                    delivered: request.delivery == .dispatch ? delivered : nil
                )
            } catch {
                await fail(error)
                throw error
            }
        }
    }
}
