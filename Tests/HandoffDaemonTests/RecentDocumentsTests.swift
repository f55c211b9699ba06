import DesktopAgent
import DesktopDocuments
import Foundation
import HandoffAPI
import HandoffClient
import HandoffDaemon
import HandoffModel
import HandoffTestSupport
import Logging
import Testing

/// The desktop agent follows the recently-used list (docs/apps.md, "Documents from any app"): what
/// GTK records becomes the current document while `[documents] follow` is on, and is withdrawn
/// when its file goes. The list is written by GTK itself (`RecentlyUsedWriter`).
@Suite(.timeLimit(.minutes(3))) struct RecentDocumentsTests {
    @Test func whatAnAppOpensBecomesCurrentWhileFollowingIsOnAndGoesWithItsFile() async throws {
        let daemon = try await TestDaemon.start()
        let home = daemon.directory
        let environment = ["HOME": home, "XDG_DATA_HOME": home + "/share", "XDG_DATA_DIRS": home + "/system-share", "PATH": "/usr/bin:/bin"]
        try FileManager.default.createDirectory(atPath: home + "/share/applications", withIntermediateDirectories: true)
        try "[Desktop Entry]\nType=Application\nName=Gedit\nExec=gedit %U\nMimeType=text/plain;\n".write(
            toFile: home + "/share/applications/org.gnome.gedit.desktop", atomically: true, encoding: .utf8)
        let first = home + "/Documents/first.txt"
        let second = home + "/Documents/second.txt"
        try DocumentTests.write(Array("one".utf8), to: first)
        try DocumentTests.write(Array("two".utf8), to: second)

        let events = try await daemon.client.subscribe(.events)
        let (handled, report) = AsyncStream.makeStream(of: RecentDocuments.Handled.self)
        let agent = Task {
            await RecentDocuments(client: daemon.client, environment: environment, logger: TestLogger.make("recent")).run { report.yield($0) }
        }
        defer { agent.cancel() }
        var decisions = handled.makeAsyncIterator()
        #expect(await decisions.next() == .watching)
        // Following is off (the default): the agent asks, and offers nothing.
        try await RecentlyUsedWriter.record(first, mimeType: "text/plain", application: "org.gnome.gedit", environment: environment)
        #expect(await decisions.next() == .notFollowing(path: first))
        // Turned on by a reload, what is opened next becomes current.
        var settings = daemon.daemon.configuration.settings
        settings.documentsFollow = true
        _ = try daemon.daemon.reload(settings)
        try await RecentlyUsedWriter.record(second, mimeType: "text/plain", application: "org.gnome.gedit", environment: environment)
        guard case .offered(second, let id) = await decisions.next() else {
            Issue.record("the second document was not offered")
            return
        }
        // Nothing became current before it.
        let became = try #require(try await Self.nextChange(events))
        #expect(became?.id == id)
        let document = try DocumentActivity(try #require(became).content)
        #expect(document.place == DocumentPlace(folder: "home", path: "Documents/second.txt"))
        #expect(document.mimeType == "text/plain" && document.app == "org.gnome.gedit.desktop")

        // The file goes: so does the activity.
        try FileManager.default.removeItem(atPath: second)
        #expect(await decisions.next() == .withdrawn(path: second))
        #expect(try await Self.nextChange(events) == .some(nil))
        agent.cancel()
        _ = await agent.value
        try await daemon.finish()
    }

    /// The next change of the current activity: what became current, or nil when it was withdrawn.
    static func nextChange(_ events: EventSubscription) async throws -> Activity?? {
        while let event = try await events.next() {
            switch event.body {
            case .currentActivityChanged(let activity): return .some(activity)
            case .currentActivityResigned: return .some(nil)
            default: continue
            }
        }
        throw TestFailure("the events ended")
    }

    @Test func theNewestLocalFileOfTheListIsTheDocument() throws {
        let xbel = """
            <?xml version="1.0" encoding="UTF-8"?>
            <xbel version="1.0" xmlns:bookmark="http://www.freedesktop.org/standards/desktop-bookmarks" xmlns:mime="http://www.freedesktop.org/standards/shared-mime-info">
              <bookmark href="file:///home/u/old.txt" added="2026-01-01T10:00:00Z" modified="2026-01-01T10:00:00Z" visited="2026-01-01T10:00:00Z">
                <info><metadata owner="http://freedesktop.org"><mime:mime-type type="text/plain"/>
                <bookmark:applications><bookmark:application name="gedit" exec="&apos;gedit %u&apos;" modified="2026-01-01T10:00:00Z" count="1"/></bookmark:applications>
                </metadata></info>
              </bookmark>
              <bookmark href="file:///home/u/Q3%20report.odt" added="2026-01-01T09:00:00Z" modified="2026-01-01T09:00:00Z" visited="2026-01-01T09:00:00Z">
                <info><metadata owner="http://freedesktop.org"><mime:mime-type type="application/vnd.oasis.opendocument.text"/>
                <bookmark:applications>
                  <bookmark:application name="libreoffice-writer" exec="x" modified="2026-01-01T09:00:00Z" count="1"/>
                  <bookmark:application name="org.gnome.TextEditor" exec="y" modified="2026-01-02T08:00:00.5Z" count="2"/>
                </bookmark:applications></metadata></info>
              </bookmark>
              <bookmark href="https://example.com/newest" added="2026-03-01T00:00:00Z" modified="2026-03-01T00:00:00Z" visited="2026-03-01T00:00:00Z"/>
            </xbel>
            """
        let latest = try #require(RecentlyUsed.latest(Data(xbel.utf8)))
        #expect(latest.path == "/home/u/Q3 report.odt")
        #expect(latest.mimeType == "application/vnd.oasis.opendocument.text")
        #expect(latest.application == "org.gnome.TextEditor")
        #expect(RecentlyUsed.latest(Data("<xbel><bookmark href=".utf8)) == nil)
        #expect(RecentlyUsed.latest(Data()) == nil)
        #expect(RecentlyUsed.path(environment: ["HOME": "/home/u"]) == "/home/u/.local/share/recently-used.xbel")
    }
}
