import Foundation
import HandoffModel
import HandoffTestSupport
import Testing
import SessionClipboard

/// The X11 clipboard engine against a real X server (Xvfb) and real clients: `xclip` copying and
/// pasting, and `scripts/clipboard-owner.py` (python3-xlib) copying as a password manager does.
@Suite(.heavy, .timeLimit(.minutes(3))) struct X11ClipboardTests {
    /// An X server of its own.
    final class Server: @unchecked Sendable {
        let process: RunningProcess
        let display: String

        init() async throws {
            process = try RunningProcess("/usr/bin/Xvfb", ["-displayfd", "1", "-screen", "0", "64x64x24", "-nolisten", "tcp"])
            try await process.wait(seconds: 60, for: "Xvfb to name its display") { $0.stdout.hasSuffix("\n") }
            display = ":" + process.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        func run(_ program: String, _ arguments: [String], stdin: Data? = nil) async throws -> ProcessResult {
            try await Subprocess.run(program, arguments, stdin: stdin, environment: ["DISPLAY": display, "PATH": "/usr/bin:/bin"])
        }

        /// A copy with xclip (which stays, serving it, until another client takes the clipboard).
        func copy(_ data: Data, type: String) async throws {
            let result = try await run("/usr/bin/xclip", ["-selection", "clipboard", "-t", type, "-i"], stdin: data)
            #expect(result.status == 0, "\(result)")
        }

        func stop() async { _ = try? await process.stop() }
    }

    static let owner = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../scripts/clipboard-owner.py").standardizedFileURL.path

    static func next(_ events: inout AsyncStream<ClipboardEvent>.Iterator) async throws -> ClipboardEvent {
        guard let event = await events.next() else { throw TestFailure("the clipboard's events ended") }
        return event
    }

    @Test func targetsMapToTheKindsCarried() {
        #expect(ClipboardTargets.readable(from: ["TARGETS", "UTF8_STRING", "text/plain", "image/png", "application/x-foo"]).map(\.type)
            == ["text/plain;charset=utf-8", "image/png"])
        #expect(ClipboardTargets.readable(from: ["UTF8_STRING", "text/plain;charset=utf-8"]).map(\.target) == ["text/plain;charset=utf-8"])
        #expect(ClipboardTargets.readable(from: ["text/plain", "text/uri-list"]).map(\.type) == ["text/plain", "text/uri-list"])
        #expect(ClipboardTargets.offered(for: ["text/plain;charset=utf-8", "image/png", "x-evil"]).map(\.target) == ["text/plain;charset=utf-8", "UTF8_STRING", "image/png"])
    }

    @Test func copiesAreReadAndOffersAreServedLargeOnesInPieces() async throws {
        let server = try await Server()
        let clipboard = try X11Clipboard.connect(display: server.display, maximumSize: 8 << 20)
        defer { clipboard.close() }
        clipboard.read(true)
        var events = clipboard.events.makeAsyncIterator()

        // Another app copies text: read as UTF-8 text.
        try await server.copy(Data("héllo there".utf8), type: "UTF8_STRING")
        #expect(try await Self.next(&events) == .copied(forms: [ClipboardForm(type: "text/plain;charset=utf-8", bytes: Array("héllo there".utf8))], secret: false))

        // A 5 MiB picture: xclip sends it in pieces (INCR), read whole.
        let picture = (0..<(5 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 11) }
        try await server.copy(Data(picture), type: "image/png")
        #expect(try await Self.next(&events) == .copied(forms: [ClipboardForm(type: "image/png", bytes: picture)], secret: false))

        // Over the bound: not read.
        let small = try X11Clipboard.connect(display: server.display, maximumSize: 1000)
        defer { small.close() }
        small.read(true)
        var smallEvents = small.events.makeAsyncIterator()
        try await server.copy(Data(repeating: 1, count: 5000), type: "image/png")
        #expect(try await Self.next(&events) == .copied(forms: [ClipboardForm(type: "image/png", bytes: Array(repeating: 1, count: 5000))], secret: false))
        #expect(try await Self.next(&smallEvents) == .copied(forms: [], secret: false))
        // Gone before we offer (it would read what we offer, as any clipboard manager would).
        small.close()
        while let event = await smallEvents.next(), event != .disconnected {}

        // Offering another device's copy: xclip -o asks, and gets what we answer, when it asks.
        clipboard.offer(types: ["text/plain;charset=utf-8", "image/png"])
        let pasting = Task { try await server.run("/usr/bin/xclip", ["-selection", "clipboard", "-o"]) }
        guard case .pasteRequested(let request) = try await Self.next(&events) else { throw TestFailure("expected a paste request") }
        #expect(request.type == "text/plain;charset=utf-8")
        clipboard.answer(request, with: Array("from bravo".utf8))
        let pasted = try await pasting.value
        #expect(pasted.status == 0 && pasted.stdout == "from bravo", "\(pasted)")
        let targets = try await server.run("/usr/bin/xclip", ["-selection", "clipboard", "-o", "-t", "TARGETS"])
        #expect(targets.stdout.split(separator: "\n").sorted() == ["TARGETS", "TIMESTAMP", "UTF8_STRING", "image/png", "text/plain;charset=utf-8"], "\(targets)")

        // A large answer goes in pieces; a refused one gives the app nothing at once.
        let large = try RunningProcess(
            "/usr/bin/xclip", ["-selection", "clipboard", "-o", "-t", "image/png"], environment: ["DISPLAY": server.display, "PATH": "/usr/bin:/bin"]
        )
        guard case .pasteRequested(let pictureRequest) = try await Self.next(&events) else { throw TestFailure("expected a paste request") }
        clipboard.answer(pictureRequest, with: picture)
        #expect(await large.exitStatus() == 0, "\(large.stderr)")
        #expect(FileManager.default.contents(atPath: large.stdoutPath) == Data(picture), "byte for byte")
        let refused = Task { try await server.run("/usr/bin/xclip", ["-selection", "clipboard", "-o"]) }
        guard case .pasteRequested(let refusedRequest) = try await Self.next(&events) else { throw TestFailure("expected a paste request") }
        clipboard.answer(refusedRequest, with: nil)
        #expect(try await refused.value.status != 0)

        // Another app copies: our offer ends, and its copy is read.
        try await server.copy(Data("mine".utf8), type: "UTF8_STRING")
        #expect(try await Self.next(&events) == .offerEnded)
        #expect(try await Self.next(&events) == .copied(forms: [ClipboardForm(type: "text/plain;charset=utf-8", bytes: Array("mine".utf8))], secret: false))
        await server.stop()
    }

    @Test func aPasswordManagersCopyIsNotRead() async throws {
        let server = try await Server()
        let clipboard = try X11Clipboard.connect(display: server.display, maximumSize: 1 << 20)
        defer { clipboard.close() }
        var events = clipboard.events.makeAsyncIterator()
        // Not reading (the clipboard is off): a copy is not looked at.
        try await server.copy(Data("unseen".utf8), type: "UTF8_STRING")
        #expect(try await Self.next(&events) == .notRead)
        clipboard.read(true)
        // A picture first, in pieces, as in the agent's life.
        let picture = [UInt8](repeating: 9, count: 900 << 10)
        try await server.copy(Data(picture), type: "image/png")
        #expect(try await Self.next(&events) == .copied(forms: [ClipboardForm(type: "image/png", bytes: picture)], secret: false))
        for (hint, secret) in [("secret", true), ("public", false)] {
            let owner = try RunningProcess("/usr/bin/python3", [Self.owner, "UTF8_STRING=hunter2", "x-kde-passwordManagerHint=\(hint)"], environment: ["DISPLAY": server.display])
            try await owner.wait(for: "the owner to take the clipboard") { $0.stdout.contains("owned") }
            let expected: ClipboardEvent = secret
                ? .copied(forms: [], secret: true) : .copied(forms: [ClipboardForm(type: "text/plain;charset=utf-8", bytes: Array("hunter2".utf8))], secret: false)
            var event = try await Self.next(&events)
            // The previous owner quitting emptied the clipboard first.
            if event == .copied(forms: [], secret: false) { event = try await Self.next(&events) }
            #expect(event == expected, "hint \(hint)")
            _ = try await owner.stop()
        }
        let concealed = try RunningProcess(
            "/usr/bin/python3", [Self.owner, "UTF8_STRING=hunter2", "application/x-nspasteboard-concealed-type=1"], environment: ["DISPLAY": server.display]
        )
        try await concealed.wait(for: "the owner to take the clipboard") { $0.stdout.contains("owned") }
        var event = try await Self.next(&events)
        if event == .copied(forms: [], secret: false) { event = try await Self.next(&events) }
        #expect(event == .copied(forms: [], secret: true))
        _ = try await concealed.stop()
        await server.stop()
    }
}
