import Dispatch
import Foundation
import HandoffSystem

/// The outcome of running a program to completion.
public struct ProcessResult: Sendable, CustomStringConvertible {
    public var status: Int32
    public var stdout: String
    public var stderr: String

    public var description: String { "exit \(status)\nstdout: \(stdout)\nstderr: \(stderr)" }
}

/// Runs programs for tests.
///
/// Through `ChildProcess` (the daemon's own spawner) rather than Foundation's Process: the test
/// runner's threads block signals, and a child would inherit that mask and never see the
/// SIGINT/SIGTERM our tests are about. Children get stdin/stdout/stderr and no other descriptor. Output goes to files (no pipe can fill up and stall), and
/// waiting happens on a dispatch queue, never on a thread of the cooperative pool that an
/// in-process daemon needs.
public enum Subprocess {
    public static func run(
        _ executable: String,
        _ arguments: [String],
        stdin: Data? = nil,
        environment: [String: String]? = nil
    ) async throws -> ProcessResult {
        let process = try RunningProcess(executable, arguments, stdin: stdin, environment: environment)
        // A test that hits its time limit is cancelled: its programs must not outlive it.
        let status = await withTaskCancellationHandler {
            await process.exitStatus()
        } onCancel: {
            kill(process.pid, SIGKILL)
        }
        return ProcessResult(status: status, stdout: process.stdout, stderr: process.stderr)
    }

    /// A built product of this package (handoffctl, handoffd), next to the test bundle.
    public static func product(_ name: String) -> String {
        if let override = ProcessInfo.processInfo.environment["HANDOFF_BIN_DIR"] {
            return override + "/" + name
        }
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return exe.deletingLastPathComponent().appendingPathComponent(name).path
    }
}

/// A program left running (e.g. `handoffctl watch`, a daemon): its output is read while it runs.
public final class RunningProcess: @unchecked Sendable {
    public let pid: pid_t
    private let directory: String
    public let stdoutPath: String
    public let stderrPath: String
    private let exit = DispatchSemaphoreBox()

    /// With `newSession`, the process leads a session (and process group) of its own: what it
    /// starts can be ended with it (`stopGroup`).
    public init(_ executable: String, _ arguments: [String], stdin: Data? = nil, environment: [String: String]? = nil, newSession: Bool = false) throws {
        directory = try TempDirectory.make(prefix: "handoff-proc")
        stdoutPath = directory + "/out"
        stderrPath = directory + "/err"
        let stdinPath = directory + "/in"
        try (stdin ?? Data()).write(to: URL(fileURLWithPath: stdinPath))

        let pid = try ChildProcess.spawn(
            executable,
            arguments: arguments,
            environment: environment ?? ProcessInfo.processInfo.environment,
            stdin: .file(path: stdinPath, flags: O_RDONLY),
            stdout: .file(path: stdoutPath, flags: O_WRONLY | O_CREAT | O_TRUNC),
            stderr: .file(path: stderrPath, flags: O_WRONLY | O_CREAT | O_TRUNC),
            newSession: newSession
        )
        self.pid = pid
        let box = exit
        let child = pid
        DispatchQueue(label: "handoff.test.wait.\(child)").async {
            var status: Int32 = 0
            while waitpid(child, &status, 0) < 0, errno == EINTR {}
            box.set(status)
        }
    }

    /// Output as text; bytes that are not UTF-8 (a peer's binary frames) become U+FFFD, never "".
    public var stdout: String { String(decoding: FileManager.default.contents(atPath: stdoutPath) ?? Data(), as: UTF8.self) }
    public var stderr: String { String(decoding: FileManager.default.contents(atPath: stderrPath) ?? Data(), as: UTF8.self) }
    public var isRunning: Bool { exit.value == nil }

    /// The exit status (128 + N when killed by signal N, as a shell reports it).
    public func exitStatus() async -> Int32 {
        let raw = await exit.wait()
        let signal = raw & 0x7F
        return signal == 0 ? (raw >> 8) & 0xFF : 128 + signal
    }

    /// Polls until `condition` holds (checked every 10 ms), or fails after `seconds`.
    public func wait(seconds: Double = 60, for what: String, until condition: (RunningProcess) -> Bool) async throws {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while !condition(self) {
            guard ContinuousClock.now < deadline else {
                throw TestFailure("timed out waiting for \(what); stdout: \(stdout) stderr: \(stderr)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Sends `signal`, waits for the process to end (at most 10 s, then SIGKILL), returns its status.
    /// Its output stays readable.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM) async throws -> Int32 {
        if isRunning { kill(pid, signal) }
        do {
            try await wait(for: "process \(pid) to exit after signal \(signal)") { !$0.isRunning }
        } catch {
            kill(pid, SIGKILL)
            _ = await exitStatus()
            throw error
        }
        return await exitStatus()
    }

    /// Ends the process group the process leads (`newSession`) — the process and whatever it
    /// started that did not leave it: SIGTERM, then SIGKILL after 10 s.
    public func stopGroup() async {
        kill(-pid, SIGTERM)
        if (try? await wait(seconds: 10, for: "process group \(pid) to end") { !$0.isRunning }) == nil { kill(-pid, SIGKILL) }
        _ = await exitStatus()
    }

    /// Output stays readable until the handle goes away.
    deinit {
        if isRunning { kill(pid, SIGKILL) }
        TempDirectory.remove(directory)
    }
}

/// A value set once from any thread, awaited from async code.
final class DispatchSemaphoreBox: @unchecked Sendable {
    private let lock = NSLock()
    private var status: Int32?
    private var waiters: [CheckedContinuation<Int32, Never>] = []

    var value: Int32? { lock.withLock { status } }

    func set(_ value: Int32) {
        let toResume = lock.withLock { () -> [CheckedContinuation<Int32, Never>] in
            status = value
            defer { waiters = [] }
            return waiters
        }
        toResume.forEach { $0.resume(returning: value) }
    }

    func wait() async -> Int32 {
        await withCheckedContinuation { c in
            let ready = lock.withLock { () -> Int32? in
                if status == nil { waiters.append(c) }
                return status
            }
            if let ready { c.resume(returning: ready) }
        }
    }
}

/// A home for a real `handoffd` process, for tests of the binary itself: start it, restart it,
/// kill it. It runs as the test user (`TestUser`) in that user's own home, with the environment
/// the user unit gives it: `$XDG_RUNTIME_DIR` (0700) under the home, and state and configuration
/// in their XDG defaults (`~/.local/state/handoff`, `~/.config/handoff`).
public struct DaemonHome: Sendable {
    public let directory: String
    public let user: TestUser
    public let environment: [String: String]
    public var socketPath: String { directory + "/run/handoff/handoffd.sock" }
    public var stateDirectory: String { directory + "/.local/state/handoff" }

    public init() throws {
        user = try TestUser.current
        directory = try TempDirectory.make()
        try user.makeDirectory(directory)
        try user.makeDirectory(directory + "/run")
        environment = user.environment(home: directory, runtimeDirectory: directory + "/run")
    }

    /// Starts handoffd (peers on loopback at a free port) and returns once its socket accepts.
    /// `wrapper` runs in front of it, as the same user (e.g. strace and its options);
    /// `extraEnvironment` is added to the user unit's.
    public func start(_ arguments: [String] = [], wrapper: [String] = [], extraEnvironment: [String: String] = [:]) async throws -> RunningProcess {
        let command = wrapper + [try user.product("handoffd"), "--port", "0", "--listen", "127.0.0.1"] + arguments
        let argv = user.command(command, environment: environment.merging(extraEnvironment) { $1 })
        let process = try RunningProcess(argv[0], Array(argv.dropFirst()))
        let socket = socketPath
        try await process.wait(for: "handoffd to listen") { _ in SocketProbe.accepts(socket) }
        return process
    }

    /// Runs handoffd with `arguments` (and no others) as this home's user, to completion: for
    /// how it fails.
    public func runDaemon(_ arguments: [String]) async throws -> ProcessResult {
        let argv = user.command([try user.product("handoffd")] + arguments, environment: environment)
        return try await Subprocess.run(argv[0], Array(argv.dropFirst()))
    }

    /// Runs `handoffctl ARGUMENTS` as this home's user, to completion.
    public func ctl(_ arguments: [String], stdin: Data? = nil) async throws -> ProcessResult {
        let argv = user.command([try user.product("handoffctl")] + arguments, environment: environment)
        return try await Subprocess.run(argv[0], Array(argv.dropFirst()), stdin: stdin)
    }

    /// Starts `handoffctl ARGUMENTS` as this home's user and leaves it running.
    public func ctlProcess(_ arguments: [String]) throws -> RunningProcess {
        let argv = user.command([try user.product("handoffctl")] + arguments, environment: environment)
        return try RunningProcess(argv[0], Array(argv.dropFirst()))
    }

    /// Writes `data` to `name` in the home, as a file of its user.
    @discardableResult
    public func write(_ data: Data, to name: String) throws -> String {
        let path = directory + "/" + name
        try data.write(to: URL(fileURLWithPath: path))
        try user.own(path)
        return path
    }

    public func remove() {
        TempDirectory.remove(directory)
    }
}
