#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffModel
import HandoffSystem

#if canImport(Glibc)
import Glibc
#endif

/// The commands a user gives handoffctl (`--stream-exec`, `--save-exec`), run as `/bin/sh -c`
/// with the user's environment, their input and output through pipes when asked.
enum ShellCommand {
    static let outputLimit = 16 * 1024 * 1024

    struct Started {
        var pid: pid_t
        /// The write end of its standard input, when piped.
        var input: Int32?
        /// The read end of its standard output, when piped.
        var output: Int32?
    }

    /// Starts `command`; the child's ends of the pipes are closed here, ours are returned.
    static func start(_ command: String, pipeInput: Bool, pipeOutput: Bool) throws -> Started {
        // Not close-on-exec, and no need: the child closes every descriptor but its three.
        var input: [Int32] = [-1, -1]
        var output: [Int32] = [-1, -1]
        func closeAll() { (input + output).filter { $0 >= 0 }.forEach { _ = close($0) } }
        guard !pipeInput || Glibc.pipe(&input) == 0, !pipeOutput || Glibc.pipe(&output) == 0 else {
            let e = errno
            closeAll()
            throw CLIError(.failure, "cannot create pipes: \(SystemCall.describe(e))")
        }
        let pid: pid_t
        do {
            pid = try ChildProcess.spawn(
                "/bin/sh", arguments: ["-c", command], environment: ProcessInfo.processInfo.environment,
                stdin: pipeInput ? .descriptor(input[0]) : .null, stdout: pipeOutput ? .descriptor(output[1]) : .inherit
            )
        } catch {
            closeAll()
            throw CLIError(.failure, "\(error)")
        }
        if pipeInput { close(input[0]) }
        if pipeOutput { close(output[1]) }
        return Started(pid: pid, input: pipeInput ? input[1] : nil, output: pipeOutput ? output[0] : nil)
    }

    /// Runs `command` to its end and returns what it printed; a failing command is an error.
    static func output(of command: String) throws -> [UInt8] {
        let started = try start(command, pipeInput: false, pipeOutput: true)
        let out = started.output!
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { raw in SystemCall.retrying { read(out, raw.baseAddress, raw.count) } }
            guard n > 0 else { break }
            bytes += buffer[0..<n]
            if bytes.count > outputLimit { break }
        }
        close(out)
        let ended = ChildProcess.wait(started.pid)
        guard ended == .exited(0) else { throw CLIError(.failure, "\(displayQuoted(command)) \(ended)") }
        guard bytes.count <= outputLimit else { throw CLIError(.payloadTooLarge, "\(displayQuoted(command)) printed more than 16 MiB") }
        return bytes
    }
}
