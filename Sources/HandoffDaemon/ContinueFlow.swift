#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffModel
import HandoffPeer

/// `continue PEER`: fetch another device's current activity — the one we saw, or we say it changed.
enum ContinueFlow {
    static func fetch(
        _ request: ContinueRequest, store: AccountStore, directory: PeerDirectory, links: MemberLinks, defaultPort: Int,
        maximumActivityBytes: Int
    ) async throws(LocalAPIError) -> ContinueResponse {
        guard let state = await store.currentState, let me = await store.hello()?.deviceID else {
            throw LocalAPIError(.noAccount, "this device has no account yet; create one (handoffctl account create) or join one (handoffctl account join CODE)")
        }
        let (session, seenID) = try await reach(request.peer, state: state, me: me, directory: directory, links: links, defaultPort: defaultPort)
        let name = session.peerName
        let answer: PeerMessage
        do {
            answer = try await session.request { PeerMessage.getActivity(requestID: $0, seenID: seenID) }
        } catch is PeerRequestTimeout {
            throw LocalAPIError(.timeout, "\(name) did not answer in time")
        } catch {
            throw LocalAPIError(.unreachable, "the connection to \(name) ended before it answered")
        }
        let activity = try interpret(answer, seenID: seenID, peerName: name, maximumActivityBytes: maximumActivityBytes)
        return ContinueResponse(peerID: session.peerID, peerName: name, activity: activity)
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

    /// The session to ask, and the activity id we saw there (none when given an address).
    private static func reach(
        _ text: String, state: AccountState, me: DeviceID, directory: PeerDirectory, links: MemberLinks, defaultPort: Int
    ) async throws(LocalAPIError) -> (MemberSession, UUID?) {
        if looksLikeAddress(text) {
            let address = try PeerAddress(parsing: text, defaultPort: defaultPort)
            return (try await links.connect(address), nil)
        }
        let lower = text.lowercased()
        let candidates = state.devices.filter { $0.id != me && ($0.name.lowercased() == lower || (lower.count >= 4 && $0.id.text.hasPrefix(lower))) }
        guard !text.isEmpty, let device = candidates.first else {
            throw LocalAPIError(.unknownPeer, "no other device of this account is called or starts with \(displayQuoted(text)); see handoffctl peers")
        }
        guard candidates.count == 1 else {
            throw LocalAPIError(.unknownPeer, "\(displayQuoted(text)) matches \(candidates.count) devices; give more of the id")
        }
        let seen = await directory.seenActivityID(device.id)
        if let session = await links.session(for: device.id) { return (session, seen) }
        let targets = await directory.dialTargets(device.id)
        guard !targets.isEmpty else {
            throw LocalAPIError(.unreachable, "\(device.name) has not been seen on the network; is handoffd running there? (or give HOST:PORT)")
        }
        var lastError = LocalAPIError(.unreachable, "\(device.name) cannot be reached")
        for target in targets {
            let result: Result<MemberSession, LocalAPIError>
            do {
                result = .success(try await links.connect(target, expecting: device.id))
            } catch {
                result = .failure(error)
            }
            switch result {
            case .success(let session): return (session, seen)
            case .failure(let e):
                lastError = e
                if e.code == .revoked || e.code == .refused { throw e }
            }
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
