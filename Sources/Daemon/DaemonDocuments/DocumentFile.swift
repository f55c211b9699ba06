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

    struct Facts: Equatable {
        let size: Int64
        let modified: Timestamp
    }

    /// `path` for reading. Never blocks on a FIFO (non-blocking open), never follows a link at
    /// the end (callers pass resolved paths: a link there means it changed meanwhile).
    static func open(_ path: String) throws(DaemonError) -> Int32 {
        let fd = SystemCall.retrying { Glibc.open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) }
        guard fd >= 0 else { throw DaemonError(.notOffered, "cannot open \(path): \(SystemCall.describe(errno))") }
        return fd
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
