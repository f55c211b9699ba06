import HandoffModel
import Testing

/// A document as an activity: what it carries, and what another device may not make it say.
@Suite struct DocumentActivityTests {
    static let hash = String(repeating: "ab", count: 32)

    @Test func aDocumentRoundTripsThroughItsActivity() throws {
        let document = DocumentActivity(
            place: try #require(DocumentPlace(folder: "home", path: "Documents/Q3 report.odt")), mimeType: "application/vnd.oasis.opendocument.text",
            size: 12_345, modified: Timestamp(secondsSinceEpoch: 1_700_000_000), sha256: Self.hash, app: "org.libreoffice.LibreOffice.writer.desktop"
        )
        let content = document.content
        #expect(content.type == "org.handoff.document" && content.title == "Q3 report.odt" && content.supportsContinuationStreams)
        #expect(try DocumentActivity(content) == document)
        try content.validate(now: Timestamp(secondsSinceEpoch: 0))
        #expect(document.place.description == "~/Documents/Q3 report.odt")
    }

    @Test(arguments: [
        ("../etc/passwd", "home"), ("/etc/passwd", "home"), ("a/./b", "home"), ("a//b", "home"), (".ssh/id_ed25519", "home"), ("docs/.hidden", "home"),
        ("", "home"), ("report.txt", ""), ("report.txt", ".Sync"), ("report.txt", "a/b"),
    ])
    func placesThatCouldLeadOutOrIntoHiddenFilesAreNone(path: String, folder: String) {
        #expect(DocumentPlace(folder: folder, path: path) == nil)
    }

    @Test func whatAnotherDeviceSendsIsChecked() throws {
        let good = DocumentActivity(
            place: try #require(DocumentPlace(folder: "home", path: "a.txt")), mimeType: "text/plain", size: 1, modified: Timestamp(secondsSinceEpoch: 1),
            sha256: Self.hash
        ).content
        let bad: [(String, ActivityValue?)] = [
            ("path", .string("../a.txt")), ("path", .int(3)), ("folder", .string("x/y")), ("mimeType", .string("text")),
            ("mimeType", .string("text/plain; charset=utf-8")), ("size", .int(-1)), ("size", .string("1")), ("modified", .int(1)),
            ("sha256", .string(String(repeating: "AB", count: 32))), ("sha256", .string("abc")), ("app", .string("../x.desktop")), ("app", .string("editor")),
            ("path", nil), ("sha256", nil),
        ]
        for (key, value) in bad {
            var content = good
            content.userInfo[key] = value
            #expect(throws: ActivityError.self, "\(key) = \(String(describing: value))") { try DocumentActivity(content) }
        }
        var other = good
        other.type = "org.example.edit"
        #expect(throws: ActivityError.self) { try DocumentActivity(other) }
    }

    @Test func aNameIsAlwaysATitle() throws {
        let name = String(repeating: "é", count: 125) + ".txt"
        #expect(name.utf8.count == 254)
        let document = DocumentActivity(
            place: try #require(DocumentPlace(folder: "home", path: "docs/" + name)), mimeType: "text/plain", size: 0, modified: Timestamp(secondsSinceEpoch: 0),
            sha256: Self.hash
        )
        #expect(document.content.title == name)
        try document.content.validate(now: Timestamp(secondsSinceEpoch: 0))
        #expect(DocumentPlace(folder: "home", path: String(repeating: "é", count: 128)) == nil)
    }
}
