#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonCore
import DaemonDiscovery
import DaemonSessions
import HandoffAPI
import HandoffModel
import HandoffPeer
import HandoffSystem

/// The asking side of `continue`, up to the activity: find the device the user named, get a
/// session with it, ask for its current activity (the one we saw advertised, if we did), and say
/// precisely why there is none. What is then done with the activity is `ContinueFlow`'s.
package struct ActivityFetch: Sendable {
    let directory: PeerDirectory
    let sessions: MemberSessions
    let peerPort: @Sendable () -> Int
    let maximumActivityBytes: Int

    package init(directory: PeerDirectory, sessions: MemberSessions, peerPort: @escaping @Sendable () -> Int, maximumActivityBytes: Int) {
        self.directory = directory
        self.sessions = sessions
        self.peerPort = peerPort
        self.maximumActivityBytes = maximumActivityBytes
    }

    package struct Fetched: Sendable {
        package let activity: Activity
        package let peer: LocalEvent.PeerRef
        /// The session it came by (the other device hears on it that it was continued).
        package let session: MemberSession
        /// The address the user typed (`HOST:PORT`), for the continuation's streams.
        package let address: PeerAddress?
    }

    /// The current activity of `text` (a device name, id prefix or `HOST:PORT`) — only if it is
    /// `expected`, when given. `seen` hears the activity (its summary) and device as soon as they are
    /// known from an advert, before anything is asked.
    package func run(
        _ text: String, expected: UUID? = nil, state: AccountState, me: DeviceID, seen: (ActivitySummary, LocalEvent.PeerRef) async -> Void
    ) async throws(DaemonError) -> Fetched {
        let target = try await PeerTarget.resolve(text, state: state, me: me, directory: directory, defaultPort: peerPort())
        // Asked for by id, the other device answers `changed` unless that one is still current.
        let seenID = expected ?? target.seen?.id
        if let expected, let latest = target.seen, latest.id != expected, let device = target.device {
            throw DaemonError(.activityChanged, "\(device.name)'s activity changed since it was offered; continue the new one")
        }
        if let device = target.device, let advertised = target.seen { await seen(advertised, device) }
        var session = try await target.session(sessions: sessions, directory: directory)
        var answer: PeerMessage?
        // A session can end under us (both devices dialled at once and one connection gave
        // way, or the other side restarted): one fresh connection is worth a try.
        for attempt in 1...2 where answer == nil {
            do {
                answer = try await session.request { PeerMessage.getActivity(requestID: $0, seenID: seenID) }
            } catch is PeerRequestTimeout {
                throw DaemonError(.timeout, "\(session.peerName) did not answer in time")
            } catch {
                if Task.isCancelled { throw DaemonError(.unreachable, "handoffd is stopping") }
                guard attempt == 1 else { throw DaemonError(.unreachable, "the connection to \(session.peerName) ended before it answered") }
                try? await QuietSleep.sleep(for: .milliseconds(100))
                session = try await target.session(sessions: sessions, directory: directory)
            }
        }
        let peer = LocalEvent.PeerRef(id: session.peerID, name: session.peerName)
        guard let answer else { throw DaemonError(.unreachable, "\(peer.name) did not answer") }
        let activity = try Self.interpret(answer, seenID: seenID, peerName: peer.name, maximumActivityBytes: maximumActivityBytes)
        return Fetched(activity: activity, peer: peer, session: session, address: target.address)
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
