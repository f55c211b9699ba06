import CHandoffLinux

#if canImport(Glibc)
import Glibc
#endif

/// The Linux calls Swift's Glibc module cannot make (they need `_GNU_SOURCE`, or a C struct's
/// exact layout: `CHandoffLinux`), as Swift functions — so that this module is the only one that
/// imports the shim.
public enum LinuxCalls {
    /// Who holds the other end of a Unix socket, as the kernel says. Laid out as `struct ucred`
    /// (`socketPeerLayoutIsUcred`), so that a typed socket-option API (NIO's) can read
    /// `peerCredentialsOption` into it.
    public struct SocketPeer: Sendable, Equatable {
        public var pid: Int32
        public var uid: UInt32
        public var gid: UInt32

        public init(pid: Int32 = 0, uid: UInt32 = 0, gid: UInt32 = 0) {
            self.pid = pid
            self.uid = uid
            self.gid = gid
        }
    }

    /// SO_PEERCRED, at level SOL_SOCKET.
    public static let peerCredentialsOption = handoff_so_peercred()

    /// `SocketPeer` has the size and field offsets of C's `struct ucred` (`handoff_ucred`, whose
    /// layout CHandoffLinux checks against glibc's).
    public static var socketPeerLayoutIsUcred: Bool {
        MemoryLayout<SocketPeer>.size == MemoryLayout<handoff_ucred>.size
            && MemoryLayout<SocketPeer>.offset(of: \.pid) == MemoryLayout<handoff_ucred>.offset(of: \.pid)
            && MemoryLayout<SocketPeer>.offset(of: \.uid) == MemoryLayout<handoff_ucred>.offset(of: \.uid)
            && MemoryLayout<SocketPeer>.offset(of: \.gid) == MemoryLayout<handoff_ucred>.offset(of: \.gid)
    }

    /// SO_PEERCRED of a connected Unix socket; nil with errno set when it cannot be read.
    public static func peer(of socket: Int32) -> SocketPeer? {
        var credentials = handoff_ucred()
        guard handoff_get_peer_credentials(socket, &credentials) == 0 else { return nil }
        return SocketPeer(pid: credentials.pid, uid: credentials.uid, gid: credentials.gid)
    }

    /// Sends `bytes` with `descriptor` attached (SCM_RIGHTS): the bytes sent, or -1 with errno set.
    public static func send(_ bytes: UnsafeRawBufferPointer, attaching descriptor: Int32, on socket: Int32) -> Int {
        handoff_send_with_descriptor(socket, bytes.baseAddress, bytes.count, descriptor)
    }

    /// Receives into `buffer` and any descriptor sent with it: the bytes received (or -1 with errno
    /// set), and the descriptor — -1 for none, -2 for more than one (all closed).
    public static func receive(into buffer: UnsafeMutableRawBufferPointer, on socket: Int32) -> (count: Int, descriptor: Int32) {
        var descriptor: Int32 = -1
        let n = handoff_receive_with_descriptor(socket, buffer.baseAddress, buffer.count, &descriptor)
        return (n, descriptor)
    }

    /// read(2) that returns EAGAIN rather than wait for the disk (preadv2 with RWF_NOWAIT).
    public static func readWithoutWaiting(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        handoff_read_nowait(fd, buffer.baseAddress, buffer.count)
    }

    /// write(2) that returns EAGAIN rather than wait for the disk (pwritev2 with RWF_NOWAIT).
    public static func writeWithoutWaiting(_ fd: Int32, from bytes: UnsafeRawBufferPointer) -> Int {
        handoff_write_nowait(fd, bytes.baseAddress, bytes.count)
    }

    /// rename(2) that never replaces: false with EEXIST when `to` exists (renameat2
    /// RENAME_NOREPLACE); EINVAL or ENOSYS where the filesystem or kernel cannot do it.
    public static func renameWithoutReplacing(_ from: String, to: String) -> Bool {
        handoff_rename_noreplace(from, to) == 0
    }

    /// glibc's mmap and trim thresholds (mallopt): buffers below `mmapThreshold` come from the
    /// heap and are reused rather than mapped and unmapped for every chunk of a stream.
    @discardableResult
    public static func keepBulkBuffers(mmapThreshold: Int, trimThreshold: Int) -> Bool {
        handoff_keep_bulk_buffers(mmapThreshold, trimThreshold) == 1
    }

    /// glibc's malloc_trim(0): the free pages of every arena go back to the system. It walks the
    /// whole heap: not on an event loop.
    @discardableResult
    public static func releaseFreeMemory() -> Bool {
        handoff_release_free_memory() == 1
    }
}
