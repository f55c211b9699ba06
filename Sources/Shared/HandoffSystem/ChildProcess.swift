import CHandoffLinux

#if canImport(Glibc)
import Glibc
#endif

/// Starting other programs: the daemon's handlers, the browser and `--stream-exec` commands,
/// handoffctl's `--stream-exec` and `--save-exec` commands, and the tests' subprocesses.
///
/// posix_spawn with everything a parent owes its children: a clean signal mask and default signal
/// dispositions (threads of ours block signals, and a child would inherit that), and no descriptor
/// but the three it is given (NIO's sockets are not close-on-exec; a child must never hold one).
public enum ChildProcess {
    /// Where a child's standard stream comes from or goes to.
    public enum Stream: Sendable {
        case inherit
        case null
        case file(path: String, flags: Int32)
        case descriptor(Int32)
    }

    public struct SpawnError: Error, Sendable, CustomStringConvertible {
        public var executable: String
        public var errno: Int32
        public var description: String { "cannot start \(executable): \(SystemCall.describe(errno))" }
    }

    /// How a child ended.
    public enum Termination: Sendable, Equatable, CustomStringConvertible {
        case exited(Int32)
        case signalled(Int32)

        public var description: String {
            switch self {
            case .exited(let status): "exited with status \(status)"
            case .signalled(let signal): "was killed by signal \(signal)"
            }
        }
    }

    /// Starts `executable` (an absolute path, or a name looked up in the PATH of `environment`)
    /// and returns its pid.
    ///
    /// - Parameters:
    ///   - newSession: the child leads a session of its own (apps the daemon starts must outlive
    ///     it, and not get the daemon's terminal signals).
    ///   - workingDirectory: where the child starts; the parent's when nil.
    public static func spawn(
        _ executable: String,
        arguments: [String],
        environment: [String: String],
        stdin: Stream = .null,
        stdout: Stream = .inherit,
        stderr: Stream = .inherit,
        newSession: Bool = false,
        workingDirectory: String? = nil
    ) throws(SpawnError) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (fd, stream) in [(Int32(0), stdin), (1, stdout), (2, stderr)] {
            switch stream {
            case .inherit: break
            case .null: posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
            case .file(let path, let flags): posix_spawn_file_actions_addopen(&actions, fd, path, flags, 0o600)
            case .descriptor(let source): posix_spawn_file_actions_adddup2(&actions, source, fd)
            }
        }
        handoff_spawn_file_actions_closefrom(&actions, 3)
        if let workingDirectory { handoff_spawn_file_actions_chdir(&actions, workingDirectory) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        var flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
        if newSession { flags |= handoff_spawn_setsid_flag() }
        posix_spawnattr_setflags(&attributes, Int16(flags))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }

        var pid: pid_t = 0
        let rc: Int32
        if executable.contains("/") {
            rc = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        } else {
            // posix_spawnp searches the parent's PATH; the child's environment is what counts.
            guard let path = search(executable, path: environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin") else {
                throw SpawnError(executable: executable, errno: ENOENT)
            }
            rc = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        }
        guard rc == 0 else { throw SpawnError(executable: executable, errno: rc) }
        return pid
    }

    /// The first executable file called `name` in the colon-separated `path`.
    public static func search(_ name: String, path: String) -> String? {
        for directory in path.split(separator: ":") where directory.hasPrefix("/") {
            let candidate = directory + "/" + name
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// Waits for `pid` to end (blocking: never call it on an event loop or the cooperative pool).
    public static func wait(_ pid: pid_t) -> Termination {
        var status: Int32 = 0
        guard SystemCall.retrying({ waitpid(pid, &status, 0) }) >= 0 else { return .exited(-1) }
        return termination(status)
    }

    /// How `pid` ended, if it has; nil while it runs. Reaps it.
    public static func poll(_ pid: pid_t) -> Termination? {
        var status: Int32 = 0
        let rc = waitpid(pid, &status, WNOHANG)
        if rc == 0 { return nil }
        if rc < 0 { return .exited(-1) }  // not ours, or already reaped
        return termination(status)
    }

    private static func termination(_ status: Int32) -> Termination {
        // WIFEXITED and friends are macros Swift cannot import.
        let signal = status & 0x7f
        return signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
    }
}
