import Foundation
import HandoffAPI
import HandoffClient
import DaemonCore
import HandoffDaemon
import HandoffDiscovery
import HandoffModel
import HandoffTestSupport
import Testing

/// Documents from any app (docs/apps.md, "Documents from any app"), between two daemons in this
/// process: A ("desk") offers a file, B ("laptop") continues it — the same document where B has it,
/// else the copy that comes over a stream — and opens it with the app for its MIME type. Across
/// simulated hosts with a real GTK recently-used list: DocumentsEndToEndTests.
@Suite(.timeLimit(.minutes(3))) struct DocumentTests {
    /// A file under `directory` with `bytes`, its folders made.
    static func write(_ bytes: [UInt8], to path: String) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// Bytes that are not all alike (so that a copy cut short or shifted shows).
    static func content(_ count: Int, seed: UInt8 = 7) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed) &+ $0 >> 9) }
    }

    /// On `b`, an app for text/plain whose command writes the path it was given to `opened`.
    static func installViewer(on b: TestDaemon) throws -> String {
        let opened = b.directory + "/viewer-opened"
        try ContinuationTests.script(b.directory + "/viewer.sh", "printf %s \"$1\" > \(opened).tmp && mv \(opened).tmp \(opened)")
        let applications = b.directory + "/share/applications"
        try FileManager.default.createDirectory(atPath: applications, withIntermediateDirectories: true)
        try """
            [Desktop Entry]
            Type=Application
            Name=Viewer
            Exec=\(b.directory)/viewer.sh %f
            MimeType=text/plain;
            """.write(toFile: applications + "/org.example.Viewer.desktop", atomically: true, encoding: .utf8)
        return opened
    }

    /// `path` made A's current activity, as a document, and seen by B.
    static func offer(_ path: String, on a: TestDaemon, to b: TestDaemon) async throws -> Activity {
        let put = try await a.client.send(.becomeCurrent(document: DocumentRequest(path: path, mimeType: "text/plain")))
        try await ContinuationTests.waitUntilSeen(put.activity, by: b)
        return put.activity
    }

    static func continueOn(_ b: TestDaemon) async throws(HandoffClientError) -> ContinueResponse {
        try await b.client.send(.continueActivity(ContinueRequest(peer: "desk", delivery: .dispatch)))
    }

    static func bytes(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { Array($0) }
    }

    @Test func aDocumentNotThereComesOverAStreamIsCheckedAndOpens() async throws {
        let (a, b) = try await ContinuationTests.pair()
        let original = a.directory + "/Documents/Reports/report.txt"
        let bytes = Self.content(3 << 20)
        try Self.write(bytes, to: original)
        let opened = try Self.installViewer(on: b)
        // Something of that name is in B's folder for copies already: it is kept as it is.
        let copies = b.directory + "/Downloads/Handoff"
        try Self.write(Array("mine".utf8), to: copies + "/report.txt")

        let activity = try await Self.offer(original, on: a, to: b)
        let document = try DocumentActivity(activity.content)
        #expect(activity.type == DocumentActivity.type && activity.title == "report.txt")
        #expect(document.place == DocumentPlace(folder: "home", path: "Documents/Reports/report.txt"))
        #expect(document.size == Int64(bytes.count) && document.mimeType == "text/plain" && activity.content.supportsContinuationStreams)

        let delivered = try #require(try await Self.continueOn(b).delivered)
        #expect(delivered.kind == .handler && delivered.handler == "org.example.Viewer.desktop")
        #expect(delivered.document == copies + "/report (2).txt")
        #expect(Self.bytes(copies + "/report (2).txt") == bytes)
        #expect(Self.bytes(copies + "/report.txt") == Array("mine".utf8))
        #expect(String(decoding: try await ContinuationTests.waitForFile(opened), as: UTF8.self) == copies + "/report (2).txt")
        // It keeps the original's modification time, and nothing half-written is left.
        let times = try [original, copies + "/report (2).txt"].map { try FileManager.default.attributesOfItem(atPath: $0)[.modificationDate] as? Date }
        #expect(abs(try #require(times[0]).timeIntervalSince(try #require(times[1]))) < 0.000_01)
        #expect(try FileManager.default.contentsOfDirectory(atPath: copies).sorted() == ["report (2).txt", "report.txt"])
        // A sent it itself, on a stream of its own; B received it.
        let sent = try await a.client.send(.streams).streams
        #expect(sent.count == 1 && sent.first?.role == .originating && sent.first?.bytesSent == Int64(bytes.count))
        for d in [a, b] { try await d.finish() }
    }

    @Test func theSameDocumentInAMappedFolderOpensWithoutAStream() async throws {
        // `Shared` is one folder on both devices, in different places (as Syncthing keeps one).
        var shared: [String] = []
        let (a, b) = try await ContinuationTests.pair(
            configureA: { c in
                let folder = c.handlerEnvironment!["HOME"]! + "/sync-a/Shared"
                shared.append(folder)
                c.settings.documentFolders = [folder]
            },
            configureB: { c in
                let folder = c.handlerEnvironment!["HOME"]! + "/elsewhere/Shared"
                shared.append(folder)
                c.settings.documentFolders = [folder]
            })
        let bytes = Self.content(100_000)
        try Self.write(bytes, to: shared[0] + "/plans/q3.txt")
        try Self.write(bytes, to: shared[1] + "/plans/q3.txt")
        let opened = try Self.installViewer(on: b)

        let activity = try await Self.offer(shared[0] + "/plans/q3.txt", on: a, to: b)
        #expect(try DocumentActivity(activity.content).place == DocumentPlace(folder: "Shared", path: "plans/q3.txt"))
        let delivered = try #require(try await Self.continueOn(b).delivered)
        #expect(delivered.document == shared[1] + "/plans/q3.txt")
        #expect(String(decoding: try await ContinuationTests.waitForFile(opened), as: UTF8.self) == shared[1] + "/plans/q3.txt")
        #expect(try await b.client.send(.streams).streams.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: b.directory + "/Downloads/Handoff"))

        // B's copy differs: the document comes as a copy, and B's own is left alone.
        try Self.write(Array("an older draft".utf8), to: shared[1] + "/plans/q3.txt")
        let copy = try #require(try await Self.continueOn(b).delivered)
        #expect(copy.document == b.directory + "/Downloads/Handoff/q3.txt")
        #expect(Self.bytes(b.directory + "/Downloads/Handoff/q3.txt") == bytes)
        #expect(Self.bytes(shared[1] + "/plans/q3.txt") == Array("an older draft".utf8))
        for d in [a, b] { try await d.finish() }
    }

    @Test func aDocumentChangedSinceItWasOfferedSaysSoAndNothingIsKept() async throws {
        let (a, b) = try await ContinuationTests.pair()
        let original = a.directory + "/notes.txt"
        try Self.write(Self.content(10_000), to: original)
        _ = try Self.installViewer(on: b)
        _ = try await Self.offer(original, on: a, to: b)
        // Saved again after it was offered (a later modification time).
        try Self.write(Self.content(10_001, seed: 9), to: original)
        let later = Date(timeIntervalSinceNow: 5)
        try FileManager.default.setAttributes([.modificationDate: later], ofItemAtPath: original)
        let events = try await b.client.subscribe(.events)
        do {
            _ = try await Self.continueOn(b)
            Issue.record("an old copy was opened")
        } catch {
            #expect(error.code == .api(.activityChanged))
            #expect(error.message.contains("notes.txt changed since it was offered"))
        }
        let seen = try await ContinuationTests.lifecycle(events, count: 2)
        guard case .continueFailed(_, _, _, let code, let reason) = seen[1] else {
            Issue.record("expected continueFailed: \(seen)")
            return
        }
        #expect(code == .activityChanged && reason.contains("changed since it was offered"))
        #expect((try? FileManager.default.contentsOfDirectory(atPath: b.directory + "/Downloads/Handoff")) ?? [] == [])
        for d in [a, b] { try await d.finish() }
    }

    /// Issue 54: a document rewritten under the same size and modification time is caught by A,
    /// which hashes it as it sends it: the stream fails before its last chunk leaves (B had
    /// discarded it by its own hash only after all of it came), and B keeps nothing.
    @Test func aDocumentThatIsNotWhatWasOfferedNeverLeavesWhole() async throws {
        let (a, b) = try await ContinuationTests.pair()
        let original = a.directory + "/notes.txt"
        let size = 300_000
        try Self.write(Self.content(size), to: original)
        _ = try Self.installViewer(on: b)
        // On a whole second, so that putting it back below is exact.
        let offered = Date(timeIntervalSince1970: 1_700_000_000)
        try FileManager.default.setAttributes([.modificationDate: offered], ofItemAtPath: original)
        _ = try await Self.offer(original, on: a, to: b)
        // Rewritten with the same size and, put back, the same modification time (as a tool that
        // keeps times does): only the hash can tell.
        try Self.write(Self.content(size, seed: 99), to: original)
        try FileManager.default.setAttributes([.modificationDate: offered], ofItemAtPath: original)
        do {
            _ = try await Self.continueOn(b)
            Issue.record("a document that is not the one offered was opened")
        } catch {
            #expect(error.message.contains("notes.txt did not come whole from desk"), "\(error)")
        }
        let sent = try #require(try await a.client.send(.streams).streams.first)
        #expect(sent.state == .failed && sent.error?.contains("changed since it was offered") == true, "\(sent)")
        #expect(sent.bytesSent < Int64(size), "the last chunk stayed on A: \(sent.bytesSent) of \(size) bytes left")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: b.directory + "/Downloads/Handoff")) ?? [] == [])
        for d in [a, b] { try await d.finish() }
    }

    @Test func aDocumentThatIsGoneIsWithdrawn() async throws {
        let (a, b) = try await ContinuationTests.pair()
        let original = a.directory + "/gone.txt"
        try Self.write(Self.content(1000), to: original)
        _ = try Self.installViewer(on: b)
        _ = try await Self.offer(original, on: a, to: b)
        try FileManager.default.removeItem(atPath: original)
        do {
            _ = try await Self.continueOn(b)
            Issue.record("continued a document that is gone")
        } catch {
            #expect(error.code == .api(.activityChanged))
            #expect(error.message.contains("gone.txt is no longer there"))
        }
        do {
            _ = try await a.client.send(.currentActivity)
            Issue.record("the document that is gone is still current")
        } catch {
            #expect(error.code == .api(.noCurrentActivity))
        }
        for d in [a, b] { try await d.finish() }
    }

    @Test func onlyWhatTheUserMayOfferIsOffered() async throws {
        let a = try await TestDaemon.start { $0.settings.documentsMaxSize = 4096 }
        let home = a.directory
        try Self.write(Self.content(10), to: home + "/.secret")
        try Self.write(Self.content(10), to: home + "/.config/app/settings.txt")
        try Self.write(Self.content(5000), to: home + "/big.bin")
        try Self.write(Self.content(10), to: home + "/fine.txt")
        try FileManager.default.createSymbolicLink(atPath: home + "/passwd-link", withDestinationPath: "/etc/passwd")
        try FileManager.default.createDirectory(atPath: home + "/folder", withIntermediateDirectories: true)
        let refused: [(DocumentRequest, String)] = [
            (DocumentRequest(path: home + "/.secret"), "hidden"),
            (DocumentRequest(path: home + "/.config/app/settings.txt"), "hidden"),
            (DocumentRequest(path: home + "/big.bin"), "over [documents] max_size"),
            (DocumentRequest(path: "/etc/passwd"), "outside your home folder"),
            (DocumentRequest(path: home + "/passwd-link"), "outside your home folder"),
            (DocumentRequest(path: home + "/folder"), "not a regular file"),
            (DocumentRequest(path: home + "/missing.txt"), "does not exist"),
            (DocumentRequest(path: "fine.txt"), "not an absolute path"),
            // The recently-used list is followed only when the user turned it on.
            (DocumentRequest(path: home + "/fine.txt", recentlyUsed: true), "[documents] follow = true"),
        ]
        for (request, reason) in refused {
            do {
                _ = try await a.client.send(.becomeCurrent(document: request))
                Issue.record("offered \(request.path)")
            } catch {
                #expect(error.code == .api(.notOffered), "\(request.path)")
                #expect(error.message.contains(reason), "\(request.path): \(error.message)")
            }
        }
        for request in [DocumentRequest(path: home + "/fine.txt", mimeType: "text"), DocumentRequest(path: home + "/fine.txt", app: "../editor.desktop")] {
            do {
                _ = try await a.client.send(.becomeCurrent(document: request))
                Issue.record("took \(request)")
            } catch {
                #expect(error.code == .api(.invalidValue), "\(error)")
            }
        }
        // A document activity is made only from its file: not by hand, not by a window.
        let handMade = ActivityContent(type: DocumentActivity.type, title: "x")
        let app = try await a.client.subscribe(.registerApp(AppRegistration(appID: "org.example.Notes")))
        let (registration, _) = try await AppRoutesTests.registered(app)
        for (what, call) in [
            ("PUT current", { () async throws(HandoffClientError) in _ = try await a.client.send(.becomeCurrent(PutCurrentActivityRequest(content: handMade))) }),
            ("a window", { () async throws(HandoffClientError) in _ = try await a.client.send(.setWindowActivity(handMade, window: "w", registration: registration)) }),
        ] as [(String, () async throws(HandoffClientError) -> Void)] {
            do {
                try await call()
                Issue.record("a hand-made document activity was taken through \(what)")
            } catch {
                #expect(error.code == .api(.invalidType), "\(what): \(error)")
            }
        }
        // What may be offered is; offered again unchanged it is the same activity, changed a new one.
        let first = try await a.client.send(.becomeCurrent(document: DocumentRequest(path: home + "/fine.txt", app: "org.example.Editor.desktop")))
        let again = try await a.client.send(.becomeCurrent(document: DocumentRequest(path: home + "/fine.txt", app: "org.example.Editor.desktop")))
        try Self.write(Self.content(20), to: home + "/fine.txt")
        let changed = try await a.client.send(.becomeCurrent(document: DocumentRequest(path: home + "/fine.txt")))
        #expect(first.activity.id == again.activity.id && first.activity.id != changed.activity.id)
        #expect(try DocumentActivity(first.activity.content).app == "org.example.Editor.desktop")
        #expect(try DocumentActivity(changed.activity.content).size == 20)
        // Withdrawn only while it is still the one named.
        #expect(try await a.client.send(.resignCurrent(ifID: first.activity.id)).resigned == nil)
        #expect(try await a.client.send(.resignCurrent(ifID: changed.activity.id)).resigned?.id == changed.activity.id)
        app.close()
        try await a.finish()
    }

    @Test func aDocumentOverTheSizeTakenHereIsNotFetched() async throws {
        let (a, b) = try await ContinuationTests.pair(configureB: { $0.settings.documentsMaxSize = 1000 })
        let original = a.directory + "/big.txt"
        try Self.write(Self.content(5000), to: original)
        _ = try Self.installViewer(on: b)
        _ = try await Self.offer(original, on: a, to: b)
        do {
            _ = try await Self.continueOn(b)
            Issue.record("fetched a document over the size taken here")
        } catch {
            #expect(error.code == .api(.notOffered) && error.message.contains("over [documents] max_size here"), "\(error)")
        }
        #expect(try await a.client.send(.streams).streams.isEmpty)
        for d in [a, b] { try await d.finish() }
    }
}
