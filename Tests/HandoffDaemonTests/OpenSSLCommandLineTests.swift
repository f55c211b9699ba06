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
        _ = try await a.client.createAccount(CreateAccountRequest(deviceName: "desk"))
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

        let noCertificate = try await sClient(port, ["-tls1_3"])
        #expect(noCertificate.stdout.isEmpty, "no application data")
        #expect(noCertificate.stderr.contains("alert certificate required"), "\(noCertificate.stderr)")

        let foreign = try await sClient(port, ["-tls1_3", "-cert", files.path("leaf.crt"), "-key", files.path("leaf.key")])
        #expect(foreign.stdout.isEmpty, "no application data")
        #expect(foreign.stderr.contains("alert unknown ca"), "\(foreign.stderr)")

        let old = try await sClient(port, ["-tls1_2"])
        #expect(old.stdout.isEmpty, "no application data")
        #expect(old.stderr.contains("alert protocol version"), "\(old.stderr)")

        // The control: a genuine member certificate, issued here from the account root, gets the
        // server's hello — so the checks above would see application data if there were any.
        let account = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: a.stateDirectory + "/account"))) as! [String: Any]
        let rootKey = try SigningKey(privateKeyPEM: Array((account["rootKey"] as! String).utf8))
        let root = try Certificate(pem: Array((account["rootCertificate"] as! String).utf8))
        let memberKey = try SigningKey.generate()
        let member = try Certificate.issueDevice(
            publicKey: memberKey.publicKey, root: root, rootKey: rootKey,
            notBefore: .now().adding(seconds: -60), notAfter: .now().adding(seconds: 3600)
        )
        try files.write("member.key", try memberKey.privateKeyPEM())
        try files.write("member.crt", member.pem)
        let genuine = try await sClient(port, ["-tls1_3", "-alpn", "handoff/1", "-cert", files.path("member.crt"), "-key", files.path("member.key")])
        #expect(!genuine.stdout.isEmpty, "a member is greeted: \(genuine)")
        #expect(genuine.stdout.utf8.first == 1, "the first frame is a hello")

        // Without our ALPN even a member is not spoken to.
        let noALPN = try await sClient(port, ["-tls1_3", "-cert", files.path("member.crt"), "-key", files.path("member.key")])
        #expect(noALPN.stdout.isEmpty)
        try await a.finish()
    }
}
