import Foundation
import HandoffAPI
import HandoffModel
import HandoffSystem
import HandoffTestSupport
import Testing

/// Only the daemon's user (and root) may use it. Two layers keep others out: the socket's file mode
/// (0600 inside a 0700 directory), and the kernel's SO_PEERCRED answer checked on every request.
/// To test the second layer we open the first on purpose.
@Suite(.timeLimit(.minutes(3))) struct PeerCredentialTests {
    static let nobody = "65534"

    func asNobody(_ arguments: [String]) async throws -> ProcessResult {
        try await Subprocess.run(
            "/usr/bin/setpriv",
            ["--reuid=\(Self.nobody)", "--regid=\(Self.nobody)", "--clear-groups", "--"] + arguments
        )
    }

    /// NIO reads SO_PEERCRED into `SocketPeer`: it must be laid out as the kernel's `struct ucred`;
    /// and the same call on a socket pair names this process.
    @Test func socketPeersAreReadAsTheKernelWritesThem() throws {
        #expect(LinuxCalls.socketPeerLayoutIsUcred)
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { pair.forEach { close($0) } }
        let peer = try #require(LinuxCalls.peer(of: pair[0]))
        #expect(peer == LinuxCalls.SocketPeer(pid: getpid(), uid: geteuid(), gid: getegid()))
    }

    @Test func anotherUserIsRefusedByTheSocketModeAndByPeerCredentials() async throws {
        guard geteuid() == 0 else {
            Issue.record("this test must run as root: it starts a client as uid 65534 with setpriv (run `make test` as root)")
            return
        }
        let d = try await TestDaemon.start()
        let before = try await d.client.send(.becomeCurrent(
            PutCurrentActivityRequest(content: ActivityContent(type: "com.example.secret", title: "Mine"))
        ))
        let curl = ["/usr/bin/curl", "-s", "-w", "\n%{http_code}", "--unix-socket", d.socketPath]

        // Layer 1: the file mode. The connection never happens.
        let blocked = try await asNobody(curl + ["http://handoffd/v1/activity/current"])
        #expect(blocked.status == 7, "curl: couldn't connect — \(blocked)")
        #expect(!blocked.stdout.contains("secret"))

        // Layer 2: with the modes opened, the daemon itself refuses, before doing anything.
        #expect(chmod(d.directory, 0o711) == 0)
        #expect(chmod(d.directory + "/run", 0o711) == 0)
        #expect(chmod(d.socketPath, 0o666) == 0)
        for (method, path) in [("GET", "/v1/activity/current"), ("DELETE", "/v1/activity/current"), ("GET", "/v1/status"), ("GET", "/v1/events"), ("GET", "/v1/nope")] {
            let refused = try await asNobody(curl + ["-X", method, "http://handoffd\(path)"])
            #expect(refused.stdout.hasSuffix("\n403"), "\(method) \(path): \(refused)")
            #expect(refused.stdout.contains(#""code":"forbidden""#))
            #expect(refused.stdout.contains("uid 65534 may not use this handoffd"))
            #expect(!refused.stdout.contains("secret"), "nothing about the activity leaks")
        }
        let put = try await asNobody(curl + ["-X", "PUT", "-d", #"{"type":"com.evil.x"}"#, "http://handoffd/v1/activity/current"])
        #expect(put.stdout.hasSuffix("\n403"), "\(put)")
        #expect(try await d.client.send(.currentActivity).activity == before.activity, "the refused requests changed nothing")
        try await d.finish()
    }
}
