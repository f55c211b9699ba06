#if canImport(Glibc)
import Glibc
#endif

/// The service manager's notification protocol (sd_notify(3)), spoken directly: one datagram of
/// `KEY=value` lines to the Unix socket named by `$NOTIFY_SOCKET` (`@name` is an abstract socket).
/// Not linking libsystemd keeps handoffd the same binary with or without systemd.
///
/// handoffd sends `READY=1` once it serves (local socket bound, peer port bound, discovery
/// started), `STATUS=` lines as its state changes, `WATCHDOG=1` every half `WatchdogSec` while its
/// actors and event loops answer, and `STOPPING=1` on shutdown.
public struct SystemdNotifier: Sendable {
    /// Where notifications go; nil when not started by systemd (or `Type=notify` is not set).
    public let socketPath: String?
    /// `WatchdogSec=` as systemd told us (`$WATCHDOG_USEC`, for our pid only).
    public let watchdogInterval: Duration?

    public init(socketPath: String?, watchdogInterval: Duration? = nil) {
        self.socketPath = socketPath.flatMap { $0.isEmpty ? nil : $0 }
        self.watchdogInterval = watchdogInterval
    }

    /// From `NOTIFY_SOCKET`, `WATCHDOG_USEC` and `WATCHDOG_PID` (which must be ours, if set).
    public init(environment: [String: String], pid: Int32 = getpid()) {
        var interval: Duration?
        if let text = environment["WATCHDOG_USEC"], let usec = Int64(text), usec > 0,
            environment["WATCHDOG_PID"].map({ Int32($0) == pid }) ?? true
        {
            interval = .microseconds(usec)
        }
        self.init(socketPath: environment["NOTIFY_SOCKET"], watchdogInterval: interval)
    }

    /// From this process's environment.
    public static func fromProcessEnvironment() -> SystemdNotifier {
        var environment: [String: String] = [:]
        for name in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"] {
            if let value = getenv(name) { environment[name] = String(cString: value) }
        }
        return SystemdNotifier(environment: environment)
    }

    public var isActive: Bool { socketPath != nil }

    /// Sends `fields` as one datagram; false if there is no socket or it could not be sent (a
    /// notification is advice to the service manager, never a reason to fail).
    @discardableResult
    public func notify(_ fields: [(String, String)]) -> Bool {
        guard let socketPath else { return false }
        let message = fields.map { "\($0.0)=\($0.1.replacing("\n", with: " "))" }.joined(separator: "\n")
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var path = Array(socketPath.utf8)
        if path.first == UInt8(ascii: "@") { path[0] = 0 }  // abstract namespace
        guard path.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count + (path.first == 0 ? 0 : 1))
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let bytes = Array(message.utf8)
        let sent = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL), $0, length) }
        }
        return sent == bytes.count
    }

    public func ready(status: String) { notify([("READY", "1"), ("STATUS", status)]) }
    public func status(_ status: String) { notify([("STATUS", status)]) }
    public func stopping() { notify([("STOPPING", "1"), ("STATUS", "stopping")]) }
    public func watchdog() { notify([("WATCHDOG", "1")]) }
}
