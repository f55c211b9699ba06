import Foundation

/// An app driven like a person at a terminal: commands written to its stdin (a FIFO) one line at
/// a time while it runs, its stdout read as it goes. For the examples (Examples/), which read
/// commands from stdin.
public final class ScriptedApp: @unchecked Sendable {
    public let process: RunningProcess
    private let fifo: String
    private let input: Int32
    /// Whether it leads a process group of its own, ended with it.
    private let ownGroup: Bool

    /// Runs `command` through `launch` (which turns a shell command line into what to run: as
    /// the test user, inside a simulated host…) with stdin from a FIFO at `fifo`, owned by
    /// `owner` when given. With `ownGroup`, it and what it starts (a browser) form a process
    /// group of their own, which `quit` ends if the app does not, and which never outlives the
    /// test.
    public init(fifo: String, owner: TestUser? = nil, ownGroup: Bool = false, _ command: [String], launch: ([String]) throws -> (String, [String])) throws {
        guard mkfifo(fifo, 0o600) == 0 else { throw TestFailure("mkfifo \(fifo): errno \(errno)") }
        try owner?.own(fifo)
        // Read and write: opening never blocks waiting for the app, and the app sees its end of
        // input only when this side closes.
        input = open(fifo, O_RDWR | O_CLOEXEC)
        guard input >= 0 else { throw TestFailure("open \(fifo): errno \(errno)") }
        self.fifo = fifo
        let (executable, arguments) = try launch(["/bin/sh", "-c", "exec \"$0\" \"$@\" < '\(fifo)'"] + command)
        process = try RunningProcess(executable, arguments, newSession: ownGroup)
        self.ownGroup = ownGroup
    }

    /// Types `line` into the app.
    public func send(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(input, $0.baseAddress, $0.count) }
    }

    /// Waits for a line of output containing `text`.
    public func expect(_ text: String, seconds: Double = 60) async throws {
        do {
            try await process.wait(seconds: seconds, for: "'\(text)' from the app") { $0.stdout.contains(text) }
        } catch {
            let lines = { (text: String) in text.split(separator: "\n").joined(separator: " | ") }
            throw TestFailure("no '\(text)' from the app within \(seconds) s; its output: \(lines(process.stdout)); stderr: \(lines(process.stderr))")
        }
    }

    public var output: String { process.stdout }

    /// Ends its input (`quit`), and waits for it to exit: its exit status. An app that leads its
    /// own process group and has not quit after `seconds` is ended with its group — said on the
    /// test's output — and nil is returned: how a busy machine's browser takes its time to quit
    /// is not what a test checks, and it must neither wait for ever nor leave it behind.
    @discardableResult
    public func quit(within seconds: Double = 60) async throws -> Int32? {
        send("quit")
        close(input)
        unlink(fifo)
        do {
            try await process.wait(seconds: seconds, for: "the app to quit") { !$0.isRunning }
        } catch where ownGroup {
            print("\(fifo): the app did not quit within \(seconds) s; ending its process group \(process.pid)")
            await process.stopGroup()
            return nil
        }
        return await process.exitStatus()
    }

    deinit {
        // Only while it runs: its pid cannot have been reused as another group's then.
        if process.isRunning { kill(ownGroup ? -process.pid : process.pid, SIGKILL) }
    }
}
