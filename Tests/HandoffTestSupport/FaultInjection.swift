import Foundation

/// System calls of a real handoffd made to fail on purpose (Faults/faults.c, preloaded): every
/// Nth setsockopt(2) on a TCP connection, every Nth accept(2) on a TCP listening socket, each
/// with the errnos a test names. Armed and disarmed while the daemon runs; every injected
/// failure is logged, so a test can tell what happened from what it caused.
public struct FaultInjection: Sendable {
    public static let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Faults/faults.c").path

    /// The built library, the file whose presence arms it, and its log.
    public let library: String
    public let armFile: String
    public let logFile: String

    /// Builds the library into `directory` (which the test user can read); the log goes to
    /// `logDirectory` (which the daemon's user can write).
    public static func build(in directory: String, logDirectory: String) async throws -> FaultInjection {
        let library = try await Self.buildLibrary(source, named: "faults.so", in: directory)
        return FaultInjection(library: library, armFile: directory + "/armed", logFile: logDirectory + "/faults.log")
    }

    /// Compiles a preload library from `source` into `directory` (which the test user can read).
    static func buildLibrary(_ source: String, named name: String, in directory: String) async throws -> String {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let library = directory + "/" + name
        let compiler = ["/usr/bin/cc", "/usr/bin/gcc", "/opt/swift/usr/bin/clang"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let compiler else { throw TestFailure("no C compiler (cc, gcc or the toolchain's clang) to build \(name)") }
        let built = try await Subprocess.run(compiler, ["-shared", "-fPIC", "-O1", "-o", library, source, "-ldl", "-lpthread"])
        guard built.status == 0 else { throw TestFailure("cannot build \(name): \(built)") }
        chmod(library, 0o755)
        return library
    }
}

/// A wall clock a test can move for one real handoffd (Faults/clock.c, preloaded): CLOCK_REALTIME
/// only, as an NTP step or a user does — monotonic time, timers and sleeps are untouched.
public struct WallClock: Sendable {
    public static let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Faults/clock.c").path
    public let library: String

    public static func build(in directory: String) async throws -> WallClock {
        WallClock(library: try await FaultInjection.buildLibrary(source, named: "clock.so", in: directory))
    }

    /// The daemon's extra environment: its wall clock is off by the seconds in `offsetFile`.
    public func environment(offsetFile: String) -> [String: String] {
        ["LD_PRELOAD": library, "HANDOFF_CLOCK_OFFSET_FILE": offsetFile]
    }
}

extension FaultInjection {

    /// The daemon's extra environment: `setsockopt` and `accept` as "N:ERRNO,ERRNO…" (faults.c).
    public func environment(setsockopt: String? = nil, accept: String? = nil) -> [String: String] {
        var env = ["LD_PRELOAD": library, "HANDOFF_FAULT_ARM": armFile, "HANDOFF_FAULT_LOG": logFile]
        env["HANDOFF_FAULT_SETSOCKOPT"] = setsockopt
        env["HANDOFF_FAULT_ACCEPT"] = accept
        return env
    }

    public func arm() { _ = FileManager.default.createFile(atPath: armFile, contents: Data()) }
    public func disarm() { try? FileManager.default.removeItem(atPath: armFile) }

    /// The failures injected so far: (call, errno).
    public var injected: [(call: String, errno: Int32)] {
        let text = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ")
            guard parts.count == 2, let e = Int32(parts[1]) else { return nil }
            return (String(parts[0]), e)
        }
    }
}
