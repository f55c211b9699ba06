import Foundation

/// A stranger on the network hammering a device's port: it keeps up to `connections` TCP
/// connections open, each sending garbage (half of them something that starts like a TLS
/// record), and churns them — closing the oldest (every other one with a reset) to open another
/// — until stopped. It runs on a thread of its own, inside another host's network namespace when
/// given one (`setns` moves only that thread), so it needs no program on the simulated host.
public final class StrangerFlood: @unchecked Sendable {
    public struct Counts: Sendable, CustomStringConvertible {
        public var attempted = 0
        public var connected = 0
        public var failed = 0
        public var peakOpen = 0
        public var description: String { "\(attempted) attempted, \(connected) connected, \(failed) failed, \(peakOpen) open at most" }
    }

    private let lock = NSLock()
    private var counts = Counts()
    private var running = true
    private let done = DispatchSemaphore(value: 0)

    /// Starts flooding `host:port` (IPv4) from `source` (an address of this host, or any).
    /// `netns` is a network namespace file (/run/netns/NAME) to connect from, or nil for this
    /// process's own.
    /// `silent` connections send nothing: each holds a handshake slot (and a descriptor) until
    /// the daemon's handshake timeout. Once `connections` are open, one is replaced every `churn`.
    public init(
        netns: String? = nil, source: String? = nil, host: String, port: Int, connections: Int, silent: Bool = false,
        churn: Duration = .milliseconds(10)
    ) throws {
        let churnMicroseconds = useconds_t(churn.components.seconds * 1_000_000 + churn.components.attoseconds / 1_000_000_000_000)
        let setupError = NSLockedValue<String?>(nil)
        let started = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            if let netns {
                let fd = open(netns, O_RDONLY | O_CLOEXEC)
                if fd < 0 || enterNamespace(fd, cloneNewNet) != 0 {
                    let e = errno
                    setupError.withLock { $0 = "cannot enter \(netns): errno \(e)" }
                }
                if fd >= 0 { close(fd) }
            }
            started.signal()
            if setupError.withLock({ $0 }) == nil { flood(source: source, host: host, port: port, connections: connections, silent: silent, churn: churnMicroseconds) }
            done.signal()
        }
        thread.start()
        started.wait()
        if let error = setupError.withLock({ $0 }) { throw TestFailure(error) }
    }

    /// Stops, closes every connection, and says what happened; calling it again (a `defer` after
    /// an explicit stop) only reports the counts.
    @discardableResult
    public func stop() -> Counts {
        let wasRunning = lock.withLock { () -> Bool in
            defer { running = false }
            return running
        }
        if wasRunning { done.wait() }
        return lock.withLock { counts }
    }

    public var current: Counts { lock.withLock { counts } }

    private func flood(source: String?, host: String, port: Int, connections: Int, silent: Bool, churn: useconds_t) {
        var open: [Int32] = []
        var n = 0
        defer { open.forEach { close($0) } }
        while lock.withLock({ running }) {
            if open.count >= connections {
                let oldest = open.removeFirst()
                if n % 2 == 0 {
                    var linger = linger(l_onoff: 1, l_linger: 0)  // a reset, not a goodbye
                    setsockopt(oldest, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
                }
                close(oldest)
            }
            n += 1
            lock.withLock { counts.attempted += 1 }
            if let fd = connect(source: source, host: host, port: port) {
                var garbage = (0..<Int.random(in: 16...600)).map { _ in UInt8.random(in: 0...255) }
                // Half look like the start of a TLS handshake record, to get past a first glance.
                if n % 2 == 0 { garbage.replaceSubrange(0..<5, with: [0x16, 0x03, 0x01, 0x02, 0x00]) }
                if !silent { _ = garbage.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) } }
                open.append(fd)
                lock.withLock {
                    counts.connected += 1
                    counts.peakOpen = max(counts.peakOpen, open.count)
                }
            } else {
                lock.withLock { counts.failed += 1 }
            }
            // Paced: a flood of connections, not a busy loop stealing the test machine's CPU
            // (in steps, so that `stop` is heard at once).
            var pause = open.count < connections ? 2_000 : churn
            while pause > 0, lock.withLock({ running }) {
                let step = min(pause, 10_000)
                usleep(step)
                pause -= step
            }
        }
    }

    private func connect(source: String?, host: String, port: Int) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, source, &local.sin_addr)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                close(fd)
                return nil
            }
        }
        var timeout = timeval(tv_sec: 1, tv_usec: 0)  // connect(2) honours the send timeout
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            close(fd)
            return nil
        }
        return fd
    }
}

// setns(2) is _GNU_SOURCE only, which Swift's Glibc module does not import.
@_silgen_name("setns") private func enterNamespace(_ fd: Int32, _ type: Int32) -> Int32
private let cloneNewNet: Int32 = 0x4000_0000
