import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Names changing in directories, from inotify(7): a thread sleeps in poll(2) on the inotify
/// descriptor and a wake-up pipe, so nothing wakes while nothing changes (no polling of files).
/// For handoff-desktop, which follows the recently-used list and the document it offered.
public final class FileWatch: Sendable {
    /// Something happened to `name` in the directory of `watch`.
    public struct Change: Sendable, Equatable {
        public let watch: Int32
        public let name: String
    }

    private let inotify: Int32
    private let wake: (read: Int32, write: Int32)
    private let stopped = Mutex(false)
    /// Whether `inotify` is still open: the thread closes it when it ends, under this lock, so a
    /// watch asked for meanwhile never reaches a descriptor number that was reused.
    private let open: Descriptor

    /// The inotify descriptor's state, shared with the thread (which must not keep the watch alive).
    private final class Descriptor: Sendable {
        let isOpen = Mutex(true)
    }
    public let changes: AsyncStream<Change>

    /// Nil when the kernel or the process limits refuse an inotify instance or a thread.
    public init?() {
        let inotify = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        var ends: [Int32] = [-1, -1]
        guard inotify >= 0 else { return nil }
        guard pipe(&ends) == 0 else {
            close(inotify)
            return nil
        }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
        }
        self.inotify = inotify
        self.wake = (ends[0], ends[1])
        let open = Descriptor()
        self.open = open
        let (changes, post) = AsyncStream.makeStream(of: Change.self, bufferingPolicy: .bufferingNewest(256))
        self.changes = changes
        let started = BlockingThread.detach(name: "handoff-watch") { [inotify, wake] in
            Self.run(inotify: inotify, wake: wake.read, post: post)
            open.isOpen.withLock { isOpen in
                isOpen = false
                close(inotify)
            }
            close(wake.read)
            post.finish()
        }
        if !started {
            close(inotify)
            close(ends[0])
            close(ends[1])
            return nil
        }
    }

    /// Watches the names in `directory` that are written and closed, moved in or out, made or
    /// deleted; nil when it cannot (no such directory, or the user's inotify limit).
    public func watch(directory: String) -> Int32? {
        let mask = UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO) | UInt32(IN_MOVED_FROM) | UInt32(IN_CREATE) | UInt32(IN_DELETE) | UInt32(IN_ONLYDIR)
        let watch = open.isOpen.withLock { $0 ? inotify_add_watch(inotify, directory, mask) : -1 }
        return watch >= 0 ? watch : nil
    }

    public func unwatch(_ watch: Int32) {
        open.isOpen.withLock { isOpen in
            if isOpen { _ = inotify_rm_watch(inotify, watch) }
        }
    }

    /// Ends the thread and `changes`.
    public func stop() {
        let first = stopped.withLock { s -> Bool in
            defer { s = true }
            return !s
        }
        guard first else { return }
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
        close(wake.write)
    }

    deinit { stop() }

    private static func run(inotify: Int32, wake: Int32, post: AsyncStream<Change>.Continuation) {
        let size = 64 * 1024
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: MemoryLayout<inotify_event>.alignment)
        defer { buffer.deallocate() }
        let header = MemoryLayout<inotify_event>.size
        while true {
            var fds = [pollfd(fd: inotify, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            guard SystemCall.retrying({ poll(&fds, 2, -1) }) >= 0, fds[1].revents == 0 else { return }
            let n = read(inotify, buffer.baseAddress, size)
            if n < 0 {
                if errno == EAGAIN || errno == EINTR { continue }
                return
            }
            var offset = 0
            while offset + header <= n {
                let event = buffer.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                let nameBytes = UnsafeRawBufferPointer(rebasing: buffer[(offset + header)..<min(n, offset + header + Int(event.len))])
                let name = String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
                post.yield(Change(watch: event.wd, name: name))
                offset += header + Int(event.len)
            }
        }
    }
}
