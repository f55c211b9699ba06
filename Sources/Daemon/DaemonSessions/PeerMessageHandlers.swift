import DaemonCore
import HandoffAPI
import HandoffPeer
import Synchronization

/// A message on a member session, with the session it came on: who sent it, how to answer, and
/// the session registry for what concerns every session (docs/architecture.md, "Adding a peer
/// message").
package struct PeerTalk: Sendable {
    package let session: MemberSession
    /// The sessions, for work that outlives the message (`sessions.spawn`) or concerns them all.
    package let sessions: MemberSessions

    package var peer: LocalEvent.PeerRef { LocalEvent.PeerRef(id: session.peerID, name: session.peerName) }

    package func send(_ message: PeerMessage) async throws { try await session.send(message) }
}

/// What a feature answers on member sessions: the kinds of peer message it owns, and what it
/// does with each. Features register theirs with `PeerMessageHandlers` in the composition root,
/// as they implement `StreamService` for streams; MemberSessions only carries the sessions.
package protocol PeerMessageHandler: Sendable {
    /// The kinds it answers; a kind has one handler.
    var kinds: Set<PeerMessage.Kind> { get }
    /// A session opened: what this feature tells the other device first (nothing by default).
    func opened(_ talk: PeerTalk) async throws
    /// One message of its kinds. Throwing ends the session (`PeerSessionError` says why).
    func handle(_ message: PeerMessage, _ talk: PeerTalk) async throws
}

extension PeerMessageHandler {
    package func opened(_ talk: PeerTalk) async throws {}
}

/// The handlers by kind, filled in by the composition root before any session starts. A kind
/// with no handler is refused as unexpected (the handshake's and streams' messages have their
/// own connections); a kind this version does not know is skipped.
package final class PeerMessageHandlers: Sendable {
    private struct Table {
        var byKind: [PeerMessage.Kind: any PeerMessageHandler] = [:]
        /// In the order registered: who speaks first when a session opens.
        var all: [any PeerMessageHandler] = []
    }

    private let table = Mutex(Table())

    package init() {}

    /// Adds `handler` for its kinds. `replacing`: it takes kinds another handler had (tests and
    /// features that wrap another); otherwise a kind taken twice is a wiring mistake.
    package func register(_ handler: any PeerMessageHandler, replacing: Bool = false) {
        table.withLock { t in
            for kind in handler.kinds {
                precondition(replacing || t.byKind[kind] == nil, "two handlers for the peer message \(kind)")
                t.byKind[kind] = handler
            }
            t.all.append(handler)
        }
    }

    func handler(for kind: PeerMessage.Kind) -> (any PeerMessageHandler)? {
        table.withLock { $0.byKind[kind] }
    }

    func opened(_ talk: PeerTalk) async throws {
        for handler in table.withLock({ $0.all }) { try await handler.opened(talk) }
    }
}
