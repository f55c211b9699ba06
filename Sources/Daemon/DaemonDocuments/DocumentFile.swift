import DaemonCore
import HandoffModel
import HandoffSystem
import HandoffTLS

#if canImport(Glibc)
import Glibc
#endif

/// A document's file as handoffd reads it: opened without following a last link, its size and
/// modification time, its SHA-256. All of it blocks on the disk, so it runs on a thread of its
/// own (`thread`): reading a large file through must hold up neither the event loop nor the disk
/// thread's saves.
enum DocumentFile {
    static let thread = DiskThread(name: "handoff-docs")
    /// Opening a document to send it: quick, but it may wait on a stuck mount — on a thread
    /// that neither hashing nor the daemon's own saves wait behind.
    static let opening = DiskThread(name: "handoff-docopen")

    struct Facts: Equatable {
        let size: Int64
        let modified: Timestamp
    }

    /// `path` (a resolved path) for reading, if what was opened is still there: callers resolved
    /// it and checked where it is, and a folder on the way swapped for a link since would lead
    /// elsewhere — so the descriptor's own path must be `path`. Never blocks on a FIFO (opened
    /// without waiting, which is then turned off for reading), never follows a link at the end.
    static func open(_ path: String) throws(DaemonError) -> Int32 {
        let fd = SystemCall.retrying { Glibc.open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) }
        guard fd >= 0 else { throw DaemonError(.notOffered, "cannot open \(path): \(SystemCall.describe(errno))") }
        guard let opened = openedPath(fd) else {
            close(fd)
            throw DaemonError(.notOffered, "cannot tell where \(path) was opened (is /proc mounted?)")
        }
        guard opened == path else {
            close(fd)
            throw DaemonError(.notOffered, "\(path) moved while it was opened")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return fd
    }

    /// Where the kernel says `fd` is (`/proc/self/fd`).
    static func openedPath(_ fd: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A regular file's size and modification time; nil for anything else.
    static func facts(_ fd: Int32) -> Facts? {
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { return nil }
        let modified = Timestamp(microsecondsSinceEpoch: Int64(st.st_mtim.tv_sec) * 1_000_000 + Int64(st.st_mtim.tv_nsec) / 1000)
        return Facts(size: Int64(st.st_size), modified: modified)
    }

    static let chunkSize = 1 << 20

    /// SHA-256 of the whole file, from its start (the descriptor's offset is left alone), as 64
    /// lowercase hexadecimal digits.
    static func sha256(_ fd: Int32) throws(DaemonError) -> String {
        let digest = Crypto.SHA256Digest()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var offset: off_t = 0
        while true {
            let n = SystemCall.retrying { pread(fd, buffer.baseAddress, chunkSize, offset) }
            guard n >= 0 else { throw DaemonError(.notOffered, "cannot read the document: \(SystemCall.describe(errno))") }
            if n == 0 { break }
            digest.update(UnsafeRawBufferPointer(rebasing: buffer[..<n]))
            offset += off_t(n)
        }
        return digest.finish().lowercaseHex
    }
}
