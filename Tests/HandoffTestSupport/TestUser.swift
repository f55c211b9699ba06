import Foundation

/// The unprivileged user that tests run every handoffd, handoffctl and app as — as they are
/// deployed. A daemon that died on any TCP connect as a normal user passed every test while the
/// tests ran it as root.
///
/// When the tests run as root (CI does), a user is created for this test process (`hoftPID`, no
/// login, its own group) and removed when the process exits; users left by runs that crashed are
/// removed first. Root then only builds namespaces, installs and traces. When the tests run as a
/// normal user, that user is the test user.
public struct TestUser: Sendable {
    public let name: String
    public let uid: uid_t
    public let gid: gid_t
    /// Whether this user was created for the tests (the test process is root).
    public let isCreated: Bool

    /// The user of this test process (created on first use).
    public static var current: TestUser {
        get throws {
            try shared.withLock { user in
                if let user { return user }
                let made = try make()
                user = made
                return made
            }
        }
    }

    private static let shared = NSLockedValue<TestUser?>(nil)

    private static func make() throws -> TestUser {
        guard geteuid() == 0 else {
            let name = getpwuid(geteuid()).map { String(cString: $0.pointee.pw_name) } ?? "uid\(geteuid())"
            return TestUser(name: name, uid: geteuid(), gid: getegid(), isCreated: false)
        }
        removeStaleUsers()
        let name = "hoft\(getpid())"
        if getpwnam(name) == nil {
            // useradd locks /etc/passwd and gives up at once when another process holds it.
            var result = ProcessResult(status: -1, stdout: "", stderr: "")
            for _ in 0..<20 {
                result = try runBlocking(
                    "/usr/sbin/useradd",
                    ["--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", "--user-group",
                     "--comment", "handoff tests of pid \(getpid())", name]
                )
                if result.status == 0 { break }
                usleep(100_000)
            }
            guard result.status == 0 else { throw TestFailure("cannot create the test user \(name): \(result)") }
            atexit {
                // The process is ending: nothing of this user may outlive it.
                _ = system("/usr/sbin/userdel --force hoft\(getpid()) >/dev/null 2>&1")
                _ = system("rm -rf /tmp/handoff-bin-\(getpid())")
            }
        }
        guard let entry = getpwnam(name) else { throw TestFailure("the test user \(name) does not exist after useradd") }
        return TestUser(name: name, uid: entry.pointee.pw_uid, gid: entry.pointee.pw_gid, isCreated: true)
    }

    /// Users of earlier test processes that are gone (a crash, a kill) are removed.
    private static func removeStaleUsers() {
        guard let passwd = try? String(contentsOfFile: "/etc/passwd", encoding: .utf8) else { return }
        for line in passwd.split(separator: "\n") {
            let name = line.prefix { $0 != ":" }
            guard name.hasPrefix("hoft"), let pid = pid_t(name.dropFirst(4)), pid != getpid() else { continue }
            if kill(pid, 0) != 0, errno == ESRCH {
                _ = try? runBlocking("/usr/sbin/userdel", ["--force", String(name)])
                _ = try? FileManager.default.removeItem(atPath: "/tmp/handoff-bin-\(pid)")
            }
        }
    }

    /// The arguments that run `command` as this user with exactly `environment` (nothing of the
    /// test runner's own environment leaks in).
    public func command(_ command: [String], environment: [String: String]) -> [String] {
        let env = ["/usr/bin/env", "-i"] + environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" } + command
        guard isCreated else { return env }
        return ["/usr/bin/setpriv", "--reuid=\(uid)", "--regid=\(gid)", "--init-groups", "--inh-caps=-all", "--bounding-set=-all"] + env
    }

    /// The environment the user unit (`systemctl --user`) gives handoffd, and a login shell gives
    /// handoffctl: no XDG_STATE_HOME or XDG_CONFIG_HOME (the defaults under HOME apply), and a
    /// normal user's PATH — no /usr/sbin.
    public func environment(home: String, runtimeDirectory: String) -> [String: String] {
        [
            "HOME": home, "USER": name, "LOGNAME": name, "SHELL": "/bin/sh", "LANG": "C.UTF-8",
            "PATH": "/usr/local/bin:/usr/bin:/bin", "XDG_RUNTIME_DIR": runtimeDirectory,
        ]
    }

    /// Creates `path` (and missing parents) owned by this user with `mode`.
    public func makeDirectory(_ path: String, mode: mode_t = 0o700) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        guard chown(path, uid, gid) == 0, chmod(path, mode) == 0 else { throw TestFailure("cannot give \(path) to \(name): errno \(errno)") }
    }

    /// Gives `path` (a file the test wrote for the user) to this user.
    public func own(_ path: String) throws {
        guard chown(path, uid, gid) == 0 else { throw TestFailure("cannot give \(path) to \(name): errno \(errno)") }
    }

    /// A built product (handoffd, handoffctl) where this user can run it: the build directory
    /// itself when every directory above it lets others in, else a copy in a directory of this
    /// test process (a clone under /root is closed to other users).
    public func product(_ name: String) throws -> String {
        let built = Subprocess.product(name)
        guard isCreated, !Self.othersCanReach(built) else { return built }
        let directory = "/tmp/handoff-bin-\(getpid())"
        let copy = directory + "/" + name
        try Self.copying.withLock { _ in
            guard !FileManager.default.fileExists(atPath: copy) else { return }
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            try FileManager.default.copyItem(atPath: built, toPath: copy + ".part")
            chmod(copy + ".part", 0o755)
            rename(copy + ".part", copy)
        }
        return copy
    }

    private static let copying = NSLockedValue<Void>(())

    private static func othersCanReach(_ path: String) -> Bool {
        var st = stat()
        guard stat(path, &st) == 0, st.st_mode & 0o001 != 0 else { return false }
        var directory = (path as NSString).deletingLastPathComponent
        while !directory.isEmpty, directory != "/" {
            guard stat(directory, &st) == 0, st.st_mode & 0o001 != 0 else { return false }
            directory = (directory as NSString).deletingLastPathComponent
        }
        return true
    }

    /// Runs a command to completion without async (user creation happens inside a lock).
    private static func runBlocking(_ executable: String, _ arguments: [String]) throws -> ProcessResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        process.waitUntilExit()
        return ProcessResult(
            status: process.terminationStatus,
            stdout: String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self),
            stderr: String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        )
    }
}

/// A value behind a lock, for the few statics of the test support.
final class NSLockedValue<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
