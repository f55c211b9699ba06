import Foundation
import HandoffTestSupport
import Testing

@testable import DaemonCore
import DaemonDocuments
@testable import HandoffDaemon
import HandoffDiscovery

@Suite(.timeLimit(.minutes(3))) struct ConfigTests {
    func parse(_ text: String) throws(ConfigFile.ParseError) -> ConfigFile {
        try ConfigFile(path: "/etc/handoff/handoffd.toml", text: text)
    }

    @Test func theSubsetOfTOMLWeUse() throws {
        let file = try parse(
            """
            # a comment
            port = 47_811   # trailing comment
            listen = [
              "127.0.0.1",  # loopback
              "::1",
            ]
            log_level = 'debug'

            [handlers]
            "com.example.edit" = "editor --open"
            escaped = "a\\tb \\"c\\" \\u00e9 # not a comment"
            flag = true
            """
        )
        #expect(
            file.entries.map(\.key) == ["port", "listen", "log_level", "handlers.com.example.edit", "handlers.escaped", "handlers.flag"]
        )
        #expect(file.entries[0].value == .integer(47811))
        #expect(file.entries[1].value == .array([.string("127.0.0.1"), .string("::1")]))
        #expect(file.entries[1].line == 3)
        #expect(file.entries[4].value == .string("a\tb \"c\" é # not a comment"))
        #expect(file.entries[5].value == .boolean(true))
    }

    @Test(arguments: [
        ("port 47810", 1, "expected key = value"),
        ("port =", 1, "a value is missing"),
        ("port = 47810 47811", 1, "unexpected text after the value"),
        ("name = \"open", 1, "not closed"),
        ("x = [1, 2", 1, "not closed with ]"),
        ("x = [1 2]", 1, "separated by commas"),
        ("x = yes", 1, "expected a number, true/false"),
        ("x = \"\\q\"", 1, "unknown escape"),
        ("a = 1\na = 2", 2, "a is set twice"),
        ("[table", 1, "table header"),
        ("\n\nbad key = 1", 3, "not a valid key"),
    ])
    func syntaxErrorsNameTheLine(text: String, line: Int, reason: String) {
        do {
            _ = try parse(text)
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.line == line, "\(error)")
            #expect(error.reason.contains(reason), "\(error)")
            #expect("\(error)".hasPrefix("/etc/handoff/handoffd.toml:\(line): "))
        }
    }

    @Test(arguments: [
        ("port = 0", "port must be an integer from 1 to 65535"),
        ("port = \"47810\"", "port must be an integer"),
        ("listen = []", "non-empty array"),
        ("listen = [\"example.com\"]", "not an IP address"),
        ("max_activity_bytes = 10", "from 1024"),
        ("log_level = \"loud\"", "log_level must be one of"),
        ("prot = 1", "unknown key prot"),
        ("browser = 42", "browser must be a \"command line\""),
        ("browser = \"\\\"firefox\"", "a quoted argument is not closed"),
        ("browser = \"%u\"", "there is no program to run"),
    ])
    func badValuesAndUnknownKeysAreRefused(text: String, reason: String) throws {
        var settings = DaemonSettings()
        do {
            try settings.apply(try parse("\n" + text))
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.line == 2)
            #expect(error.reason.contains(reason), "\(error)")
        }
    }

    @Test func handlersAreActivityTypesWithCommandLines() throws {
        var settings = DaemonSettings()
        try settings.apply(try parse("[handlers]\n\"org.example.edit\" = \"editor --open %f\"\n"))
        #expect(settings.handlers == ["org.example.edit": "editor --open %f"])
        for (text, reason) in [
            ("[handlers]\n\"not a type\" = \"editor %f\"", "is not an activity type"),
            ("[handlers]\n\"org.example.edit\" = 3", "must be a \"command line\""),
            ("[handlers]\n\"org.example.edit\" = \"\\\"editor\"", "a quoted argument is not closed"),
        ] {
            do {
                try settings.apply(try parse(text))
                Issue.record("accepted \(text)")
            } catch {
                #expect(error.line == 2 && error.reason.contains(reason), "\(error)")
            }
        }
    }

    /// `handoff = false`: the configuration keeps handoff off; only a boolean is taken.
    @Test func handoffCanBeKeptOffByTheConfiguration() throws {
        var settings = DaemonSettings()
        #expect(settings.handoffAllowed)
        try settings.apply(try parse("handoff = false\n"))
        #expect(!settings.handoffAllowed)
        do {
            try settings.apply(try parse("handoff = \"off\"\n"))
            Issue.record("accepted a string")
        } catch {
            #expect(error.reason.contains("handoff must be true or false"), "\(error)")
        }
    }

    /// `[web_domains] off`: claims as apps make them; a top-level wildcard or a URL is refused.
    @Test func claimsTurnedOffAreClaims() throws {
        var settings = DaemonSettings()
        try settings.apply(try parse("[web_domains]\noff = [\"Example.com\", \"*.example.org\"]\n"))
        #expect(settings.webDomainsOff == ["example.com", "*.example.org"])
        for text in ["[web_domains]\noff = [\"*.com\"]", "[web_domains]\noff = [\"https://example.com\"]", "[web_domains]\noff = \"example.com\""] {
            do {
                try settings.apply(try parse(text))
                Issue.record("accepted \(text)")
            } catch {
                #expect(error.line == 2 && error.reason.contains("[web_domains] off"), "\(error)")
            }
        }
    }

    /// `[documents]`: the switch, the folders (told apart by their last part), the size limit.
    @Test func documentsAreFollowedFromNamedFolders() throws {
        var settings = DaemonSettings()
        #expect(!settings.documentsFollow && settings.documentFolders.isEmpty)
        try settings.apply(try parse("[documents]\nfollow = true\nfolders = [\"~/Sync\", \"/data/Photos\"]\nmax_size = 1000\n"))
        let documents = settings.documents(home: "/home/u")
        #expect(documents.follow && documents.maximumSize == 1000)
        #expect(documents.folders.roots.map(\.name) == ["Photos", "Sync", "home"])
        #expect(documents.folders.roots.map(\.path) == ["/data/Photos", "/home/u/Sync", "/home/u"])
        for (text, reason) in [
            ("folders = [\"Sync\"]", "absolute paths"), ("folders = [\"/a/Sync\", \"/b/Sync\"]", "another folder's too"),
            ("folders = [\"/srv/home\"]", "the home's"), ("folders = [\"/srv/.hidden\"]", "not a folder"), ("max_size = -1", "max_size"),
            ("follow = \"yes\"", "follow"),
        ] {
            do {
                try settings.apply(try parse("[documents]\n" + text))
                Issue.record("accepted \(text)")
            } catch {
                #expect(error.line == 2 && error.reason.contains(reason), "\(error)")
            }
        }
    }

    @Test func laterFilesOverrideEarlierOnesAndMissingFilesAreSkipped() throws {
        let dir = try TempDirectory.make()
        defer { TempDirectory.remove(dir) }
        try Data("port = 1000\nlog_level = \"debug\"\n".utf8).write(to: URL(fileURLWithPath: dir + "/system.toml"))
        try Data("port = 2000\n".utf8).write(to: URL(fileURLWithPath: dir + "/user.toml"))
        var settings = DaemonSettings()
        let read = try settings.load(files: [dir + "/system.toml", dir + "/absent.toml", dir + "/user.toml"])
        #expect(read == [dir + "/system.toml", dir + "/user.toml"])
        #expect(settings.port == 2000)
        #expect(settings.logLevel == "debug")
        #expect(throws: ConfigFile.ParseError.self) { try settings.load(files: [dir + "/absent.toml"], requireAll: true) }
    }

    /// The example configuration documents every key at its default: loading it changes nothing.
    @Test func theShippedExampleIsValidAndAtTheDefaults() throws {
        let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../config/handoffd.toml").path
        let text = try String(contentsOfFile: example, encoding: .utf8)
        var settings = DaemonSettings()
        try settings.apply(try ConfigFile(path: example, text: text))
        #expect(settings == DaemonSettings(), "the example, as shipped (all commented), sets nothing")
        // Uncommented, every documented key is accepted and is at its default; [handlers] has an
        // example entry (there is no default handler), and [wide_area] an example zone (there is
        // no default zone).
        let uncommented = text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            line.hasPrefix("# ") && (line.contains(" = ") || line.hasPrefix("# [")) ? String(line.dropFirst(2)) : String(line)
        }.joined(separator: "\n")
        var all = DaemonSettings()
        try all.apply(try ConfigFile(path: example, text: uncommented))
        #expect(all.handlers == ["org.example.editor.edit": "/usr/bin/example-editor --continue %f"])
        all.handlers = [:]
        #expect(all.wideAreaDomain == "handoff.example.net." && all.wideAreaServer == DNSServer(address: "192.0.2.53"))
        #expect(all.wideAreaKeyFile == "~/.config/handoff/handoff-laptop.key")
        (all.wideAreaDomain, all.wideAreaServer, all.wideAreaKeyFile) = (nil, nil, nil)
        #expect(all == DaemonSettings())
    }
}
