import DaemonCore
import HandoffAPI
import HandoffSystem
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Who is on the other end of a local-API connection, as the kernel says (SO_PEERCRED) — not as
/// the client claims.
public struct PeerCredentials: Sendable, Equatable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32

    /// Reads SO_PEERCRED from an accepted Unix-socket channel.
    static func of(_ channel: any Channel) -> EventLoopFuture<PeerCredentials> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeFailedFuture(
                DaemonError(.socket, "the local API channel cannot report peer credentials")
            )
        }
        precondition(LinuxCalls.socketPeerLayoutIsUcred, "SocketPeer is not laid out as struct ucred")
        let future: EventLoopFuture<LinuxCalls.SocketPeer> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET),
            name: SocketOptionName(LinuxCalls.peerCredentialsOption)
        )
        return future.map { PeerCredentials(pid: $0.pid, uid: $0.uid, gid: $0.gid) }
    }

    /// Only the daemon's own user, and root, may use it (SPEC §6).
    func authorize(daemonUID: UInt32) throws(LocalAPIError) {
        guard uid == daemonUID || uid == 0 else {
            throw LocalAPIError(
                .forbidden,
                "uid \(uid) may not use this handoffd: it belongs to uid \(daemonUID). Run handoffctl as that user, or start your own handoffd"
            )
        }
    }
}

