import Foundation
import HandoffModel
import HandoffTestSupport
import Testing

@testable import DaemonContinue
@testable import HandoffDaemon

/// Finding the app for an activity type: `.desktop` files, Exec lines and their field codes, and
/// the order in which handoffd.toml and the XDG data directories are searched. Pure; no process
/// is started.
@Suite struct HandlerCatalogTests {
    @Test func execLinesSplitLikeTheDesktopEntrySpecification() throws {
        #expect(try ExecLine(parsing: "editor --open %f").arguments == ["editor", "--open", "%f"])
        #expect(try ExecLine(parsing: "  \"/opt/My Editor/bin/ed\"   %U ").arguments == ["/opt/My Editor/bin/ed", "%U"])
        #expect(try ExecLine(parsing: #"sh -c "echo \"quoted\" \$HOME \\ \`x\`""#).arguments == ["sh", "-c", #"echo "quoted" $HOME \ `x`"#])
        #expect(throws: ExecLine.SyntaxError.self) { try ExecLine(parsing: "\"unclosed") }
        #expect(throws: ExecLine.SyntaxError.self) { try ExecLine(parsing: "   ") }
        #expect(throws: ExecLine.SyntaxError.self) { try ExecLine(parsing: "%f") }
    }

    /// A web page from another device is one argument, never part of a quoted one (which a
    /// `sh -c "…"` would read): there `%u` is the activity's file, as without a page.
    @Test func aPageNeverGoesIntoAQuotedArgument() throws {
        let line = try ExecLine(parsing: #"sh -c "shop %u" --url=%u "%u""#)
        #expect(line.quoted == [false, false, true, false, true])
        #expect(line.expanded(.init(file: "/run/a.json", url: "https://example.com/;touch$IFS/tmp/x")) == ["sh", "-c", "shop /run/a.json", "--url=https://example.com/;touch$IFS/tmp/x", "/run/a.json"])
    }

    /// A document's name comes from another device: the same, for its file.
    @Test func aDocumentNamedElsewhereNeverGoesIntoAQuotedArgument() throws {
        let line = try ExecLine(parsing: #"sh -c "pad %f" %f"#)
        let file = "/home/u/Downloads/Handoff/$(touch x).txt"
        #expect(line.expanded(.init(file: file, fileNamedElsewhere: true)) == ["sh", "-c", "pad ", file])
        #expect(line.expanded(.init(file: "/run/a.json")) == ["sh", "-c", "pad /run/a.json", "/run/a.json"])
        // Such an app is not given a document at all (it would start without it).
        let plain = try ExecLine(parsing: "pad --open %f")
        #expect(line.quotesAFileOrAddress && !plain.quotesAFileOrAddress)
    }

    @Test func fieldCodesAreFilledAndNeverReparsed() throws {
        let line = try ExecLine(parsing: "app %i --name=%c %f %u %k %d %%done")
        let fields = ExecLine.Fields(file: "/run/c.json", url: nil, name: "App", icon: "app-icon", desktopFile: "/x/app.desktop")
        #expect(line.expanded(fields) == ["app", "--icon", "app-icon", "--name=App", "/run/c.json", "/run/c.json", "/x/app.desktop", "%done"])
        // A URL with spaces, quotes, semicolons or percent signs stays one argument, as it is.
        let browser = try ExecLine(parsing: "firefox --new-tab %u")
        let url = "https://example.com/a b;\"c\"%20$(id)"
        #expect(browser.expanded(.init(url: url)) == ["firefox", "--new-tab", url])
        // Codes without a value drop their argument.
        #expect(try ExecLine(parsing: "app %f %i").expanded(.init()) == ["app"])
    }

    @Test func desktopEntriesReadTheirGroupAndLists() throws {
        let text = """
            # a comment
            [Desktop Entry]
            Type=Application
            Name=My\\sEditor
            Name[fr]=Mon éditeur
            Exec=editor %f
            X-Handoff-ActivityTypes=org.example.a;org.example.b\\;c; ;
            [Desktop Action New]
            Exec=ignored
            """
        let entry = try #require(DesktopEntry(id: "editor.desktop", path: "/x/editor.desktop", text: text))
        #expect(entry.name == "My Editor")
        #expect(entry.exec == "editor %f")
        #expect(entry.activityTypes == ["org.example.a", "org.example.b;c"])
        #expect(entry.isApplication && !entry.hidden)
        #expect(DesktopEntry(id: "x", path: "/x", text: "[Other]\nExec=x") == nil)
    }

    @Test func configFirstThenTheFirstDirectoryWithTheID() throws {
        let root = try TempDirectory.make()
        defer { TempDirectory.remove(root) }
        func install(_ dir: String, _ relative: String, _ body: String) throws {
            let path = root + "/" + dir + "/applications/" + relative
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try ("[Desktop Entry]\nType=Application\n" + body).write(toFile: path, atomically: true, encoding: .utf8)
        }
        // The user's copy of an app hides the system's, even to take a type away.
        try install("user", "org.example.Editor.desktop", "Exec=user-editor %f\nX-Handoff-ActivityTypes=org.example.edit;")
        try install("system", "org.example.Editor.desktop", "Exec=system-editor %f\nX-Handoff-ActivityTypes=org.example.edit;org.example.view;")
        // Subdirectories make the id: kde/reader.desktop is kde-reader.desktop.
        try install("system", "kde/reader.desktop", "Exec=reader %u\nX-Handoff-ActivityTypes=org.example.read")
        try install("system", "hidden.desktop", "Exec=hidden\nHidden=true\nX-Handoff-ActivityTypes=org.example.hidden")
        try install("system", "missing.desktop", "Exec=missing\nTryExec=/nonexistent/missing\nX-Handoff-ActivityTypes=org.example.missing")

        var catalog = HandlerCatalog(configured: [:], dataDirectories: [root + "/user", root + "/system"])
        let edit = try #require(catalog.handler(for: "org.example.edit", searchPath: "/usr/bin:/bin"))
        #expect(edit.label == "org.example.Editor.desktop")
        if case .desktop(_, let line) = edit { #expect(line.arguments == ["user-editor", "%f"]) }
        #expect(catalog.handler(for: "org.example.view", searchPath: "/usr/bin:/bin") == nil)
        #expect(catalog.handler(for: "org.example.read", searchPath: "/usr/bin:/bin")?.label == "kde-reader.desktop")
        #expect(catalog.handler(for: "org.example.hidden", searchPath: "/usr/bin:/bin") == nil)
        #expect(catalog.handler(for: "org.example.missing", searchPath: "/usr/bin:/bin") == nil)

        catalog.configured["org.example.edit"] = try ExecLine(parsing: "configured %f")
        #expect(catalog.handler(for: "org.example.edit", searchPath: "/usr/bin:/bin")?.label == "config")
    }

    @Test func dataDirectoriesFollowXDG() {
        #expect(HandlerCatalog.dataDirectories(environment: ["HOME": "/home/u"]) == ["/home/u/.local/share", "/usr/local/share", "/usr/share"])
        #expect(
            HandlerCatalog.dataDirectories(environment: ["HOME": "/home/u", "XDG_DATA_HOME": "/d", "XDG_DATA_DIRS": "/a:relative:/b"])
                == ["/d", "/a", "/b"]
        )
    }

    /// The app for a MIME type: the first installed default of the first mimeapps.list that
    /// names one (the user's before the system's), else the first app that lists the type.
    @Test func aDocumentOpensWithTheDefaultAppForItsType() throws {
        let root = try TempDirectory.make()
        defer { TempDirectory.remove(root) }
        func write(_ relative: String, _ body: String) throws {
            let path = root + "/" + relative
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try body.write(toFile: path, atomically: true, encoding: .utf8)
        }
        try write("data/applications/a-viewer.desktop", "[Desktop Entry]\nType=Application\nExec=a %f\nMimeType=text/plain;image/png;\n")
        try write("data/applications/b-editor.desktop", "[Desktop Entry]\nType=Application\nExec=b %u\nMimeType=text/plain;\n")
        // The user's default names an app that is not installed, then one that is.
        try write("config/mimeapps.list", "[Added Associations]\ntext/plain=a-viewer.desktop;\n[Default Applications]\ntext/plain=gone.desktop;b-editor.desktop;\n")
        try write("system/mimeapps.list", "[Default Applications]\ntext/plain=a-viewer.desktop\nimage/png=b-editor.desktop\n")
        let catalog = HandlerCatalog(configured: [:], dataDirectories: [root + "/data"])
        let dirs = [root + "/config", root + "/system"]
        #expect(catalog.application(opening: "text/plain", configDirectories: dirs, searchPath: "/bin")?.0.id == "b-editor.desktop")
        // A default for a type the app does not list still names it (the user chose it).
        #expect(catalog.application(opening: "image/png", configDirectories: dirs, searchPath: "/bin")?.0.id == "b-editor.desktop")
        #expect(catalog.application(opening: "image/png", configDirectories: [], searchPath: "/bin")?.0.id == "a-viewer.desktop")
        #expect(catalog.application(opening: "application/pdf", configDirectories: dirs, searchPath: "/bin") == nil)
        #expect(HandlerCatalog.configDirectories(environment: ["HOME": "/home/u"]) == ["/home/u/.config", "/etc/xdg"])
    }
}
