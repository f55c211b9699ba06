import Foundation
import HandoffTestSupport
import Testing

@testable import DaemonCore
import DaemonDocuments
@testable import HandoffDaemon
import HandoffDiscovery
import HandoffWideArea

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

    /// The keys handoffd reads (`DaemonSettings.keys`, each said once) are those the shipped
    /// example documents, and no key is read twice.
    @Test func theKeysReadAreTheKeysDocumented() throws {
        let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../config/handoffd.toml").path
        var section = ""
        var documented: [String] = []
        for line in try String(contentsOfFile: example, encoding: .utf8).split(separator: "\n") where line.hasPrefix("# ") {
            let text = line.dropFirst(2)
            if text.hasPrefix("["), text.hasSuffix("]"), !text.contains(" ") {
                section = String(text.dropFirst().dropLast())
                continue
            }
            guard let equals = text.range(of: " = "), !text.hasPrefix(" "), section != "handlers" else { continue }
            let key = String(text[..<equals.lowerBound])
            documented.append(section.isEmpty ? key : section + "." + key)
        }
        let read = DaemonSettings.keys.map(\.name)
        #expect(Set(read).count == read.count, "a key read twice: \(read)")
        #expect(Set(read) == Set(documented), "read, not documented: \(Set(read).subtracting(documented).sorted()); documented, not read: \(Set(documented).subtracting(read).sorted())")
    }

    /// What each key of the shipped example says when given a value of the wrong kind — and an
    /// integer key one out of range — word for word as when this was written: moving each
    /// feature's settings into its own section (issue 55) must not change a message.
    /// `PRINT_REFUSALS=1` prints them afresh.
    @Test func everyKeysRefusalIsPinned() throws {
        let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../config/handoffd.toml").path
        var section = ""
        var refusals: [String] = []
        for line in try String(contentsOfFile: example, encoding: .utf8).split(separator: "\n") where line.hasPrefix("# ") {
            let text = line.dropFirst(2)
            if text.hasPrefix("["), text.hasSuffix("]"), !text.contains(" ") {
                section = String(text)
                continue
            }
            guard let equals = text.range(of: " = "), !text.hasPrefix(" ") else { continue }
            let (key, value) = (text[..<equals.lowerBound], text[equals.upperBound...])
            var wrong = [value.first == "\"" || value.first == "[" || value == "true" || value == "false" ? "7" : "\"x\""]
            if value.allSatisfy(\.isNumber) { wrong.append("-1") }
            for bad in wrong {
                var settings = DaemonSettings()
                do throws(ConfigFile.ParseError) {
                    try settings.apply(try ConfigFile(path: "/f", text: "\(section)\n\(key) = \(bad)\n"))
                    refusals.append("\(section) \(key) = \(bad): accepted")
                } catch {
                    refusals.append("\(section) \(key) = \(bad): \(error.reason)")
                }
            }
        }
        if ProcessInfo.processInfo.environment["PRINT_REFUSALS"] == "1" {
            print(refusals.map { "        #\"\($0)\"#," }.joined(separator: "\n"))
        }
        #expect(refusals.count == Self.pinnedRefusals.count, "\(refusals.count) keys and values now")
        for (refusal, pinned) in zip(refusals, Self.pinnedRefusals) {
            #expect(refusal == pinned)
        }
    }

    static let pinnedRefusals: [String] = [
        #" handoff = 7: handoff must be true or false"#,
        #" port = "x": port must be an integer from 1 to 65535"#,
        #" port = -1: port must be an integer from 1 to 65535"#,
        #" listen = 7: listen must be a non-empty array of addresses, e.g. ["0.0.0.0", "::"]"#,
        #" max_activity_bytes = "x": max_activity_bytes must be an integer from 1024 to 16777216"#,
        #" max_activity_bytes = -1: max_activity_bytes must be an integer from 1024 to 16777216"#,
        #" log_level = 7: log_level must be one of "trace", "debug", "info", "notice", "warning", "error", "critical""#,
        #" peers = 7: peers must be an array of "host:port" strings"#,
        #" browse_domains = 7: browse_domains must be an array of domain names"#,
        #" browser = 7: browser must be a "command line" (e.g. "firefox --new-tab")"#,
        #"[handlers] "org.example.editor.edit" = 7: [handlers] "org.example.editor.edit" must be a "command line" (%f is the activity's file)"#,
        #"[notifications] enabled = 7: [notifications] enabled must be true or false"#,
        #"[notifications] muted_types = 7: [notifications] muted_types must be an array of activity types"#,
        #"[web_domains] off = 7: [web_domains] off must be an array of claimed domains"#,
        #"[documents] follow = 7: [documents] follow must be true or false"#,
        #"[documents] folders = 7: [documents] folders must be an array of folders (e.g. ["~/Sync"])"#,
        #"[documents] max_size = "x": [documents] max_size must be a number of bytes (e.g. 1073741824)"#,
        #"[documents] max_size = -1: [documents] max_size must be a number of bytes (e.g. 1073741824)"#,
        #"[clipboard] enabled = 7: [clipboard] enabled must be true or false"#,
        #"[clipboard] lifetime = "x": [clipboard] lifetime must be a number of seconds from 1 to 3600"#,
        #"[clipboard] lifetime = -1: [clipboard] lifetime must be a number of seconds from 1 to 3600"#,
        #"[clipboard] max_size = "x": [clipboard] max_size must be a number of bytes (e.g. 67108864)"#,
        #"[clipboard] max_size = -1: [clipboard] max_size must be a number of bytes (e.g. 67108864)"#,
        #"[history] enabled = 7: [history] enabled must be true or false"#,
        #"[history] max_entries = "x": [history] max_entries must be an integer from 1 to 10000"#,
        #"[history] max_entries = -1: [history] max_entries must be an integer from 1 to 10000"#,
        #"[history] max_bytes = "x": [history] max_bytes must be an integer from 65536 to 16777216"#,
        #"[history] max_bytes = -1: [history] max_bytes must be an integer from 65536 to 16777216"#,
        #"[wide_area] domain = 7: [wide_area] domain must be a domain name (e.g. "handoff.example.net")"#,
        #"[wide_area] server = 7: [wide_area] server must be the DNS server's IP address, with a port if not 53 (e.g. "192.0.2.53" or "[2001:db8::53]:5353")"#,
        #"[wide_area] key_file = 7: [wide_area] key_file must be an absolute path or ~/… (the key tsig-keygen wrote)"#,
        #"[wide_area] browse_interval = "x": [wide_area] browse_interval must be a number of seconds from 5 to 3600"#,
        #"[wide_area] browse_interval = -1: [wide_area] browse_interval must be a number of seconds from 5 to 3600"#,
        #"[wide_area] ttl = "x": [wide_area] ttl must be a number of seconds from 10 to 86400"#,
        #"[wide_area] ttl = -1: [wide_area] ttl must be a number of seconds from 10 to 86400"#,
    ]

    /// A reload names exactly the settings only a restart applies, in this order — each changed
    /// alone, then all at once; the rest apply as they are (issue 55 moves this list into each
    /// feature's settings: it must say the same).
    @Test func reloadNamesExactlyTheSettingsARestartApplies() async throws {
        let d = try await TestDaemon.start { $0.settings.port = 47811 }
        func changed(_ change: (inout DaemonSettings) -> Void) throws -> [String] {
            var settings = d.daemon.configuration.settings
            change(&settings)
            return try d.daemon.reload(settings)
        }
        #expect(try changed { _ in } == [])
        #expect(try changed { $0.port = 47812 } == ["port"])
        #expect(try changed { $0.listen = ["127.0.0.2"] } == ["listen"])
        #expect(try changed { $0.maxActivityBytes = 4096 } == ["max_activity_bytes"])
        #expect(try changed { $0.peers = ["192.0.2.1:47810"] } == ["peers"])
        #expect(try changed { $0.browseDomains = ["example.com."] } == ["browse_domains"])
        #expect(try changed { $0.wideAreaDomain = "handoff.example.net." } == ["wide_area"])
        #expect(try changed { $0.wideAreaTTL = 60 } == ["wide_area"])
        #expect(try changed { $0.wideAreaBrowseInterval = 30 } == ["wide_area"])
        let everything = try changed {
            $0.port = 47812
            $0.listen = ["127.0.0.2"]
            $0.maxActivityBytes = 4096
            $0.peers = ["192.0.2.1:47810"]
            $0.browseDomains = ["example.com."]
            $0.wideAreaServer = DNSServer(address: "192.0.2.53")
            $0.historyMaxEntries = 5
            $0.clipboardLifetime = 5
            $0.documentsFollow = true
            $0.notifications = false
        }
        #expect(everything == ["port", "listen", "max_activity_bytes", "peers", "browse_domains", "wide_area"])
        try await d.finish()
    }
}
