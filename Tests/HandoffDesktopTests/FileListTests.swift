import DesktopAgent
import DesktopClipboard
import Foundation
import HandoffTestSupport
import Testing

/// A copy's file list (`text/uri-list`) as the agent reads and writes it (`FileList`).
@Suite struct FileListTests {
    @Test func uriListsReadAsAppsWriteThem() {
        let text = "# copied by Files\r\nfile:///home/ana/Report%201.odt\r\nhttps://example.org/a?b=c\r\n\r\nfile://localhost/tmp/x\nfile://otherhost/etc/passwd\r\n"
        let uris = FileList.uris(Array(text.utf8))
        #expect(uris == ["file:///home/ana/Report%201.odt", "https://example.org/a?b=c", "file://localhost/tmp/x", "file://otherhost/etc/passwd"])
        #expect(uris.map(FileList.path) == ["/home/ana/Report 1.odt", nil, "/tmp/x", nil])
        #expect(FileList.path(of: "file:///a%00b") == nil, "no NUL in a path")
        #expect(FileList.path(of: "file:///a%2") == nil)
        #expect(FileList.path(of: "file:///caf%C3%A9") == "/café")
        #expect(FileList.text(["file:///a", "https://b"]) == Array("file:///a\r\nhttps://b\r\n".utf8))
        // A longer list from another device is cut at what a paste can name, before more is held.
        let huge = Array(String(repeating: "file:///x\r\n", count: 5000).utf8)
        #expect(FileList.uris(huge).count == 1000)
    }

    @Test func localPathsBecomeURIsThatReadBack() {
        for path in ["/home/ana/Downloads/Handoff/Report 1.odt", "/tmp/café #1%.txt", "/a/b"] {
            let uri = FileList.uri(of: path)
            #expect(uri.hasPrefix("file:///") && !uri.contains(" ") && !uri.contains("#"))
            #expect(FileList.path(of: uri) == path)
        }
        #expect(FileList.keptName(of: "/home/ana/Report 1.odt") == "Report 1.odt")
        #expect(FileList.keptName(of: "/") == "file")
        #expect(FileList.keptName(of: "/tmp/a\nb") == "a-b")
        // Neither hidden nor taken for a partial file; no bidi tricks; within 255 bytes.
        #expect(FileList.keptName(of: "/tmp/.x.part") == "x.part")
        #expect(FileList.keptName(of: "/tmp/...") == "file")
        #expect(FileList.keptName(of: "/tmp/a\u{202E}txt.exe") == "a-txt.exe")
        let long = FileList.keptName(of: "/tmp/" + String(repeating: "é", count: 200) + ".pdf")
        #expect(long.utf8.count <= 255 && long.hasSuffix(".pdf"))
    }

    @Test func onlyRegularFilesOfTheListAreServed() throws {
        let dir = try TempDirectory.make()
        defer { TempDirectory.remove(dir) }
        _ = FileManager.default.createFile(atPath: dir + "/a.txt", contents: Data("a".utf8))
        try FileManager.default.createDirectory(atPath: dir + "/folder", withIntermediateDirectories: true)
        let uris = [FileList.uri(of: dir + "/a.txt"), "https://example.org", FileList.uri(of: dir + "/folder"), FileList.uri(of: dir + "/gone")]
        #expect(FileList.files(uris) == [0: dir + "/a.txt"])
    }
}
