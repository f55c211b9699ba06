import Foundation
import HandoffAPI
import HandoffModel
import HandoffTLS
import HandoffTestSupport
import Testing

/// What anyone with a shell can do against the peer port, with the stock `openssl s_client`.
@Suite(.timeLimit(.minutes(3))) struct OpenSSLCommandLineTests {
    struct Files {
        let directory: String
        func path(_ name: String) -> String { directory + "/" + name }
        func write(_ name: String, _ bytes: [UInt8]) throws { try Data(bytes).write(to: URL(fileURLWithPath: path(name))) }
    }

    /// `s_client` with stdin closed: it prints any application data the server sends on stdout.
    func sClient(_ port: Int, _ extra: [String]) async throws -> ProcessResult {
        try await Subprocess.run("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-quiet"] + extra)
    }

    @Test func strangersGetNoApplicationData() async throws {
        let a = try await TestDaemon.start()
        _ = try await a.client.send(.createAccount(CreateAccountRequest(deviceName: "desk")))
        let port = a.daemon.peerPort
        let files = Files(directory: try TempDirectory.make(prefix: "handoff-sclient"))
        defer { TempDirectory.remove(files.directory) }

        // A certificate from a CA of the attacker's own, made with openssl alone.
        for (args, _) in [
            (["genpkey", "-algorithm", "ed25519", "-out", files.path("ca.key")], 0),
            (["req", "-x509", "-new", "-key", files.path("ca.key"), "-subj", "/CN=evil ca", "-days", "2", "-out", files.path("ca.crt")], 0),
            (["genpkey", "-algorithm", "ed25519", "-out", files.path("leaf.key")], 0),
            (["req", "-new", "-key", files.path("leaf.key"), "-subj", "/CN=evil", "-out", files.path("leaf.csr")], 0),
            (["x509", "-req", "-in", files.path("leaf.csr"), "-CA", files.path("ca.crt"), "-CAkey", files.path("ca.key"), "-CAcreateserial", "-days", "2", "-out", files.path("leaf.crt")], 0),
        ] {
            let r = try await Subprocess.run("/usr/bin/openssl", args)
            #expect(r.status == 0, "\(args): \(r)")
        }

        // A stock client: an alert at its ClientHello, and never a certificate.
        let noKey = try await sClient(port, ["-tls1_3"])
        #expect(noKey.stdout.isEmpty, "no application data")
        #expect(noKey.stderr.contains("alert handshake failure"), "\(noKey.stderr)")
        let transcript = try await Subprocess.run("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-tls1_3", "-msg", "-showcerts"])
        let received = transcript.stdout.split(separator: "\n").filter { $0.hasPrefix("<<<") }
        #expect(!received.isEmpty, "\(transcript)")
        #expect(!received.contains { $0.contains("Certificate") || $0.contains("ServerHello") }, "\(received)")

        let foreign = try await sClient(port, ["-tls1_3", "-cert", files.path("leaf.crt"), "-key", files.path("leaf.key")])
        #expect(foreign.stdout.isEmpty, "no application data")
        #expect(foreign.stderr.contains("alert handshake failure"), "\(foreign.stderr)")

        let old = try await sClient(port, ["-tls1_2"])
        #expect(old.stdout.isEmpty, "no application data")
        #expect(old.stderr.contains("alert protocol version"), "\(old.stderr)")

        // The control: the account's key, derived here from the secret as docs/security.md says,
        // gets through the TLS handshake — so the checks above would see application data if
        // there were any — and then no further than a refusal without a device proof.
        let account = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: a.stateDirectory + "/account"))) as! [String: Any]
        let secret = Array(Data(base64Encoded: account["accountSecret"] as! String)!)
        let (identity, key) = Self.memberPSK(secret: secret)
        let hex = key.map { String(format: "%02x", $0) }.joined()
        let genuine = try await Subprocess.run(
            "/usr/bin/openssl",
            ["s_client", "-connect", "127.0.0.1:\(port)", "-quiet", "-tls1_3", "-alpn", "handoff/1", "-psk_identity", identity, "-psk", hex],
            stdin: Data("not a device proof\n".utf8)
        )
        #expect(Array(genuine.stdout.utf8) == [2, 0, 9] + Array("malformed".utf8), "refused inside the channel: \(genuine)")

        // A known identity with a wrong key, and an identity no secret of this account made, get
        // the same answer: replaying a captured identity tells nobody whose it is.
        let wrong = try await sClient(port, ["-tls1_3", "-alpn", "handoff/1", "-psk_identity", identity, "-psk", String(hex.reversed())])
        #expect(wrong.stdout.isEmpty)
        #expect(wrong.stderr.contains("alert"), "\(wrong.stderr)")
        let (otherIdentity, otherKey) = Self.memberPSK(secret: Crypto.randomBytes(32))
        let unknown = try await sClient(
            port, ["-tls1_3", "-alpn", "handoff/1", "-psk_identity", otherIdentity, "-psk", otherKey.map { String(format: "%02x", $0) }.joined()])
        #expect(unknown.stdout.isEmpty)
        #expect(unknown.stderr.contains("alert"), "\(unknown.stderr)")
        #expect(Self.alert(wrong.stderr) == Self.alert(unknown.stderr), "the same alert either way")
        try await a.finish()
    }

    /// The alert s_client reports ("… alert decrypt error …").
    static func alert(_ stderr: String) -> String? {
        stderr.split(separator: "\n").lazy.compactMap { line in line.range(of: "alert ").map { String(line[$0.upperBound...].prefix { $0 != ":" }) } }.first
    }

    /// A member PSK offer (docs/security.md, "Every connection between devices") whose identity
    /// is valid UTF-8 without NUL, so that it can be an argument of `openssl s_client`.
    static func memberPSK(secret: [UInt8]) -> (identity: String, key: [UInt8]) {
        let identityKey = Crypto.hkdf(secret: secret, info: Array("handoff member psk identity v1".utf8), length: 32)
        while true {
            let salt = (0..<16).map { _ in UInt8.random(in: 0x21...0x7E) }
            let tag = Array(Crypto.hmacSHA256(key: identityKey, salt).prefix(16))
            guard !tag.contains(0), let text = String(validating: salt + tag, as: UTF8.self) else { continue }
            return (text, Crypto.hkdf(secret: secret, salt: salt, info: Array("handoff member psk v1".utf8), length: 32))
        }
    }
}
