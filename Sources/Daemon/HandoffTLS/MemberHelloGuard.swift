import HandoffModel
import Synchronization

/// Whom a member ClientHello is for. The PSK identity's tag covers it (`AccountKeys`), so a hello
/// captured on its way to one device is a stranger's hello anywhere else — and, addressed to a
/// device's advert, to that same device once it advertises under a new instance name (every start,
/// every day). Without that, replaying a captured hello would tell a stranger which hosts belong to
/// the same account (they answer with a ServerHello, everyone else with an alert), and follow a
/// device from address to address (docs/security.md, "A captured ClientHello").
public enum HelloAddressee: Sendable, Hashable {
    /// The device as its advert names it now: the narrowest, and what a device dials when it has
    /// seen the other's advert.
    case advert(DeviceID, instanceName: String)
    /// A device of the account whose current advert this one has not seen (a static peer, or an
    /// advert gone stale).
    case device(DeviceID)
    /// Whoever listens at a typed address (`continue HOST:PORT`, `account sync HOST:PORT`).
    case anyone

    /// Hashed after the salt. `anyone` adds nothing, so a hello to anyone is `salt ‖ HMAC(salt)`.
    var encoded: [UInt8] {
        switch self {
        case .advert(let id, let name): [1] + Array(id.text.utf8) + Array(name.utf8)
        case .device(let id): [2] + Array(id.text.utf8)
        case .anyone: []
        }
    }

    /// The same device without its advert: what to try when the advert's name is no longer the
    /// device's (it restarted, and the new advert has not reached us yet).
    public var withoutAdvert: HelloAddressee {
        if case .advert(let id, _) = self { return .device(id) }
        return self
    }
}

/// (Server) which addressees a member hello may name to be answered here, and the hellos already
/// answered: each identity's salt is used once, so a hello replayed to the device it was meant for
/// is a stranger's too. Salts are remembered only for identities our own keys made (a stranger's
/// cannot push them out), the last `remembered` of them — with the randoms of join hellos (each
/// answered once). This device's own hellos need no memory: their salts carry its mark
/// (`DeviceIdentity.helloSalt`).
public final class MemberHelloGuard: Sendable {
    /// Far more connections than members open between two advert names (a day at most).
    static let remembered = 16_384

    private struct State {
        /// The instance names this device advertises under, newest first (the previous one stays
        /// for the devices that have not seen the new advert yet).
        var names: [String] = []
        var seen: Set<[UInt8]> = []
        var order: [[UInt8]] = []
        var oldest = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Discovery publishes under `name` (new at every start and every day, or renamed by Avahi).
    public func advertising(as name: String) {
        state.withLock { s in
            guard s.names.first != name else { return }
            s.names.removeAll { $0 == name }
            s.names.insert(name, at: 0)
            s.names = Array(s.names.prefix(2))
        }
    }

    /// What a hello to device `me` may be addressed to now.
    func addressees(for me: DeviceID) -> [HelloAddressee] {
        let names = state.withLock { $0.names }
        return names.map { .advert(me, instanceName: $0) } + [.device(me), .anyone]
    }

    /// True the first time a salt comes; false for a replay. Remembered from then on if asked.
    func firstUse(ofSalt salt: [UInt8], remember: Bool = true) -> Bool {
        state.withLock { s in
            guard !s.seen.contains(salt) else { return false }
            guard remember else { return true }
            s.seen.insert(salt)
            if s.order.count < Self.remembered {
                s.order.append(salt)
            } else {
                s.seen.remove(s.order[s.oldest])
                s.order[s.oldest] = salt
                s.oldest = (s.oldest + 1) % Self.remembered
            }
            return true
        }
    }
}
