import HandoffSystem
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The small window that asks for an invite code (docs/desktop.md, "Joining without a
/// terminal"): zenity's entry dialog, a separate process. Debian's GNOME tool for exactly this —
/// one line of text, OK and Cancel, in the desktop's own toolkit and theme — so the agent links
/// no toolkit and its one thread never waits on a window.
package struct JoinDialog: Sendable {
    package static let title = "Join a handoff account"
    package static let program = "zenity"

    package enum Outcome: Equatable, Sendable {
        case entered(String)
        case cancelled
        /// zenity is not installed or could not start (the reason).
        case unavailable(String)
    }

    /// The session's variables (DISPLAY, WAYLAND_DISPLAY, PATH…).
    package let environment: [String: String]

    package init(environment: [String: String]) { self.environment = environment }

    /// What the dialog says above the entry; after a refused code, why, first.
    package static func text(refused: String?) -> String {
        let ask = "Type the code shown on the device that invites (Add a device… in its Handoff menu, or handoffctl account invite):"
        guard let refused else { return ask }
        return "That code did not work: \(refused)\n\n" + ask
    }

    package static func arguments(refused: String?) -> [String] {
        ["--entry", "--title", title, "--text", label(text(refused: refused)), "--width", "460"]
    }

    /// `text` as zenity's entry label shows it literally: zenity reads backslash escapes in it
    /// (`\t`, `\\`) and GTK takes `_` for a mnemonic; and wrapped, since the label does not wrap
    /// and a long line (an error from handoffd) would push the buttons off the screen.
    package static func label(_ text: String, width: Int = 64) -> String {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            var wrapped: [String] = []
            var current = ""
            for word in line.split(separator: " ") {
                if !current.isEmpty, current.count + 1 + word.count > width {
                    wrapped.append(current)
                    current = String(word)
                } else {
                    current += current.isEmpty ? String(word) : " " + word
                }
            }
            wrapped.append(current)
            return wrapped.joined(separator: "\n")
        }
        return lines.joined(separator: "\n").replacing("\\", with: "\\\\").replacing("_", with: "__")
    }

    /// Shows the dialog and returns what the user did. Cancelling the task closes the window.
    package func ask(refused: String?) async -> Outcome {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return .unavailable(SystemCall.describe(errno)) }
        for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let pid: pid_t
        do throws(ChildProcess.SpawnError) {
            pid = try ChildProcess.spawn(Self.program, arguments: Self.arguments(refused: refused), environment: environment, stdout: .descriptor(ends[1]), stderr: .null)
        } catch {
            close(ends[0])
            close(ends[1])
            return .unavailable(error.errno == ENOENT ? "zenity is not installed (sudo apt install zenity)" : error.description)
        }
        close(ends[1])
        let read = ends[0]
        // Signalled only while it is certainly ours: the pid is not reaped (so not reused) until
        // `ended` is set under the same lock.
        let ended = Reaping()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (done: CheckedContinuation<Outcome, Never>) in
                let started = BlockingThread.detach(name: "handoff-dialog") {
                    // What zenity prints (the code and a newline), then how it ended.
                    var output: [UInt8] = []
                    var buffer = [UInt8](repeating: 0, count: 512)
                    while output.count < 4096 {
                        let n = SystemCall.retrying { Glibc.read(read, &buffer, buffer.count) }
                        if n <= 0 { break }
                        output += buffer[0..<Int(n)]
                    }
                    close(read)
                    var info = siginfo_t()
                    _ = SystemCall.retrying { waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) }
                    ended.reaping()
                    let how = ChildProcess.wait(pid)
                    let text = String(decoding: output, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
                    // 0: OK; 1: Cancel, Escape or the window closed; anything else: it failed.
                    switch how {
                    case .exited(0): done.resume(returning: .entered(text))
                    case .exited(1), .signalled: done.resume(returning: .cancelled)
                    default: done.resume(returning: .unavailable("zenity ended: \(how)"))
                    }
                }
                if !started {
                    kill(pid, SIGTERM)
                    close(read)
                    BlockingThread.detach(name: "handoff-reap") { _ = ChildProcess.wait(pid) }
                    done.resume(returning: .unavailable("no thread to wait for the dialog"))
                }
            }
        } onCancel: {
            ended.signalUnlessReaped(pid)
        }
    }
}

/// Whether a child is about to be reaped: set (under the lock) once it has exited and before
/// `waitpid`, so that a signal sent under the same lock reaches that child, never a process
/// that reused its pid.
final class Reaping: Sendable {
    private let reaped = Mutex(false)

    func reaping() { reaped.withLock { $0 = true } }

    func signalUnlessReaped(_ pid: pid_t) {
        reaped.withLock { if !$0 { _ = kill(pid, SIGTERM) } }
    }
}
