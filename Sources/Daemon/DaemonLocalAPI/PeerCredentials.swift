import DaemonCore
import HandoffAPI
import HandoffSystem
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Who is on the other end of a local-API connection, as the kernel says (SO_PEERCRED) — not as
/// the client claims.
public typealias PeerCredentials = LinuxCalls.SocketPeer

extension PeerCredentials {
    /// Reads SO_PEERCRED from an accepted Unix-socket channel.
    static func of(_ channel: any Channel) -> EventLoopFuture<PeerCredentials> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeFailedFuture(
                DaemonError(.socket, "the local API channel cannot report peer credentials")
            )
        }
        precondition(LinuxCalls.socketPeerLayoutIsUcred, "SocketPeer is not laid out as struct ucred")
        return provider.unsafeGetSocketOption(level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(LinuxCalls.peerCredentialsOption))
    }

    /// Only the daemon's own user, and root, may use it (docs/local-api.md, "Who may connect").
    func authorize(daemonUID: UInt32) throws(LocalAPIError) {
        guard uid == daemonUID || uid == 0 else {
            throw LocalAPIError(
                .forbidden,
                "uid \(uid) may not use this handoffd: it belongs to uid \(daemonUID). Run handoffctl as that user, or start your own handoffd"
            )
        }
    }
}
