import DesktopAgent
import Foundation
import HandoffAPI
import HandoffModel
import HandoffSystem
import HandoffTLS
import NIOCore
import HandoffTestSupport
import Testing

@testable import DaemonDocuments
@testable import DaemonStreams

/// The parts of documents that need no daemon: where a file is in words both devices understand,
/// its MIME type from its name, the names copies get, where Downloads is.
@Suite struct DocumentPartsTests {
    @Test func aFileIsPlacedInItsInnermostFolderAndJudgedByWhereItLeads() throws {
        let root = try TempDirectory.make()
        defer { TempDirectory.remove(root) }
        let home = root + "/home"
        for dir in ["/home/Sync/deep", "/home/docs", "/data/Photos", "/home/.cache"] {
            try FileManager.default.createDirectory(atPath: root + dir, withIntermediateDirectories: true)
        }
        for file in ["/home/Sync/deep/a.txt", "/home/docs/b.txt", "/data/Photos/c.png", "/home/.cache/d", "/elsewhere.txt"] {
            _ = FileManager.default.createFile(atPath: root + file, contents: Data("x".utf8))
        }
        try FileManager.default.createSymbolicLink(atPath: home + "/docs/link.txt", withDestinationPath: root + "/elsewhere.txt")
        try FileManager.default.createSymbolicLink(atPath: home + "/photos", withDestinationPath: root + "/data/Photos")
        let folders = DocumentFolders(home: home, folders: [home + "/Sync", root + "/data/Photos/"])

        #expect(try folders.place(of: home + "/Sync/deep/a.txt").place == DocumentPlace(folder: "Sync", path: "deep/a.txt"))
        #expect(try folders.place(of: home + "/docs/../docs/b.txt").place == DocumentPlace(folder: "home", path: "docs/b.txt"))
        // Through a link, the file is where the link leads.
        #expect(try folders.place(of: home + "/photos/c.png").place == DocumentPlace(folder: "Photos", path: "c.png"))
        #expect(throws: (any Error).self) { try folders.place(of: home + "/docs/link.txt") }
        #expect(throws: (any Error).self) { try folders.place(of: home + "/.cache/d") }
        // And the way back: the folder here, the file inside it.
        #expect(folders.existing(try #require(DocumentPlace(folder: "Photos", path: "c.png"))) == root + "/data/Photos/c.png")
        #expect(folders.existing(try #require(DocumentPlace(folder: "Music", path: "c.png"))) == nil)
        #expect(folders.existing(try #require(DocumentPlace(folder: "home", path: "docs/link.txt"))) == nil)
    }

    @Test func nothingInATemporaryFolderIsOfferedUnlessTheFolderItselfIsThere() throws {
        #expect(DocumentFolders.isTemporary("/tmp/x") && DocumentFolders.isTemporary("/dev/shm/y") && !DocumentFolders.isTemporary("/tmpfoo/x"))
        // A listed folder that holds a temporary one: what is in it is still not offered.
        let file = "/var/tmp/handoff-document-\(UUID().uuidString)"
        _ = FileManager.default.createFile(atPath: file, contents: Data("x".utf8))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let folders = DocumentFolders(home: "/nonexistent-home", folders: ["/var"])
        do {
            _ = try folders.place(of: file)
            Issue.record("offered \(file)")
        } catch {
            #expect(error.message.contains("temporary folder"), "\(error.message)")
        }
        // A home of / (a user without one) is no folder at all.
        #expect(DocumentFolders(home: "/", folders: []).roots.isEmpty)
        // The innermost folder holds a file, the home too.
        #expect(DocumentFolders(home: "/data/alice", folders: ["/data"]).roots.map(\.name) == ["home", "data"])
    }

    /// The other device names the file and says its type: the type it is opened as is this
    /// device's, and one whose app runs the file is never opened.
    @Test func theTypeADocumentOpensAsIsThisDevicesAndNeverOneThatRunsIt() throws {
        let globs = MIMEGlobs(MIMEGlobs.parse("50:application/x-desktop:*.desktop\n50:text/plain:*.txt\n50:application/x-shellscript:*.sh\n"))
        func document(_ name: String, _ type: String) throws -> DocumentActivity {
            DocumentActivity(place: try #require(DocumentPlace(folder: "home", path: name)), mimeType: type, size: 1, modified: .now(), sha256: String(repeating: "0", count: 64))
        }
        #expect(try DocumentReceiver.openingType(of: try document("notes.txt", "application/x-desktop"), globs: globs) == "text/plain")
        #expect(try DocumentReceiver.openingType(of: try document("notes", "text/plain"), globs: globs) == "text/plain")
        // A name that says nothing here: the other device's word only for documents' own kinds.
        #expect(try DocumentReceiver.openingType(of: try document("photo", "image/png"), globs: globs) == "image/png")
        #expect(try DocumentReceiver.openingType(of: try document("setup", "application/X-MS-DOS-Executable"), globs: globs) == "application/octet-stream")
        for (name, type) in [("run.desktop", "text/plain"), ("go.sh", "text/plain")] {
            let hostile = try document(name, type)
            do {
                _ = try DocumentReceiver.openingType(of: hostile, globs: globs)
                Issue.record("\(name) as \(type) would be opened")
            } catch {
                #expect(error.message.contains("runs a program"), "\(error.message)")
            }
        }
    }

    @Test func theMIMETypeComesFromTheNameAsSharedMIMEInfoSays() {
        let globs = MIMEGlobs(MIMEGlobs.parse(
            """
            # comment
            50:text/plain:*.txt
            50:text/x-c++src:*.C:cs
            50:text/x-csrc:*.c
            55:application/x-compressed-tar:*.tar.gz
            50:application/gzip:*.gz
            10:text/x-readme:README*
            50:text/x-makefile:Makefile
            bad line
            """))
        #expect(globs.type(ofName: "notes.TXT") == "text/plain")
        #expect(globs.type(ofName: "main.C") == "text/x-c++src")
        #expect(globs.type(ofName: "main.c") == "text/x-csrc")
        #expect(globs.type(ofName: "a.tar.gz") == "application/x-compressed-tar")
        #expect(globs.type(ofName: "a.gz") == "application/gzip")
        #expect(globs.type(ofName: "README.md") == "text/x-readme")
        #expect(globs.type(ofName: "Makefile") == "text/x-makefile")
        #expect(globs.type(ofName: "photo.xyz") == nil)
        // This machine's database, as the daemon reads it.
        if FileManager.default.fileExists(atPath: "/usr/share/mime/globs2") {
            #expect(MIMEGlobs(dataDirectories: ["/usr/share"]).type(ofName: "report.odt") == "application/vnd.oasis.opendocument.text")
        }
    }

    @Test func copiesGetNumberedNamesAndDownloadsIsWhereTheUserSaysIt() throws {
        #expect(FileKeeping.numbered("report.odt", 1) == "report.odt")
        #expect(FileKeeping.numbered("report.odt", 2) == "report (2).odt")
        #expect(FileKeeping.numbered("Makefile", 3) == "Makefile (3)")
        #expect(FileKeeping.numbered(".profile", 2) == ".profile (2)")
        // Never over 255 bytes: the stem gives way, the extension stays.
        let long = FileKeeping.numbered(String(repeating: "a", count: 251) + ".txt", 12)
        #expect(long.utf8.count == 255 && long.hasSuffix("a (12).txt"))
        let home = try TempDirectory.make()
        defer { TempDirectory.remove(home) }
        #expect(HandoffPaths.downloads(environment: ["HOME": home]) == home + "/Downloads")
        try FileManager.default.createDirectory(atPath: home + "/.config", withIntermediateDirectories: true)
        try "XDG_DOWNLOAD_DIR=\"$HOME/Old\"\nXDG_DESKTOP_DIR=\"$HOME/Desktop\"\nXDG_DOWNLOAD_DIR=\"$HOME/Téléchargements\"\n".write(toFile: home + "/.config/user-dirs.dirs", atomically: true, encoding: .utf8)
        #expect(HandoffPaths.downloads(environment: ["HOME": home]) == home + "/Téléchargements")
    }

    @Test func partialCopiesLeftByACrashGoAfterADay() throws {
        let dir = try TempDirectory.make()
        defer { TempDirectory.remove(dir) }
        for name in [".old.part", ".new.part", "kept.txt", ".hidden"] {
            _ = FileManager.default.createFile(atPath: dir + "/" + name, contents: Data("x".utf8))
        }
        let twoDaysAgo = Date(timeIntervalSinceNow: -2 * 24 * 3600)
        for name in [".old.part", "kept.txt", ".hidden"] {
            try FileManager.default.setAttributes([.modificationDate: twoDaysAgo], ofItemAtPath: dir + "/" + name)
        }
        DocumentReceiver.removeStalePartials(in: dir, now: .now())
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == [".hidden", ".new.part", "kept.txt"])
    }

    @Test func aFileGoesToAnAppAsAFileURI() {
        #expect(ApplicationActivation.fileURI("/home/u/Q3 report#1.odt") == "file:///home/u/Q3%20report%231.odt")
        #expect(ApplicationActivation.fileURI("/home/u/é") == "file:///home/u/%C3%A9")
    }
}

/// What a file sent against its offer (`OfferCheck`, issue 54) decides, chunk by chunk: the
/// verdict is in with the chunk that completes the size offered, before that chunk leaves.
@Suite struct OfferCheckTests {
    static let bytes = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7) }
    static let offered = StreamFile.Offered(size: 300, sha256: Crypto.sha256(bytes).lowercaseHex)

    static func chunk(_ range: Range<Int>, of bytes: [UInt8] = OfferCheckTests.bytes) -> ByteBuffer {
        ByteBufferAllocator().buffer(bytes: bytes[range])
    }

    /// `check` reads `chunk`; the verdict, and what of the chunk may go.
    static func read(_ check: inout OfferCheck, _ range: Range<Int>, of bytes: [UInt8] = OfferCheckTests.bytes) -> (OfferCheck.Verdict, Int) {
        var chunk = Self.chunk(range, of: bytes)
        let verdict = check.read(&chunk)
        return (verdict, chunk.readableBytes)
    }

    @Test func theFileAsOfferedIsWholeWithItsLastChunk() {
        var check = OfferCheck(Self.offered)
        #expect(Self.read(&check, 0..<128) == (.more, 128))
        #expect(Self.read(&check, 128..<256) == (.more, 128))
        #expect(Self.read(&check, 256..<300) == (.whole, 44))
        #expect(check.ended() == .whole)
    }

    @Test func aFileChangedUnderTheSameSizeIsCaughtBeforeItsLastChunk() {
        var changed = Self.bytes
        changed[10] ^= 1
        var check = OfferCheck(Self.offered)
        #expect(Self.read(&check, 0..<128, of: changed).0 == .more)
        #expect(Self.read(&check, 128..<256, of: changed).0 == .more)
        guard case .differs(let reason) = Self.read(&check, 256..<300, of: changed).0 else {
            Issue.record("a changed file passed")
            return
        }
        #expect(reason.contains("changed since it was offered"))
    }

    /// Grown since (appended to): what was offered is its start, sent whole; the rest is not.
    @Test func aFileGrownSinceIsSentAsOfferedOnly() {
        var grown = OfferCheck(StreamFile.Offered(size: 100, sha256: Crypto.sha256(Array(Self.bytes[0..<100])).lowercaseHex))
        #expect(Self.read(&grown, 0..<300) == (.whole, 100), "one read past the offer is cut to it")
        guard case .differs = Self.read(&grown, 0..<1).0 else {
            Issue.record("a byte past the offer passed")
            return
        }
    }

    @Test func aFileShorterThanOfferedIsNotWhatWasOffered() {
        var check = OfferCheck(Self.offered)
        #expect(Self.read(&check, 0..<200) == (.more, 200))
        guard case .differs(let reason) = check.ended() else {
            Issue.record("a short file passed")
            return
        }
        #expect(reason.contains("ended after 200 of the 300 bytes offered"))
        let empty = StreamFile.Offered(size: 0, sha256: Crypto.sha256([]).lowercaseHex)
        #expect(OfferCheck(empty).ended() == .whole, "an empty file offered empty")
    }

}
