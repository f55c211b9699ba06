import Foundation

/// What a process holds, read from /proc: for the tests that bound a daemon's descriptors,
/// threads and memory under load (-1 when the process is gone).
public enum ProcessUsage {
    public static func descriptors(_ pid: pid_t) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    public static func threads(_ pid: pid_t) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").count) ?? -1
    }

    /// Resident memory, in KiB: all of it (`VmRSS`, which counts the program's code and libraries
    /// as far as they are paged in) …
    public static func residentKiB(_ pid: pid_t) -> Int { statusKiB(pid, "VmRSS:") }

    /// … or only the process's own memory (`RssAnon`: heaps, stacks, buffers), which is what grows
    /// when it holds on to data. Code paged back in after the system reclaimed it counts in VmRSS
    /// and not here.
    public static func anonymousKiB(_ pid: pid_t) -> Int { statusKiB(pid, "RssAnon:") }

    private static func statusKiB(_ pid: pid_t, _ field: String) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field) })
        else { return -1 }
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
    }
}
