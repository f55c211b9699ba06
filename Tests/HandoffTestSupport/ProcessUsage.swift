import Foundation

/// What a process holds, read from /proc: for the tests that bound a daemon's descriptors,
/// threads and memory under load (-1 when the process is gone).
public enum ProcessUsage {
    public static func descriptors(_ pid: pid_t) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    /// What each descriptor of the process is open on (`socket:[…]`, a path, `anon_inode:…`).
    public static func descriptorTargets(_ pid: pid_t) -> [String] {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        return fds.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)") }
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

    /// Context switches (voluntary and not) of each of the process's threads now, by thread id:
    /// each is a wakeup, or a preemption.
    public static func contextSwitches(_ pid: pid_t) -> [String: Int] {
        var out: [String: Int] = [:]
        for tid in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? [] {
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/status", encoding: .utf8) else { continue }
            out[tid] = status.split(separator: "\n")
                .filter { $0.hasPrefix("voluntary_ctxt_switches:") || $0.hasPrefix("nonvoluntary_ctxt_switches:") }
                .compactMap { Int($0.split(separator: "\t").last?.trimmingCharacters(in: .whitespaces) ?? "") }
                .reduce(0, +)
        }
        return out
    }

    /// How many times all of the process's threads woke during `seconds`, those that start or
    /// end within it too (sampled every half second).
    public static func wakeups(_ pid: pid_t, during seconds: Double) async throws -> Int {
        let first = contextSwitches(pid)
        var last = first
        let end = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(500))
            last.merge(contextSwitches(pid)) { $1 }
        }
        return last.reduce(0) { $0 + $1.value - (first[$1.key] ?? 0) }
    }

    private static func statusKiB(_ pid: pid_t, _ field: String) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field) })
        else { return -1 }
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
    }
}
