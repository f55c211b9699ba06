import DaemonCore
import DaemonDiscovery
import HandoffAPI
import HandoffModel
import HandoffSystem
import NIOCore

/// The device a command names (`continue PEER`, `account sync PEER`): a device of the account by
/// its name or the start of its id — with the activity we saw it advertise, if any — or an
/// address (`HOST:PORT`, `[v6]:PORT`, a bare IP).
package struct PeerTarget: Sendable {
    package var device: LocalEvent.PeerRef?
    package var seen: ActivitySummary?
    package var address: PeerAddress?

    package static func resolve(
        _ text: String, state: AccountState, me: DeviceID, directory: PeerDirectory, defaultPort: Int
    ) async throws(DaemonError) -> PeerTarget {
        if looksLikeAddress(text) {
            return PeerTarget(address: try PeerAddress(parsing: text, defaultPort: defaultPort))
        }
        let lower = text.lowercased()
        let candidates = state.devices.filter { $0.id != me && ($0.name.lowercased() == lower || (lower.count >= 4 && $0.id.text.hasPrefix(lower))) }
        guard !text.isEmpty, let device = candidates.first else {
            throw DaemonError(.unknownPeer, "no other device of this account is called or starts with \(displayQuoted(text)); see handoffctl peers")
        }
        guard candidates.count == 1 else {
            throw DaemonError(.unknownPeer, "\(displayQuoted(text)) matches \(candidates.count) devices; give more of the id")
        }
        return PeerTarget(device: LocalEvent.PeerRef(id: device.id, name: device.name), seen: await directory.info(device.id)?.activity)
    }

    /// A device this one knows it cannot reach right now: it has no session, and lost it (or
    /// failed to dial it) after its last advert. Asked for such a device, `session` tries once,
    /// quickly, and then says when it was last seen instead of waiting out the timeouts.
    static let quickTry: TimeAmount = .milliseconds(500)

    /// The session to use: the one open with the device, or a new one.
    package func session(sessions: MemberSessions, directory: PeerDirectory) async throws(DaemonError) -> MemberSession {
        guard let device else { return try await sessions.connect(address!) }
        if let session = await sessions.session(for: device.id) { return session }
        if let info = await directory.info(device.id), !info.reachable,
            let lost = [info.unreachableSince, await sessions.lastDialFailure(device.id)].compactMap({ $0 }).max(),
            (info.lastAdvert ?? Timestamp(microsecondsSinceEpoch: 0)) < lost
        {
            for address in await directory.dialTargets(device.id) {
                do {
                    return try await sessions.connect(address, expecting: device.id, connectTimeout: Self.quickTry)
                } catch {
                    // Reached, and told no: that is the answer (exit 32/31), not "unreachable".
                    if error.code == .revoked || error.code == .refused { throw error }
                }
            }
            let seen = info.lastSeen.map { "last seen \($0.age(at: .now())) ago (\($0.rfc3339))" } ?? "not seen since handoffd started"
            throw DaemonError(.unreachable, "\(device.name) is unreachable: \(seen); is it on, awake, and on this network? (handoffctl peers)")
        }
        var lastError = DaemonError(.unreachable, "\(device.name) cannot be reached")
        // Two rounds: when both devices dial each other at once, one of the two connections is
        // closed, and the session to use is the other one, there a moment later.
        for round in 1...2 {
            if let session = await sessions.session(for: device.id) { return session }
            let targets = await directory.dialTargets(device.id)
            guard !targets.isEmpty else {
                throw DaemonError(.unreachable, "\(device.name) has not been seen on the network; is handoffd running there? (or give HOST:PORT)")
            }
            for address in targets {
                let result: Result<MemberSession, DaemonError>
                do {
                    result = .success(try await sessions.connect(address, expecting: device.id))
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
            if round == 1 { try? await QuietSleep.sleep(for: .milliseconds(200)) }
        }
        throw lastError
    }

    /// `host:port`, `[v6]:port`, or a bare IP address — not a device name.
    static func looksLikeAddress(_ text: String) -> Bool {
        if text.hasPrefix("[") { return true }
        if let colon = text.lastIndex(of: ":"), Int(text[text.index(after: colon)...]) != nil { return true }
        return PeerAddress.isIPAddress(text)
    }
}
