import CHandoffLinux
#if canImport(Glibc)
import Glibc
#endif

/// A plain POSIX thread for blocking work: copying bytes between descriptors for as long as a
/// stream lasts. (Swift's cooperative pool must never block; handoffctl has no event loop.)
public final class BlockingThread: @unchecked Sendable {
    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    private var thread = pthread_t()
    private var joined = false

    /// Starts `body` on a thread that `join` waits for, named `name` (see `nameThisThread`).
    public init(name: String? = nil, _ body: @escaping @Sendable () -> Void) {
        let body: @Sendable () -> Void = {
            if let name { Self.nameThisThread(name) }
            body()
        }
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        let rc = pthread_create(&thread, nil, Self.entry, context)
        precondition(rc == 0, "pthread_create failed: \(rc)")
    }

    /// Runs `body` on a thread nobody waits for (its resources go when it returns), named `name`
    /// (at most 15 bytes) for `top -H` and perf. Returns false, and `body` never runs, when no
    /// thread can be made (the process or user is at its thread limit): a daemon must answer that
    /// for the one request or stream concerned, not die of it.
    @discardableResult
    public static func detach(name: String, _ body: @escaping @Sendable () -> Void) -> Bool {
        let body: @Sendable () -> Void = {
            nameThisThread(name)
            body()
        }
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        let context = Unmanaged.passRetained(Body(body))
        guard pthread_create(&thread, &attributes, Self.entry, context.toOpaque()) == 0 else {
            context.release()
            return false
        }
        return true
    }

    /// Names the calling thread (at most 15 bytes) for `top -H`, perf and tests: threads
    /// started from a NIO event loop would otherwise carry the loop's name.
    public static func nameThisThread(_ name: String) {
        _ = handoff_name_this_thread(name)
    }

    private static let entry: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = { raw in
        let body = Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue()
        body.run()
        return nil
    }

    /// Waits for the body to return (once).
    public func join() {
        guard !joined else { return }
        joined = true
        pthread_join(thread, nil)
    }
}

/// Copying bytes between descriptors until end-of-file, in big chunks.
public enum BytePump {
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// Whether reading (else writing) failed.
        public var reading: Bool
        public var errno: Int32
        public var description: String { "\(reading ? "reading" : "writing") failed: \(SystemCall.describe(errno))" }
    }

    public static let chunkSize = 256 * 1024

    /// Copies `source` to `destination` until `source` ends; returns the bytes copied.
    public static func copy(from source: Int32, to destination: Int32) -> Result<Int64, Failure> {
        var buffer = [UInt8](repeating: 0, count: chunkSize)
        var total: Int64 = 0
        // Sockets are written with send (no SIGPIPE from a peer that left); anything else with write.
        var st = stat()
        let isSocket = fstat(destination, &st) == 0 && st.st_mode & S_IFMT == S_IFSOCK
        while true {
            let n = buffer.withUnsafeMutableBytes { raw in SystemCall.retrying { Glibc.read(source, raw.baseAddress, raw.count) } }
            if n == 0 { return .success(total) }
            if n < 0 {
                return .failure(Failure(reading: true, errno: errno))
            }
            if let e = buffer.withUnsafeBytes({ writeAll(destination, UnsafeRawBufferPointer(rebasing: $0[0..<n]), isSocket: isSocket) }) {
                return .failure(Failure(reading: false, errno: e))
            }
            total += Int64(n)
        }
    }

    /// Writes every byte; the errno on failure.
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, isSocket: Bool) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let pending = bytes.count - offset
            let n = SystemCall.retrying {
                isSocket ? send(fd, bytes.baseAddress! + offset, pending, Int32(MSG_NOSIGNAL)) : Glibc.write(fd, bytes.baseAddress! + offset, pending)
            }
            if n < 0 { return errno }
            offset += n
        }
        return nil
    }

    /// Reads and drops everything until end-of-file (or an error).
    public static func drain(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: chunkSize)
        while true {
            let n = buffer.withUnsafeMutableBytes { raw in SystemCall.retrying { Glibc.read(fd, raw.baseAddress, raw.count) } }
            if n > 0 { continue }
            return
        }
    }
}
