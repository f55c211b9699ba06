import Foundation
import HandoffAPI
import HandoffModel
import HandoffTLS
import HandoffTestSupport
import Testing

extension EndToEndTests {
    /// Nothing stable for strangers: two captures of the link, each across a rotation of both
    /// members (a restart: new instance names, salts and tags), each with a stranger's
    /// connections to alpha — its own handoffd of another account, and a stock `openssl s_client`
    /// whose transcript shows what it decrypted. No 8-byte string that alpha sent turns up in both
    /// rounds, except Avahi's host records and what every handoff device sends (charlie's own
    /// traffic, and a handshake between two devices of an unrelated account).
    /// (`scripts/stable-strings.py` does the comparison; docs/security.md says why.) Before the
    /// account key opened the handshake, the stranger's transcript held alpha's certificate — its
    /// device id and the account's id, the same every time.
    @Test func nothingOfAMemberStaysTheSameAcrossARotation() async throws {
        await Rig.withHosts(["alpha", "bravo", "charlie"]) { rig in
            for host in rig.hosts { try await rig.startDaemon(host) }
            let (alphaID, _) = try await pair(rig)
            _ = try await rig.ctlJSON("charlie", AccountInfo.self, ["account", "create", "--name", "Eve's devices", "--device-name", "eve"])
            let alphaAddress = try await rig.address("alpha")
            let port = try await rig.ctlJSON("alpha", DaemonStatus.self, ["status"]).peerPort
            func addresses(_ host: String) async throws -> String {
                let linkLocal = rig.family == .ipv4 ? "" : try await rig.linkLocal(host).split(separator: "%").first.map(String.init) ?? ""
                return [try await rig.address(host), linkLocal].filter { !$0.isEmpty }.joined(separator: ",")
            }

            var rounds: [String] = []
            for round in 1...2 {
                let pcap = rig.directory + "/round\(round).pcap"
                let transcript = rig.directory + "/round\(round).s_client"
                // The rotation between the rounds: both members stop (Avahi says goodbye to their
                // old names) before the capture starts, and start again within it.
                for host in ["alpha", "bravo"] { _ = try await rig.daemon(host)?.stop() }
                try await Task.sleep(for: .seconds(1))
                // (A capture of the bridge is root's: it stands for anyone on the network.)
                let capture = try await rig.captureBridge(to: pcap)
                for host in ["alpha", "bravo"] { try await rig.startDaemon(host) }
                try await Rig.waitFor("a session after the rotation", seconds: 60) {
                    try await peers(rig, "bravo").peers.contains { $0.id == alphaID && $0.reachable }
                }
                let title = "round \(round) of the rotation test"
                _ = try await rig.ctl("alpha", ["become-current", "--type", "org.example.rotation", "--title", title])
                try await Rig.waitFor("the activity on bravo") {
                    try await peers(rig, "bravo").peers.first { $0.id == alphaID }?.activity?.title == title
                }

                let refused = try await rig.ctl("charlie", ["continue", "\(alphaAddress):\(port)"])
                #expect(refused.status != 0 && refused.stderr.contains("is not a device of this account"), "\(refused)")
                let stranger = try await rig.run(
                    "charlie", ["openssl", "s_client", "-connect", "\(alphaAddress):\(port)", "-tls1_3", "-alpn", "handoff/1", "-msg", "-showcerts"])
                #expect(stranger.stdout.contains("<<<"), "the transcript shows what came back: \(stranger)")
                try Data(stranger.stdout.utf8).write(to: URL(fileURLWithPath: transcript))
                // Adverts go out at Avahi's pace.
                try await Task.sleep(for: .seconds(3))
                _ = try? await capture.stop(signal: SIGINT)
                rounds += ["--round", pcap + ":" + transcript]
            }

            let reference = rig.directory + "/unrelated-handshake"
            try Data(try Self.unrelatedHandshake()).write(to: URL(fileURLWithPath: reference))
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("scripts/stable-strings.py").path
            let result = try await Subprocess.run(
                "/usr/bin/python3",
                [script, "--device", try await addresses("alpha"), "--reference", try await addresses("charlie"), "--reference-bytes", reference] + rounds
            )
            print(result.stderr)
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout.isEmpty, "8-byte strings alpha sent in both rounds that no unrelated device sends:\n\(result.stdout)")
            // The control: the comparison sees alpha's traffic (sessions, adverts, the refusals).
            let sizes = result.stderr.split(separator: ";").first { $0.contains("per round") }?.split(separator: ":").last ?? ""
            #expect(sizes.split(separator: ",").allSatisfy { (Int($0.trimmingCharacters(in: .whitespaces)) ?? 0) > 1000 }, "\(result.stderr)")
        }
    }

    /// Both flights of a member handshake between two devices of an account that has nothing to do
    /// with the test's: what every handoff device sends.
    static func unrelatedHandshake() throws -> [UInt8] {
        let rootKey = try SigningKey.generate()
        let root = try Certificate.makeAccountRoot(key: rootKey, notBefore: .now().adding(seconds: -60), notAfter: .now().adding(seconds: 86_400))
        let trust = try TrustPolicy(root: root, accountSecrets: [Crypto.randomBytes(32)])
        func device() throws -> DeviceIdentity {
            let key = try SigningKey.generate()
            let certificate = try Certificate.issueDevice(
                publicKey: key.publicKey, root: root, rootKey: rootKey, notBefore: .now().adding(seconds: -60), notAfter: .now().adding(seconds: 3600))
            return try DeviceIdentity(key: key, certificate: certificate)
        }
        let client = try TLSConnection(context: .memberClient(identity: try device(), trust: trust))
        let server = try TLSConnection(context: .memberServer(identity: try device(), trust: trust))
        var bytes: [UInt8] = []
        for _ in 0..<6 {
            _ = client.handshake()
            let up = client.takeCiphertext()
            server.receive(up)
            _ = server.handshake()
            let down = server.takeCiphertext()
            client.receive(down)
            bytes += up + down
        }
        return bytes
    }
}

extension EndToEndTests {
    /// Charlie, an attacker host, listens where alpha's and bravo's `peers` send them, and keeps
    /// the first TLS record each sends first: a member hello addressed to anyone.
    static let helloRecorder = """
        import os, socket, sys
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", 47810)); s.listen(16); print("listening", flush=True)
        while True:
            c, (address, _) = s.accept(); c.settimeout(5); data = b""
            try:
                while len(data) < 5 or len(data) < 5 + int.from_bytes(data[3:5], "big"):
                    chunk = c.recv(65536)
                    if not chunk: break
                    data += chunk
            except OSError: pass
            c.close()
            if len(data) >= 5 and data[0] == 22 and not os.path.exists(sys.argv[1] + "/hello-" + address):
                open(sys.argv[1] + "/hello-" + address, "wb").write(data[:5 + int.from_bytes(data[3:5], "big")])
        """

    /// Sends the recorded hello `argv[3]` to `argv[1]:argv[2]` and prints the first byte of the
    /// answer: 22 is a ServerHello (the host answers for the account), 21 an alert (a stranger's).
    static let helloReplayer = """
        import socket, sys
        c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
        c.sendall(open(sys.argv[3], "rb").read())
        try: answer = c.recv(1)
        except OSError: answer = b""
        print(answer[0] if answer else "nothing")
        """

    /// Issue 54: a hello bravo sent to anyone (a static peer), captured, and replayed to bravo —
    /// while it runs, and after it restarted — gets the stranger's alert, never a ServerHello: a
    /// device never answers its own hello (docs/security.md, "A captured ClientHello"). The
    /// control: alpha's hello, replayed to bravo, is answered (once), as the docs say what is left.
    @Test func aDeviceNeverAnswersItsOwnHelloEvenAfterARestart() async throws {
        await Rig.withHosts(["alpha", "bravo", "charlie"]) { rig in
            let charlie = try await rig.address("charlie")
            for host in ["alpha", "bravo"] {
                try rig.write(to: rig.home(host) + "/.config/handoff/handoffd.toml", "peers = [\"\(charlie):47810\"]\n")
            }
            let recorded = rig.home("charlie") + "/hellos"
            try rig.user.makeDirectory(recorded)
            let recorder = try RunningProcess(
                Rig.script, ["exec", rig.name, "charlie"] + rig.user.command(["/usr/bin/python3", "-c", Self.helloRecorder, recorded], environment: rig.environment("charlie"))
            )
            defer { kill(recorder.pid, SIGKILL) }
            try await recorder.wait(for: "charlie to listen") { $0.stdout.contains("listening") }
            try await startPaired(rig)
            let (alpha, bravo) = (try await rig.address("alpha"), try await rig.address("bravo"))
            let (alphaHello, bravoHello) = (recorded + "/hello-" + alpha, recorded + "/hello-" + bravo)
            try await Rig.waitFor("charlie to record a hello of each", seconds: 60) {
                FileManager.default.fileExists(atPath: alphaHello) && FileManager.default.fileExists(atPath: bravoHello)
            }
            let port = try await rig.ctlJSON("bravo", DaemonStatus.self, ["status"]).peerPort
            func replay(_ hello: String) async throws -> String {
                let answer = try await rig.run("charlie", ["/usr/bin/python3", "-c", Self.helloReplayer, bravo, "\(port)", hello])
                return answer.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            #expect(try await replay(bravoHello) == "21", "bravo's own hello, reflected back to it")
            _ = try await rig.daemon("bravo")?.stop()
            try await rig.startDaemon("bravo")
            #expect(try await replay(bravoHello) == "21", "bravo's own hello, replayed after it restarted")
            #expect(try await replay(alphaHello) == "22", "the control: alpha's hello to anyone is answered by bravo")
            #expect(try await replay(alphaHello) == "21", "once")
        }
    }
}
