import Foundation
import HandoffTestSupport
import Testing

/// The manual pages `make install` puts in place: handoffd(8), handoff-desktop(1) and
/// handoff-browser-host(1) are written by hand, so they must keep up with their programs' options
/// and commands; every page renders without a warning.
@Suite(.timeLimit(.minutes(2))) struct ManualTests {
    static let root = InstallTests.root

    @Test func handoffdsPageNamesEveryOptionAndConfigurationKey() async throws {
        let page = try String(contentsOfFile: Self.root + "/man/handoffd.8", encoding: .utf8)
        // mdoc escapes hyphens: compare without the escapes.
        let text = page.replacing("\\-", with: "-")
        let help = try await Subprocess.run(Subprocess.product("handoffd"), ["--help"])
        // The OPTIONS part of --help: each line that starts (indented) with an option.
        let options = Set(
            help.stdout.split(separator: "\n").compactMap { line -> String? in
                let trimmed = line.drop { $0 == " " }
                guard trimmed.count < line.count, trimmed.hasPrefix("--") else { return nil }
                return String(trimmed.prefix { $0 != " " && $0 != "," })
            }
        )
        #expect(options.count > 10, "\(help.stdout)")
        for option in options {
            #expect(text.contains("Fl \(option.dropFirst())"), "handoffd(8) does not describe \(option)")
        }
        let example = try String(contentsOfFile: Self.root + "/config/handoffd.toml", encoding: .utf8)
        let keys = example.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("# "), let equals = line.firstIndex(of: "=") else { return nil }
            let key = line.dropFirst(2)[..<equals].trimmingCharacters(in: .whitespaces)
            return key.allSatisfy { $0.isLetter || $0 == "_" } && !key.isEmpty ? key : nil
        }
        #expect(Set(keys).isSuperset(of: ["port", "listen", "max_activity_bytes", "log_level", "peers", "browse_domains", "browser"]), "\(keys)")
        for key in keys + ["handlers"] {
            #expect(text.contains("Ic \(key)"), "handoffd(8) does not describe the configuration key \(key)")
        }
        for section in ["SYNOPSIS", "OPTIONS", "CONFIGURATION", "FILES", "ENVIRONMENT", "SIGNALS", "EXIT STATUS", "SEE ALSO"] {
            #expect(page.contains(".Sh \(section)"), "no \(section) section")
        }
    }

    /// Every option and command the programs' own help lists is in their pages.
    @Test func theAgentsAndTheHostsPagesNameEveryCommandAndOption() async throws {
        let desktop = try String(contentsOfFile: Self.root + "/man/handoff-desktop.1", encoding: .utf8).replacing("\\-", with: "-")
        for command in [["run", "--help"], ["activate", "--help"]] {
            let help = try await Subprocess.run(Subprocess.product("handoff-desktop"), command)
            let options = help.stdout.split(separator: "\n").compactMap { line -> String? in
                let trimmed = line.drop { $0 == " " }
                guard trimmed.count < line.count, trimmed.hasPrefix("--"), !trimmed.hasPrefix("--help"), !trimmed.hasPrefix("--version") else { return nil }
                return String(trimmed.prefix { $0 != " " && $0 != "," && $0 != "<" })
            }
            #expect(!options.isEmpty, "\(help)")
            for option in options { #expect(desktop.contains("Fl \(option.dropFirst())"), "handoff-desktop(1) does not describe \(command[0]) \(option)") }
            #expect(desktop.contains("Cm \(command[0])"), "handoff-desktop(1) does not describe \(command[0])")
        }
        let host = try String(contentsOfFile: Self.root + "/man/handoff-browser-host.1", encoding: .utf8).replacing("\\-", with: "-")
        let usage = try await Subprocess.run(Subprocess.product("handoff-browser-host"), ["--help"])
        let words = Set(usage.stdout.split(whereSeparator: { " |[]\n".contains($0) }).map(String.init))
        #expect(words.contains("install") && words.contains("--root"), "\(usage)")
        // (mdoc: `.Cm chromium | chrome | firefox` names three.)
        let commandLines = host.split(separator: "\n").filter { $0.contains("Cm ") }.map { Set($0.split(separator: " ").map(String.init)) }
        for command in ["install", "manifest", "open", "chromium", "chrome", "firefox"] where words.contains(command) {
            #expect(commandLines.contains { $0.contains(command) }, "handoff-browser-host(1) does not describe \(command)")
        }
        for option in words where option.hasPrefix("--") {
            #expect(host.contains("Fl \(option.dropFirst())"), "handoff-browser-host(1) does not describe \(option)")
        }
    }

    @Test func everyPageRendersWithoutWarnings() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/man") else {
            Issue.record("man is missing (scripts/install-deps.sh test installs man-db): the pages cannot be checked")
            return
        }
        let installed = try await InstallTests.Installed(prefix: "/usr")
        let destdir = installed.destdir
        defer { TempDirectory.remove(destdir) }
        #expect(installed.result.status == 0, "\(installed.result)")
        for page in ["/usr/share/man/man1/handoffctl.1", "/usr/share/man/man1/handoff-desktop.1", "/usr/share/man/man1/handoff-browser-host.1", "/usr/share/man/man8/handoffd.8"] {
            let rendered = try await Subprocess.run("/usr/bin/man", ["--warnings", "-l", destdir + page], environment: ["MANWIDTH": "80", "PATH": "/usr/bin:/bin"])
            #expect(rendered.status == 0 && rendered.stderr.isEmpty, "\(page): \(rendered.stderr)")
            #expect(rendered.stdout.count > 2000, "\(page) rendered: \(rendered.stdout.prefix(200))")
        }
    }
}
