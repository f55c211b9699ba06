import CHandoffLinux

#if canImport(Glibc)
import Glibc
#endif

/// Starting other programs (handlers, the browser, `--stream-exec` commands; tests use it too).
///
/// posix_spawn with everything a daemon owes its children: a clean signal mask and default signal
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
        public var description: String { "cannot start \(executable): \(String(cString: strerror(errno)))" }
    }

    /// Starts `executable` (an absolute path, or a name looked up in PATH) and returns its pid.
    public static func spawn(
        _ executable: String,
        arguments: [String],
        environment: [String: String],
        stdin: Stream = .null,
        stdout: Stream = .inherit,
        stderr: Stream = .inherit
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

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }

        var pid: pid_t = 0
        let rc =
            executable.contains("/")
            ? posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
            : posix_spawnp(&pid, executable, &actions, &attributes, argv, envp)
        guard rc == 0 else { throw SpawnError(executable: executable, errno: rc) }
        return pid
    }
}
