import Foundation
import HandoffAPI
import HandoffClient
import HandoffDaemon
import HandoffModel
import HandoffSystem
import HandoffTestSupport
import Testing

/// Continuation streams whose app end is a file handed to handoffd on the file socket (what
/// `become-current --stream-file` and `continue --stream-to` use): the daemons read and write the
/// files themselves. Two daemons in this process, A originating, B resuming.
@Suite(.timeLimit(.minutes(3))) struct FileStreamTests {
    typealias Setup = ContinuationTests.StreamSetup

    /// B asks for a stream (with `open`, which waits until A's app takes it); A's app is told.
    static func requested(_ setup: Setup, open: @escaping @Sendable (UUID) async throws -> FileStream) async throws -> (UUID, Task<FileStream, any Error>) {
        let continuationID = setup.continuationID
        let opening = Task { try await open(continuationID) }
        let event = try await ContinuationTests.nextStreamRequest(setup.attachment)
        guard case .streamRequested(let streamID, _, _) = event.body else { throw TestFailure("expected streamRequested, got \(event)") }
        return (streamID, opening)
    }

    static func file(_ path: String, _ flags: Int32) throws -> Int32 {
        let fd = open(path, flags | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw TestFailure("cannot open \(path): \(String(cString: strerror(errno)))") }
        return fd
    }

    @Test func bothDaemonsDoTheFileIOThemselves() async throws {
        let setup = try await Setup.make()
        let (a, b) = (setup.a, setup.b)
        let dir = try TempDirectory.make(prefix: "handoff-files")
        defer { TempDirectory.remove(dir) }
        let payload = Data((0..<(5 << 20) + 12345).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ ($0 >> 13)) })
        try payload.write(to: URL(fileURLWithPath: dir + "/source"))
        let source = try Self.file(dir + "/source", O_RDONLY)
        // Out of the page cache: handoffd's reads on its event loop would wait, so its thread
        // reads (then the kernel's read-ahead lets the loop take over).
        #expect(fsync(source) == 0 && posix_fadvise(source, 0, 0, POSIX_FADV_DONTNEED) == 0)
        let target = try Self.file(dir + "/target", O_WRONLY | O_CREAT | O_TRUNC)
        defer {
            close(source)
            close(target)
        }

        let (streamID, opening) = try await Self.requested(setup) { try await b.client.fileStream(.openStream(continuationID: $0), file: target, role: .receive) }
        let sending = try await a.client.fileStream(.takeStream(streamID), file: source, role: .send)
        let receiving = try await opening.value
        #expect(sending.info.id == streamID && receiving.info.id == streamID)
        let there = try await sending.outcome()
        let here = try await receiving.outcome()
        #expect(there.state == .completed && here.state == .completed, "\(there) \(here)")
        #expect(there.bytesSent == Int64(payload.count) && here.bytesReceived == Int64(payload.count))
        #expect(here.bytesSent == 0 && there.bytesReceived == 0)
        #expect(FileManager.default.contents(atPath: dir + "/target") == payload)
        #expect(try await b.client.send(.stream(streamID)).state == .completed)
        for d in [a, b] { try await d.finish() }
    }

    /// B receives into `target`, A's app takes the stream as a byte pipe: (stream id, A's app, B's end).
    static func appToFile(_ setup: Setup, _ target: Int32) async throws -> (UUID, StreamPipe, FileStream) {
        let b = setup.b
        let (streamID, opening) = try await requested(setup) { try await b.client.fileStream(.openStream(continuationID: $0), file: target, role: .receive) }
        return (streamID, try await setup.a.client.pipe(.takeStream(streamID)), try await opening.value)
    }

    /// A file end that receives keeps its own direction open until everything arrived, so an
    /// originating app that hangs up early breaks the stream instead of ending it short. And
    /// handoffctl leaving (killed) while handoffd writes its file fails the stream on both devices.
    @Test func anAppHangingUpEarlyOrTheClientLeavingFailsTheStream() async throws {
        let setup = try await Setup.make()
        let (a, b) = (setup.a, setup.b)
        let dir = try TempDirectory.make(prefix: "handoff-files")
        defer { TempDirectory.remove(dir) }
        let target = try Self.file(dir + "/target", O_WRONLY | O_CREAT | O_TRUNC)
        defer { close(target) }
        let payload = Array(repeating: UInt8(42), count: 300_000)

        // In order: the app sends, says it is done, and sees the end of the (empty) other direction.
        var (streamID, app, receiving) = try await Self.appToFile(setup, target)
        try await app.write(payload)
        app.finishWriting()
        #expect(try await app.readToEnd().isEmpty)
        #expect(try await receiving.outcome().state == .completed)
        #expect(try await a.client.send(.stream(streamID, waitForOutcome: true)).state == .completed)

        // Cut short: the app closes without saying it is done.
        (streamID, app, receiving) = try await Self.appToFile(setup, target)
        try await app.write(payload)
        app.close()
        var here = try await receiving.outcome()
        var there = try await a.client.send(.stream(streamID, waitForOutcome: true))
        #expect(here.state == .failed && there.state == .failed, "app hung up: \(here) \(there)")

        // The client that handed over the file goes away.
        (streamID, app, receiving) = try await Self.appToFile(setup, target)
        try await app.write(payload)
        receiving.close()
        here = try await b.client.send(.stream(streamID, waitForOutcome: true))
        _ = try? await app.readToEnd()
        there = try await a.client.send(.stream(streamID, waitForOutcome: true))
        #expect(here.state == .failed && there.state == .failed, "client left: \(here) \(there)")
        app.close()
        for d in [a, b] { try await d.finish() }
    }

    @Test func whatTheFileSocketCannotServeIsRefusedClearly() async throws {
        let setup = try await Setup.make()
        let (a, b) = (setup.a, setup.b)
        let dir = try TempDirectory.make(prefix: "handoff-files")
        defer { TempDirectory.remove(dir) }
        let readOnly = try Self.file(dir + "/existing", O_RDONLY | O_CREAT)
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { [readOnly, ends[0], ends[1]].forEach { close($0) } }

        await expectFailure(.badRequest) { _ = try await b.client.fileStream(.openStream(continuationID: setup.continuationID), file: ends[1], role: .receive) }
        await expectFailure(.badRequest) { _ = try await b.client.fileStream(.openStream(continuationID: setup.continuationID), file: readOnly, role: .receive) }
        await expectFailure(.unknownContinuation) { _ = try await b.client.fileStream(.openStream(continuationID: UUID()), file: readOnly, role: .send) }
        await expectFailure(.unknownStream) { _ = try await a.client.fileStream(.takeStream(UUID()), file: readOnly, role: .send) }

        // Without a file, or with a request that is not one: an answer, not silence — even while
        // another client sits connected saying nothing (it has its request deadline, a minute on
        // the test daemons; nobody waits for it): the answers come while it is still connected.
        let socket = FileStreamSocket.path(forAPISocket: b.socketPath)
        let silent = try Self.connected(socket)
        defer { close(silent) }
        for line in [#"{"path":"/v1/streams/\#(UUID().uuidString)","role":"send"}"#, "GET / HTTP/1.1", #"{"path":1}"#] {
            let reply = try Self.rawExchange(socket, line + "\n")
            #expect(reply.error?.code == .badRequest, "\(line): \(reply)")
        }
        #expect(SocketProbe.isOpenAndSilent(silent), "the silent client was answered or closed first")
        var st = stat()
        #expect(stat(socket, &st) == 0 && st.st_mode & 0o777 == 0o600)
        for d in [a, b] { try await d.finish() }
    }

    /// One request without a descriptor, and the one reply line.
    static func rawExchange(_ path: String, _ request: String) throws -> FileStreamReply {
        let fd = try connected(path)
        defer { close(fd) }
        _ = Array(request.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var reply: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            reply += chunk[0..<n]
        }
        guard let line = reply.split(separator: UInt8(ascii: "\n")).first else { throw TestFailure("no reply") }
        return try JSONDecoder().decode(FileStreamReply.self, from: Data(line))
    }

    static func connected(_ path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let connected = UnixSocketAddress.with(path) { connect(fd, $0, $1) }
        guard connected == 0 else {
            close(fd)
            throw TestFailure("cannot connect to \(path)")
        }
        return fd
    }
}

extension FileStreamTests {
    /// Descriptors of this process open on files under `directory` (both daemons run in it).
    static func descriptors(under directory: String) -> [String] {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return fds.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)") }.filter { $0.hasPrefix(directory) }
    }

    /// A stream's files are closed when it ends, however it ends: nothing that outlives a stream
    /// (its record, the book, the channels' handlers) holds them. Seen: every file stream left its
    /// file open in both daemons, for ever (the ends and their channel contexts held each other).
    @Test func aStreamsFilesAreClosedWhenItEndsHoweverItEnds() async throws {
        let setup = try await Setup.make()
        let (a, b) = (setup.a, setup.b)
        let dir = try TempDirectory.make(prefix: "handoff-leak")
        defer { TempDirectory.remove(dir) }
        try Data(repeating: 7, count: 100_000).write(to: URL(fileURLWithPath: dir + "/small"))
        // Bigger than what the sockets between the daemons hold, so that a stream whose reader
        // stops is still under way when it is cut.
        let big = try Self.file(dir + "/big", O_WRONLY | O_CREAT | O_TRUNC)
        #expect(ftruncate(big, 64 << 20) == 0)
        close(big)

        // Completed: A sends a file, B writes one.
        for i in 0..<200 {
            let source = try Self.file(dir + "/small", O_RDONLY)
            let target = try Self.file(dir + "/target\(i % 4)", O_WRONLY | O_CREAT | O_TRUNC)
            let (streamID, opening) = try await Self.requested(setup) { try await b.client.fileStream(.openStream(continuationID: $0), file: target, role: .receive) }
            let sending = try await a.client.fileStream(.takeStream(streamID), file: source, role: .send)
            let receiving = try await opening.value
            close(source)
            close(target)
            let (there, here) = (try await sending.outcome(), try await receiving.outcome())
            #expect(there.state == .completed && here.state == .completed, "stream \(i): \(there) \(here)")
            sending.close()
            receiving.close()
        }

        // Cut midway, by each of the four ends.
        for round in 0..<10 {
            // B writes a file, A's app sends through a pipe: B's client leaves, then A's app does.
            for cutByReceiver in [true, false] {
                let target = try Self.file(dir + "/cut", O_WRONLY | O_CREAT | O_TRUNC)
                let (streamID, app, receiving) = try await Self.appToFile(setup, target)
                close(target)
                try await app.write(Array(repeating: 1, count: 200_000))
                if cutByReceiver { receiving.close() } else { app.close() }
                #expect(try await b.client.send(.stream(streamID, waitForOutcome: true)).state == .failed, "round \(round)")
                #expect(try await a.client.send(.stream(streamID, waitForOutcome: true)).state == .failed, "round \(round)")
                app.close()
                receiving.close()
            }
            // A sends a file, B's app reads a pipe and stops: A's client leaves, then B's app does.
            for cutBySender in [true, false] {
                let source = try Self.file(dir + "/big", O_RDONLY)
                let (b, continuationID) = (setup.b, setup.continuationID)
                let opening = Task { try await b.client.pipe(.openStream(continuationID: continuationID)) }
                let event = try await ContinuationTests.nextStreamRequest(setup.attachment)
                guard case .streamRequested(let streamID, _, _) = event.body else { throw TestFailure("expected streamRequested, got \(event)") }
                let sending = try await a.client.fileStream(.takeStream(streamID), file: source, role: .send)
                close(source)
                let reader = try await opening.value
                _ = try await reader.read(maximum: 1000)
                try await waitUntil("A to have sent part of the file") { try await a.client.send(.stream(streamID)).bytesSent > 1_000_000 }
                if cutBySender { sending.close() } else { reader.close() }
                #expect(try await a.client.send(.stream(streamID, waitForOutcome: true)).state == .failed, "round \(round)")
                #expect(try await b.client.send(.stream(streamID, waitForOutcome: true)).state == .failed, "round \(round)")
                sending.close()
                reader.close()
            }
        }
        // A file is closed on a thread of its own (a close may wait on NFS): moments later.
        try await waitUntil("every file of every stream closed") { Self.descriptors(under: dir).isEmpty }
        for d in [a, b] { try await d.finish() }
    }
}
