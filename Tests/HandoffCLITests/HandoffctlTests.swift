import Foundation
import HandoffAPI
import HandoffModel
import HandoffTestSupport
import Testing

/// handoffctl as a user runs it: the real binary, against a real daemon on temp paths.
@Suite(.timeLimit(.minutes(3))) struct HandoffctlTests {
    @Test(arguments: ["", "become-current", "current", "resign-current", "watch", "status", "continue"])
    func helpSnapshots(subcommand: String) async throws {
        let r = try await CLI.run(nil, subcommand.isEmpty ? ["--help"] : [subcommand, "--help"])
        #expect(r.status == 0)
        Snapshot.expect(r.stdout, named: "help-" + (subcommand.isEmpty ? "handoffctl" : subcommand))
    }

    @Test func theTourFromTheIssue() async throws {
        let d = try await TestDaemon.start()
        let draft = d.directory + "/draft.txt"
        let draftBytes = Data("the first paragraph\n".utf8)
        try draftBytes.write(to: URL(fileURLWithPath: draft))

        let become = try await CLI.run(
            d,
            [
                "become-current", "--type", "com.example.editor.edit", "--title", "Report", "--info", "page:int=3",
                "--info", "draft:data=@\(draft)", "--webpage-url", "https://example.com/r",
            ]
        )
        #expect(become.status == 0, "\(become)")
        #expect(become.stderr.isEmpty)
        let id = become.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(UUID(uuidString: id) != nil, "prints the new activity's id: \(become.stdout)")

        // --json shows exactly those values with their types.
        let json = try await CLI.run(d, ["current", "--json"])
        #expect(json.status == 0)
        let activity = try LocalAPIJSON.decoder().decode(Activity.self, from: Data(json.stdout.utf8))
        #expect(activity.id.lowercasedString == id)
        #expect(activity.type == "com.example.editor.edit")
        #expect(activity.title == "Report")
        #expect(activity.userInfo == ["page": .int(3), "draft": .data(draftBytes)])
        #expect(activity.webpageURL == "https://example.com/r")
        Snapshot.expect(Snapshot.normalize(json.stdout), named: "current-json")

        let human = try await CLI.run(d, ["current"])
        Snapshot.expect(Snapshot.normalize(human.stdout), named: "current-human")
        let status = try await CLI.run(d, ["status"])
        Snapshot.expect(Snapshot.normalize(status.stdout, directory: d.directory), named: "status-human")
        let statusJSON = try await CLI.run(d, ["status", "--json"])
        Snapshot.expect(Snapshot.normalize(statusJSON.stdout, directory: d.directory), named: "status-json")

        // What this device saw: the activity, kept once the daemon got to it.
        try await waitUntil("the history to hold the activity") { try await !d.client.send(.history).entries.isEmpty }
        let history = try await CLI.run(d, ["history"])
        #expect(history.status == 0 && history.stdout.contains("this device  com.example.editor.edit  \"Report\"") && history.stdout.contains("id \(id)"), "\(history)")

        let resign = try await CLI.run(d, ["resign-current"])
        #expect(resign.status == 0)
        #expect(resign.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == id)
        let empty = try await CLI.run(d, ["current"])
        #expect(empty.status == 16)
        #expect(empty.stdout.isEmpty)
        #expect(empty.stderr == "handoffctl: error: there is no current activity (start one with: handoffctl become-current)\n")
        let again = try await CLI.run(d, ["resign-current"])
        #expect(again.status == 0)
        #expect(again.stderr == "handoffctl: there was no current activity\n")
        try await d.finish()
    }

    @Test(arguments: [false, true])
    func watchPrintsChangesAsTheyHappen(json: Bool) async throws {
        let d = try await TestDaemon.start()
        let watch = try RunningProcess(CLI.handoffctl, ["watch", "--socket", d.socketPath] + (json ? ["--json"] : []))
        try await watch.wait(for: "watch to subscribe") { $0.stderr.contains("watching") }

        let become = try await CLI.run(d, ["become-current", "--type", "com.example.editor.edit", "--title", "Report"])
        try await watch.wait(for: "the change") { $0.stdout.split(separator: "\n").count >= 1 }
        _ = try await CLI.run(d, ["resign-current"])
        try await watch.wait(for: "the resignation") { $0.stdout.split(separator: "\n").count >= 2 }
        let lines = watch.stdout.split(separator: "\n").map(String.init)
        #expect(try await watch.stop(signal: SIGINT) == 128 + SIGINT)
        let id = become.stdout.trimmingCharacters(in: .whitespacesAndNewlines)

        #expect(lines.count == 2)
        if json {
            let events = try lines.map { try LocalAPIJSON.decoder().decode(LocalEvent.self, from: Data($0.utf8)) }
            guard case .currentActivityChanged(let a) = events[0].body else {
                Issue.record("first event: \(events[0])")
                return
            }
            #expect(a.id.lowercasedString == id)
            #expect(events[1].body == .currentActivityResigned(activityID: a.id, reason: .resigned))
        } else {
            #expect(UUID(uuidString: id) != nil)
            #expect(lines[0].hasSuffix("  current     com.example.editor.edit \"Report\""), "\(lines[0])")
            #expect(lines[1].hasSuffix("  resigned    \"Report\""), "\(lines[1])")
            #expect(lines.allSatisfy { $0.prefix(13).allSatisfy { $0.isNumber || $0 == ":" || $0 == "." || $0 == " " } }, "a clock first: \(lines)")
        }
        try await d.finish()
    }

    /// Each bad input: its own exit status, one line naming the problem, and the daemon unchanged.
    @Test func badInputsFailClearlyAndChangeNothing() async throws {
        let d = try await TestDaemon.start()
        let big = d.directory + "/big"
        try Data(count: 70_000).write(to: URL(fileURLWithPath: big))
        let notJSON = d.directory + "/not.json"
        try Data("{page: 3".utf8).write(to: URL(fileURLWithPath: notJSON))
        let base = ["become-current", "--type", "com.example.editor.edit"]
        _ = try await CLI.run(d, base + ["--title", "Keep me"])
        let before = try await CLI.run(d, ["current", "--json"]).stdout

        let cases: [(args: [String], status: Int32, message: String)] = [
            (["become-current", "--type", "editor"], 10, "activity type \"editor\" is not reverse-DNS"),
            (["become-current", "--type", "com.example.Ä"], 10, "is not reverse-DNS"),
            (base + ["--info", "page:int=three"], 11, "--info page:int=\"three\": not a 64-bit integer"),
            (base + ["--info", "page"], 11, "needs the form KEY=VALUE"),
            (base + ["--info", "page:float=1"], 11, "unknown type \"float\""),
            (base + ["--info", "at:date=tomorrow"], 11, "not an RFC 3339 date"),
            (base + ["--info", "ok:bool=maybe"], 11, "not true or false"),
            (base + ["--info", "d:data=abc"], 11, "data is given as @FILE"),
            (base + ["--info", "d:data=@/nonexistent/file"], 11, "cannot read /nonexistent/file: No such file or directory"),
            (base + ["--info", "a=1", "--info", "a=2"], 11, "userInfo key \"a\" is given twice"),
            (base + ["--info-json", notJSON], 11, "--info-json \(notJSON): not valid JSON"),
            (base + ["--expires-in", "soon"], 11, "--expires-in \"soon\""),
            (base + ["--required-keys", "page,draft", "--info", "page:int=1"], 12, "required userInfo key \"draft\" is missing"),
            (base + ["--info", "blob:data=@\(big)"], 13, "the limit is 65536"),
            (base + ["--webpage-url", "ftp://example.com/r"], 14, "webpage URL \"ftp://example.com/r\" is not an http:// or https:// URL"),
            (base + ["--webpage-url", "javascript:alert(1)"], 14, "is not an http:// or https:// URL"),
            (base + ["--title", "two\nlines"], 15, "title contains control characters"),
            (base + ["--info", "home:url=not a url"], 11, "not an absolute URL"),
            (["frobnicate"], 64, ""),
        ]
        for c in cases {
            let r = try await CLI.run(d, c.args)
            #expect(r.status == c.status, "\(c.args): \(r)")
            #expect(r.stdout.isEmpty, "\(c.args)")
            if c.status != 64 {
                #expect(r.stderr.hasPrefix("handoffctl: error: "), "\(c.args): \(r.stderr)")
                #expect(r.stderr.contains(c.message), "\(c.args): \(r.stderr)")
                #expect(r.stderr.filter { $0 == "\n" }.count == 1, "one line: \(r.stderr)")
            }
        }
        #expect(try await CLI.run(d, ["current", "--json"]).stdout == before, "the daemon's state is unchanged")
        try await d.finish()
    }

    /// The device-wide switch: shown, turned off (an invite is then refused with its own exit
    /// status and the way back), on again; a wrong setting or value changes nothing.
    @Test func handoffIsSwitchedOffAndOnForTheWholeDevice() async throws {
        let d = try await TestDaemon.start()
        #expect(try await CLI.run(d, ["config"]).stdout == "handoff on\nclipboard on\n")
        let off = try await CLI.run(d, ["config", "handoff", "off"])
        #expect(off.status == 0 && off.stdout == "handoff off\n", "\(off)")
        #expect(try await CLI.run(d, ["status"]).stdout.contains("handoff:   off on this device"))
        let doctor = try await CLI.run(d, ["doctor"])
        #expect(doctor.stdout.contains("warning  handoff is off on this device") && doctor.stdout.contains("fix: handoffctl config handoff on"), "\(doctor)")
        #expect(try await CLI.run(d, ["account", "create", "--name", "Home"]).status == 0)
        let invite = try await CLI.run(d, ["account", "invite"])
        #expect(invite.status == 43, "\(invite)")
        #expect(invite.stderr.contains("handoffctl config handoff on"), "\(invite)")
        let wrong = try await CLI.run(d, ["config", "handoff", "maybe"])
        #expect(wrong.status == 64 && wrong.stderr.contains("handoff is on or off, not maybe"), "\(wrong)")
        #expect(try await CLI.run(d, ["config", "bluetooth", "on"]).status == 64)
        // The clipboard's switch is its own (and `handoffctl clipboard off` the same one).
        #expect(try await CLI.run(d, ["config", "clipboard", "off"]).stdout == "clipboard off\n")
        #expect(try await CLI.run(d, ["clipboard"]).stdout == "the clipboard is off on this device (handoffctl clipboard on)\n")
        #expect(try await CLI.run(d, ["clipboard", "on"]).stdout == "clipboard on\n")
        let nothing = try await CLI.run(d, ["clipboard", "paste"])
        #expect(nothing.status == 49 && nothing.stderr.contains("no other device copied anything"), "\(nothing)")
        let json = try await CLI.run(d, ["config", "--json"])
        #expect(json.stdout.contains("\"handoff\" : false") || json.stdout.contains("\"handoff\": false"), "\(json)")
        #expect(try await CLI.run(d, ["config", "handoff", "on"]).stdout == "handoff on\n")
        try await d.finish()
    }

    /// A recovery code, offered once after `account create` and then on request; doctor warns
    /// until there is one; a typo in `account recover` is caught before handoffd is asked.
    @Test func theAccountKeyIsMadeRecoverable() async throws {
        let d = try await TestDaemon.start()
        let created = try await CLI.run(d, ["account", "create", "--name", "Home"])
        #expect(created.status == 0 && created.stderr.contains("handoffctl account recovery-code"), "\(created)")
        #expect(try await CLI.run(d, ["account"]).stdout.contains("recovery:    no recovery code (handoffctl account recovery-code)"))
        let before = try await CLI.run(d, ["doctor"])
        #expect(before.stdout.contains("warning  only this device holds the account key and no recovery code was made"), "\(before)")
        let made = try await CLI.run(d, ["account", "recovery-code"])
        let code = made.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(made.status == 0 && code.count == 34 && made.stderr.contains("it is not shown again"), "\(made)")
        #expect(try await CLI.run(d, ["doctor"]).stdout.contains("ok       the account key can be restored with the recovery code made"))
        let typo = try await CLI.run(d, ["account", "recover", String(code.dropLast())])
        #expect(typo.status == 22 && typo.stderr.contains("a recovery code has 28 letters and digits"), "\(typo)")
        let holder = try await CLI.run(d, ["account", "recover", code])
        #expect(holder.status != 0 && holder.stderr.contains("this device holds the account key already"), "\(holder)")
    }

    @Test func aMissingDaemonIsExplained() async throws {
        let r = try await Subprocess.run(CLI.handoffctl, ["status", "--socket", "/nonexistent/handoffd.sock"])
        #expect(r.status == 3)
        #expect(
            r.stderr
                == "handoffctl: error: handoffd is not running (nothing answers on /nonexistent/handoffd.sock); start it with `make run` or `systemctl --user start handoffd`\n"
        )
        let before = try await Subprocess.run(CLI.handoffctl, ["--socket", "/nonexistent/handoffd.sock", "current"])
        #expect(before.status == 3, "--socket works before the subcommand too")
    }

    @Test func userInfoFromCurrentJSONFeedsBackIntoInfoJSON() async throws {
        let d = try await TestDaemon.start()
        _ = try await CLI.run(
            d,
            [
                "become-current", "--type", "com.example.a", "--info", "n:int=-9223372036854775808", "--info", "x:double=-0",
                "--info", "f:double=nan", "--info", "u:uuid=3F2504E0-4F89-11D3-9A0C-0305E82C3301", "--info", "z:null=",
                "--info", "t:date=2026-11-22T11:00:00+01:00", "--info", "h:url=https://example.com/", "--info", "b:bool=yes",
                "--info", "d:data=base64:AAEC", "--info", "s=plain",
            ]
        )
        let first = try LocalAPIJSON.decoder().decode(Activity.self, from: Data(try await CLI.run(d, ["current", "--json"]).stdout.utf8))
        let userInfoJSON = try LocalAPIJSON.encoder().encode(first.userInfo)
        let again = try await CLI.run(d, ["become-current", "--type", "com.example.b", "--info-json", "-"], stdin: userInfoJSON)
        #expect(again.status == 0, "\(again)")
        let second = try LocalAPIJSON.decoder().decode(Activity.self, from: Data(try await CLI.run(d, ["current", "--json"]).stdout.utf8))
        #expect(second.userInfo == first.userInfo)
        #expect(first.userInfo["t"] == .date(Timestamp(rfc3339: "2026-11-22T10:00:00Z")!))
        #expect(first.userInfo["x"] == .double(-0.0))
        #expect(first.userInfo.count == 10)
        try await d.finish()
    }

    @Test func largeActivitiesWarnOnStderr() async throws {
        let d = try await TestDaemon.start()
        let file = d.directory + "/4k"
        try Data(count: 4000).write(to: URL(fileURLWithPath: file))
        let r = try await CLI.run(d, ["become-current", "--type", "com.example.a", "--info", "blob:data=@\(file)"])
        #expect(r.status == 0)
        #expect(r.stderr.hasPrefix("handoffctl: warning: the activity encodes to"))
        #expect(UUID(uuidString: r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) != nil)
        try await d.finish()
    }
}
