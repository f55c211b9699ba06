#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
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
enum ContinueFlow {
    static func run(_ request: ContinueRequest, services: DaemonServices) async throws(LocalAPIError) -> ContinueResponse {
        guard let state = await services.accounts.currentState, let me = await services.accounts.hello()?.deviceID else {
            throw LocalAPIError(.noAccount, "this device has no account yet; create one (handoffctl account create) or join one (handoffctl account join CODE)")
        }
        let continuationID = UUID()
        let events = services.events
        var announced: (type: String, peer: LocalEvent.PeerRef)?
        func announce(_ type: String, _ peer: LocalEvent.PeerRef) {
            guard announced == nil else { return }
            announced = (type, peer)
            events.publish(LocalEvent(at: .now(), .willContinue(continuationID: continuationID, type: type, peer: peer)))
        }
        do throws(LocalAPIError) {
            let target = try await resolve(request.peer, state: state, me: me, services: services)
            if let device = target.device, let seen = target.seen { announce(seen.type, device) }
            var session = try await connect(target, services: services)
            var answer: PeerMessage?
            // A session can end under us (both devices dialled at once and one connection gave
            // way, or the other side restarted): one fresh connection is worth a try.
            for attempt in 1...2 where answer == nil {
                do {
                    answer = try await session.request { PeerMessage.getActivity(requestID: $0, seenID: target.seen?.id) }
                } catch is PeerRequestTimeout {
                    throw LocalAPIError(.timeout, "\(session.peerName) did not answer in time")
                } catch {
                    guard attempt == 1 else { throw LocalAPIError(.unreachable, "the connection to \(session.peerName) ended before it answered") }
                    try? await Task.sleep(for: .milliseconds(100))
                    session = try await connect(target, services: services)
                }
            }
            let peer = LocalEvent.PeerRef(id: session.peerID, name: session.peerName)
            guard let answer else { throw LocalAPIError(.unreachable, "\(peer.name) did not answer") }
            let activity = try interpret(answer, seenID: target.seen?.id, peerName: peer.name, maximumActivityBytes: services.maximumActivityBytes)
            announce(activity.type, peer)
            services.book.record(
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
                delivered = try await services.launcher.deliver(activity, continuationID: continuationID, from: peer, session: request.environment)
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
                    LocalEvent(at: .now(), .continueFailed(continuationID: continuationID, type: type, peer: peer, code: error.code, reason: error.message))
                )
            }
            throw error
        }
    }

    /// What the other device's answer means: the activity, or the precise reason there is none.
    static func interpret(_ answer: PeerMessage, seenID: UUID?, peerName name: String, maximumActivityBytes: Int, now: Timestamp = .now())
        throws(LocalAPIError) -> Activity
    {
        switch answer {
        case .activity(_, let encoded):
            let activity: Activity
            do {
                activity = try ActivityEncoding.decode(encoded, maximumSize: maximumActivityBytes)
                try activity.content.validate(now: now)
            } catch {
                if error.code == .expired { throw LocalAPIError(.expired, "\(name)'s activity expired") }
                throw LocalAPIError(error.code == .unsupportedVersion ? .versionMismatch : .refused, "\(name) sent an activity this device cannot accept: \(error.message)")
            }
            if let seenID, activity.id != seenID {
                throw LocalAPIError(.activityChanged, "\(name)'s activity changed since you looked; run handoffctl peers, then continue again")
            }
            return activity
        case .activityUnavailable(_, let why):
            switch why.reason {
            case .none: throw LocalAPIError(.noCurrentActivity, "\(name) has no current activity")
            case .changed: throw LocalAPIError(.activityChanged, "\(name)'s activity changed since you looked (\(why.message)); run continue again to get the new one")
            case .expired: throw LocalAPIError(.expired, "\(name)'s activity expired")
            }
        default:
            throw LocalAPIError(.versionMismatch, "\(name) answered with a \(answer.kindName); are both devices up to date?")
        }
    }

    /// Who `continue` was asked to reach: a device of the account (with the activity we saw it
    /// advertise, if any), or an address.
    struct Target {
        var device: LocalEvent.PeerRef?
        var seen: ActivitySummary?
        var address: PeerAddress?
    }

    private static func resolve(_ text: String, state: AccountState, me: DeviceID, services: DaemonServices) async throws(LocalAPIError) -> Target {
        if looksLikeAddress(text) {
            return Target(address: try PeerAddress(parsing: text, defaultPort: services.peerPort()))
        }
        let lower = text.lowercased()
        let candidates = state.devices.filter { $0.id != me && ($0.name.lowercased() == lower || (lower.count >= 4 && $0.id.text.hasPrefix(lower))) }
        guard !text.isEmpty, let device = candidates.first else {
            throw LocalAPIError(.unknownPeer, "no other device of this account is called or starts with \(displayQuoted(text)); see handoffctl peers")
        }
        guard candidates.count == 1 else {
            throw LocalAPIError(.unknownPeer, "\(displayQuoted(text)) matches \(candidates.count) devices; give more of the id")
        }
        return Target(device: LocalEvent.PeerRef(id: device.id, name: device.name), seen: await services.directory.info(device.id)?.activity)
    }

    /// The session to ask: the one open with the device, or a new one.
    private static func connect(_ target: Target, services: DaemonServices) async throws(LocalAPIError) -> MemberSession {
        let links = services.links
        guard let device = target.device else { return try await links.connect(target.address!) }
        var lastError = LocalAPIError(.unreachable, "\(device.name) cannot be reached")
        // Two rounds: when both devices dial each other at once, one of the two connections is
        // closed, and the session to use is the other one, there a moment later.
        for round in 1...2 {
            if let session = await links.session(for: device.id) { return session }
            let targets = await services.directory.dialTargets(device.id)
            guard !targets.isEmpty else {
                throw LocalAPIError(.unreachable, "\(device.name) has not been seen on the network; is handoffd running there? (or give HOST:PORT)")
            }
            for address in targets {
                let result: Result<MemberSession, LocalAPIError>
                do {
                    result = .success(try await links.connect(address, expecting: device.id))
                } catch {
                    result = .failure(error)
                }
                switch result {
                case .success(let session): return session
                case .failure(let e):
                    lastError = e
                    if e.code == .revoked || e.code == .refused { throw e }
                }
            }
            if round == 1 { try? await Task.sleep(for: .milliseconds(200)) }
        }
        throw lastError
    }

    /// `host:port`, `[v6]:port`, or a bare IP address — not a device name.
    static func looksLikeAddress(_ text: String) -> Bool {
        if text.hasPrefix("[") { return true }
        if let colon = text.lastIndex(of: ":"), Int(text[text.index(after: colon)...]) != nil { return true }
        return DaemonSettings.isIPAddress(text)
    }
}
