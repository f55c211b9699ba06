import Foundation
import HandoffTestSupport
import Testing

/// `make install DESTDIR=… PREFIX=…` puts exactly the files it lists where packagers expect them,
/// with the installed paths filled in, and `make uninstall` takes them all away. (Run with the
/// debug build: `make install` proper builds release binaries first.)
@Suite(.timeLimit(.minutes(2))) struct InstallTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardizedFileURL.path

    /// `make install-files` of this debug build under a fresh DESTDIR with `prefix`; the caller
    /// removes the directory. `make(target)` runs another target with the same variables.
    struct Installed {
        let destdir: String
        let result: ProcessResult
        let variables: [String]

        init(prefix: String) async throws {
            destdir = try TempDirectory.make(prefix: "handoff-install")
            let binaries = (Subprocess.product("handoffctl") as NSString).deletingLastPathComponent
            variables = ["DESTDIR=\(destdir)", "PREFIX=\(prefix)", "INSTALL_FROM=\(binaries)", "MANUAL_TOOL=\(binaries)/generate-manual"]
            result = try await Subprocess.run("/usr/bin/make", ["-C", InstallTests.root, "--no-print-directory", "install-files"] + variables)
        }

        func make(_ target: String) async throws -> ProcessResult {
            try await Subprocess.run("/usr/bin/make", ["-C", InstallTests.root, "--no-print-directory", target] + variables)
        }
    }

    /// ufw and firewalld read their files from fixed places: there they go, whatever PREFIX.
    @Test func firewallDefinitionsGoWhereTheirReadersLook() async throws {
        let installed = try await Installed(prefix: "/usr/local")
        let (destdir, install) = (installed.destdir, installed.result)
        defer { TempDirectory.remove(destdir) }
        #expect(install.status == 0, "\(install)")
        let landed = try files(in: destdir)
        #expect(landed.contains("/etc/ufw/applications.d/handoff"), "\(landed)")
        #expect(landed.contains("/etc/firewalld/services/handoff.xml"), "\(landed)")
        #expect(install.stdout.contains("sudo ufw allow handoff") && install.stdout.contains("--add-service=handoff"), "\(install.stdout)")
        let profile = try String(contentsOfFile: destdir + "/etc/ufw/applications.d/handoff", encoding: .utf8)
        #expect(profile.contains("[handoff]") && profile.contains("ports=47810/tcp"))
        _ = try await installed.make("uninstall")
        #expect(try files(in: destdir).isEmpty, "left behind")
        for own in ["/usr/local/share/webext/handoff", "/usr/local/share/doc/handoff"] {
            #expect(!FileManager.default.fileExists(atPath: destdir + own), "\(own) left behind")
        }
    }

    @Test func installLandsExactlyTheListedFilesAndUninstallRemovesThem() async throws {
        let tool = (Subprocess.product("handoffctl") as NSString).deletingLastPathComponent + "/generate-manual"
        #expect(FileManager.default.isExecutableFile(atPath: tool), "\(tool) is missing: `make test` builds it (swift build --product generate-manual)")
        let installed = try await Installed(prefix: "/usr")
        let destdir = installed.destdir
        defer { TempDirectory.remove(destdir) }
        #expect(installed.result.status == 0, "\(installed.result)")

        let landed = try files(in: destdir)
        #expect(
            landed == [
                "/etc/chromium/native-messaging-hosts/org.handoff.browser.json",
                "/etc/opt/chrome/native-messaging-hosts/org.handoff.browser.json",
                "/etc/ufw/applications.d/handoff",
                "/etc/xdg/autostart/handoff-desktop.desktop",
                "/usr/bin/handoff-browser-host",
                "/usr/bin/handoff-desktop",
                "/usr/bin/handoffctl",
                "/usr/bin/handoffd",
                "/usr/lib/firewalld/services/handoff.xml",
                "/usr/lib/mozilla/native-messaging-hosts/org.handoff.browser.json",
                "/usr/lib/systemd/system/handoffd@.service",
                "/usr/lib/systemd/user/handoff-desktop.service",
                "/usr/lib/systemd/user/handoffd.service",
                "/usr/share/applications/handoff-desktop.desktop",
                "/usr/share/applications/org.handoff.browser-page.desktop",
                "/usr/share/applications/org.handoff.open-link.desktop",
                "/usr/share/bash-completion/completions/handoffctl",
                "/usr/share/dbus-1/interfaces/org.handoff.Desktop1.xml",
                "/usr/share/dbus-1/interfaces/org.handoff.Receiver1.xml",
                "/usr/share/doc/handoff/handoffd.toml",
                "/usr/share/fish/vendor_completions.d/handoffctl.fish",
                "/usr/share/man/man1/handoff-browser-host.1",
                "/usr/share/man/man1/handoff-desktop.1",
                "/usr/share/man/man1/handoffctl.1",
                "/usr/share/man/man8/handoffd.8",
                "/usr/share/webext/handoff/background.js",
                "/usr/share/webext/handoff/manifest.json",
                "/usr/share/webext/handoff/popup.css",
                "/usr/share/webext/handoff/popup.html",
                "/usr/share/webext/handoff/popup.js",
                "/usr/share/zsh/site-functions/_handoffctl",
            ]
        )
        // Where the browsers load the extension from: links to it, relative (they stay right
        // under any root), and nothing else there.
        for link in ["/usr/share/chromium/extensions/handoff", "/usr/share/mozilla/extensions/{ec8030f7-c20a-464f-9b0e-13a3a9e97384}/browser@handoff"] {
            let target = try? FileManager.default.destinationOfSymbolicLink(atPath: destdir + link)
            #expect(target?.hasPrefix("../") == true && target?.hasSuffix("webext/handoff") == true, "\(link) -> \(target ?? "nothing")")
            #expect(FileManager.default.fileExists(atPath: destdir + link + "/manifest.json"), "\(link) leads to no extension")
        }
        // The browsers find the installed host, and handoffd the page opener.
        let host = try String(contentsOfFile: destdir + "/etc/chromium/native-messaging-hosts/org.handoff.browser.json", encoding: .utf8)
        #expect(host.contains(#""path": "/usr/bin/handoff-browser-host""#), "\(host)")
        let opener = try String(contentsOfFile: destdir + "/usr/share/applications/org.handoff.browser-page.desktop", encoding: .utf8)
        #expect(opener.contains("Exec=/usr/bin/handoff-browser-host open") && opener.contains("X-Handoff-ActivityTypes=org.handoff.browser.page;"))
        // Links clicked anywhere come to handoffctl open (docs/apps.md, "Links").
        let links = try String(contentsOfFile: destdir + "/usr/share/applications/org.handoff.open-link.desktop", encoding: .utf8)
        #expect(links.contains("Exec=/usr/bin/handoffctl open %u") && links.contains("MimeType=x-scheme-handler/handoff;"), "\(links)")
        let unit = try String(contentsOfFile: destdir + "/usr/lib/systemd/system/handoffd@.service", encoding: .utf8)
        #expect(unit.contains("ExecStart=/usr/bin/handoffd --socket") && !unit.contains("@BINDIR@"))
        let manual = try String(contentsOfFile: destdir + "/usr/share/man/man8/handoffd.8", encoding: .utf8)
        #expect(manual.contains(".Dt HANDOFFD 8") && manual.contains("state\\-dir"))
        let bash = try String(contentsOfFile: destdir + "/usr/share/bash-completion/completions/handoffctl", encoding: .utf8)
        #expect(bash.contains("become-current") && bash.contains("--stream-to"))
        let mode = try FileManager.default.attributesOfItem(atPath: destdir + "/usr/bin/handoffctl")[.posixPermissions] as? Int
        #expect(mode == 0o755)

        let uninstall = try await installed.make("uninstall")
        #expect(uninstall.status == 0, "\(uninstall)")
        #expect(try files(in: destdir).isEmpty, "left behind")
        for link in ["/usr/share/chromium/extensions/handoff", "/usr/share/mozilla/extensions/{ec8030f7-c20a-464f-9b0e-13a3a9e97384}/browser@handoff"] {
            #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: destdir + link)) == nil, "\(link) left behind")
        }
    }

    func files(in root: String) throws -> [String] {
        let all = FileManager.default.enumerator(atPath: root)?.allObjects as? [String] ?? []
        return all.filter { path in
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: root + "/" + path, isDirectory: &isDirectory) && !isDirectory.boolValue
        }.map { "/" + $0 }.sorted()
    }
}
