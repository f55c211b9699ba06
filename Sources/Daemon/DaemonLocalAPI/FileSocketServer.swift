#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonCore
import DaemonStreams
import HandoffAPI
import HandoffSystem
import Logging
import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The file socket (`FileStreamSocket`): continuation streams whose app end is a file that
/// handoffctl hands us, so that the bytes go from the file straight into TLS (or back) instead of
/// through handoffctl and a Unix socket — on a 2-core machine that extra process and hop were a
/// quarter of a stream's CPU.
///
/// NIO cannot receive descriptors (SCM_RIGHTS), so connections are accepted here with accept(2)
/// and recvmsg(2) on a thread of our own; each then becomes a NIO channel that carries the replies
/// and, by closing, tells us the client left. Owner-only like the API socket: mode 0600 and the
/// peer's credentials checked before anything else.
final class FileSocketServer: Sendable {
    let path: String
    private let listening: Int32
    private let streams: StreamRoutes
    private let logger: Logger
    private let acceptor: BlockingThread
    /// Connections with their request read, for `serveAll`.
    private let accepted: AsyncStream<Accepted>

    /// Binds and listens; accepting starts at once. The caller has made sure no other daemon
    /// owns the directory (the API socket's check), so a socket file found here is stale.
    /// `requestTimeout`: how long a client may take to send its request after connecting.
    init(path: String, streams: StreamRoutes, requestTimeout: Duration, logger: Logger) throws(DaemonError) {
        self.path = path
        self.streams = streams
        self.logger = logger
        var st = stat()
        if lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFSOCK { unlink(path) }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            throw DaemonError(.socket, "cannot create the file socket", cause: SystemCallError(call: "socket", errno: errno))
        }
        // Like the API socket: its directory is 0700 and ours (checked by LocalAPIServer), so no
        // one else can reach it before the chmod below.
        guard let bound = UnixSocketAddress.with(path, { bind(fd, $0, $1) }) else {
            close(fd)
            throw DaemonError(.socket, "the file socket path \(path) is too long for a Unix socket; give a shorter --socket")
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            let e = errno
            close(fd)
            throw DaemonError(.socket, "cannot listen on \(path)", cause: SystemCallError(call: "bind/listen", errno: e))
        }
        guard chmod(path, 0o600) == 0 else {
            let e = errno
            close(fd)
            unlink(path)
            throw DaemonError(.socket, "cannot restrict \(path) to its owner", cause: SystemCallError(call: "chmod", errno: e))
        }
        listening = fd
        // Requests read but not yet taken up by `serveAll` (which takes each at once): a few
        // waiting is plenty. One that cannot wait — too many, or the server stopping — is closed,
        // with the file that came with it; its client sees the connection end.
        let (accepted, intake) = AsyncStream.makeStream(of: Accepted.self, bufferingPolicy: .bufferingOldest(64))
        self.accepted = accepted
        let serve: @Sendable (Accepted) -> Void = { connection in
            guard case .enqueued = intake.yield(connection) else {
                close(connection.connection)
                if connection.passed >= 0 { close(connection.passed) }
                return
            }
        }
        let daemonUID = streams.daemonUID
        // At least a microsecond: a zero timeval would mean no timeout at all.
        let micros = max(1, min(Int64(requestTimeout.components.seconds), 86_400) * 1_000_000 + requestTimeout.components.attoseconds / 1_000_000_000_000)
        let timeout = timeval(tv_sec: Int(micros / 1_000_000), tv_usec: Int(micros % 1_000_000))
        acceptor = BlockingThread(name: "handoff-files") {
            FileSocketServer.acceptLoop(fd, daemonUID: daemonUID, requestTimeout: timeout, serve: serve)
            intake.finish()
        }
        logger.info("file socket listening", metadata: ["socket": "\(path)"])
    }

    /// Serves each connection as it is accepted, until `stop` (or cancellation).
    func serveAll() async {
        let (streams, logger) = (self.streams, self.logger)
        await withDiscardingTaskGroup { group in
            for await connection in accepted {
                group.addTask { await FileSocketServer.serve(connection, streams: streams, logger: logger) }
            }
        }
    }

    /// Stops accepting (streams already started go on) and removes the socket file.
    func stop() {
        // Wakes the accept(2) the thread is blocked in; it then ends.
        shutdown(listening, Int32(SHUT_RDWR))
        acceptor.join()
        Glibc.close(listening)
        unlink(path)
    }

    /// A connection with its request read, before it becomes a channel.
    struct Accepted: Sendable {
        var connection: Int32
        var peer: PeerCredentials
        var request: [UInt8]
        /// The descriptor that came with the request: -1 none, -2 more than one (none kept).
        var passed: Int32
    }

    private static func acceptLoop(_ listening: Int32, daemonUID: UInt32, requestTimeout: timeval, serve: @escaping @Sendable (Accepted) -> Void) {
        let reading = Mutex(0)
        while true {
            // (accept4 is _GNU_SOURCE only; children are started with every descriptor closed anyway.)
            let connection = SystemCall.retrying { accept(listening, nil, nil) }
            if connection >= 0 { _ = fcntl(connection, F_SETFD, FD_CLOEXEC) }
            if connection < 0 {
                switch errno {
                case ECONNABORTED: continue
                case EINVAL, EBADF:
                    return  // shut down (`stop`)
                default:
                    // EMFILE, ENFILE, ENOBUFS, ENOMEM, or a network error passed on by accept(2):
                    // the connection waits in the backlog (or is gone); trying again at once would spin.
                    usleep(100_000)
                    continue
                }
            }
            guard let peer = LinuxCalls.peer(of: connection) else {
                close(connection)
                continue
            }
            // Someone else's request (and file) is not even read: `serve` answers "forbidden".
            guard (try? peer.authorize(daemonUID: daemonUID)) != nil else {
                serve(Accepted(connection: connection, peer: peer, request: [], passed: -1))
                continue
            }
            // Each request is read on a thread of its own: a client that connects and says
            // nothing holds up no one else (for at most `requestTimeout`, itself). At most
            // `maximumReading` at once: a burst of silent connections costs a bounded number of
            // threads; one more is told so.
            let admitted = reading.withLock { n -> Bool in
                guard n < maximumReading else { return false }
                n += 1
                return true
            }
            guard admitted else {
                turnAway(connection)
                continue
            }
            let started = BlockingThread.detach(name: "handoff-request") {
                let (request, passed) = readRequest(connection, timeout: requestTimeout)
                reading.withLock { $0 -= 1 }
                serve(Accepted(connection: connection, peer: peer, request: request, passed: passed))
            }
            // At the thread limit: this client is turned away (it sees the connection close).
            if !started {
                reading.withLock { $0 -= 1 }
                close(connection)
            }
        }
    }

    /// Requests read at once, each on a thread of its own (`acceptLoop`).
    static let maximumReading = 32

    /// Too many requests are being read: the client is told so (one `FileStreamReply` line, as
    /// any refusal), without a thread, and the connection closed.
    private static func turnAway(_ connection: Int32) {
        let reply = FileStreamReply(
            error: APIErrorBody(code: .rateLimited, message: "handoffd is reading \(maximumReading) file requests already; try again in a moment")
        )
        var line = (try? LocalAPIJSON.encoder().encode(reply)).map { Array($0) } ?? []
        line.append(UInt8(ascii: "\n"))
        _ = line.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
        close(connection)
    }

    /// The request line and the descriptor that came with it: -1 none, -2 more than one (none kept).
    private static func readRequest(_ connection: Int32, timeout: timeval) -> ([UInt8], Int32) {
        var timeout = timeout
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var request = [UInt8](repeating: 0, count: FileStreamSocket.maximumRequest)
        var passed: Int32 = -1
        var length = 0
        // The descriptor comes with the request's first bytes; the line may take more reads.
        while length < request.count, !request[0..<length].contains(UInt8(ascii: "\n")) {
            let (n, descriptor) = request.withUnsafeMutableBytes { raw in
                LinuxCalls.receive(into: UnsafeMutableRawBufferPointer(rebasing: raw[length...]), on: connection)
            }
            if descriptor >= 0, passed == -1 {
                passed = descriptor
            } else if descriptor != -1 {
                // More than one: none is kept.
                if descriptor >= 0 { close(descriptor) }
                if passed >= 0 { close(passed) }
                passed = -2
            }
            guard n > 0 else { break }
            length += n
        }
        request.removeLast(request.count - length)
        return (request, passed)
    }

    private static func serve(_ accepted: Accepted, streams: StreamRoutes, logger: Logger) async {
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .withConnectedSocket(accepted.connection).get()
        } catch {
            // Only a descriptor that is not a socket fails here. The connection is not closed:
            // NIO closes it itself when it fails after taking it, and a second close could hit a
            // descriptor opened since.
            logger.notice("file socket connection not served", metadata: ["error": "\(error)"])
            if accepted.passed >= 0 { close(accepted.passed) }
            return
        }
        do {
            let (file, path) = try open(accepted, daemonUID: streams.daemonUID)
            let prepared = try await streams.prepareStream(path: path[...], peer: accepted.peer)
            guard channel.isActive else {
                prepared.abandon()
                return
            }
            channel.writeAndFlush(FileStreamReply.line(FileStreamReply(stream: prepared.record.info), allocator: channel.allocator), promise: nil)
            prepared.splice(to: channel, file: file, logger: logger)
        } catch {
            let reply = FileStreamReply.line(FileStreamReply(error: error.body), allocator: channel.allocator)
            channel.writeAndFlush(reply).whenComplete { _ in channel.close(promise: nil) }
        }
    }

    /// The request's file and route, once the client may ask at all.
    private static func open(_ accepted: Accepted, daemonUID: UInt32) throws(LocalAPIError) -> (StreamFile, String) {
        var passed: Int32? = accepted.passed >= 0 ? accepted.passed : nil
        defer { if let passed { close(passed) } }
        try accepted.peer.authorize(daemonUID: daemonUID)
        guard let line = accepted.request.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).first,
            accepted.request.contains(UInt8(ascii: "\n"))
        else {
            throw LocalAPIError(.badRequest, "send one JSON line (a FileStreamRequest) with the file attached; see docs/local-api.md")
        }
        let request: FileStreamRequest
        do {
            request = try LocalAPIJSON.decoder().decode(FileStreamRequest.self, from: Data(line))
        } catch {
            let reason = (error as? DecodingError).map(DecodingErrorText.describe) ?? "not valid JSON"
            throw LocalAPIError(.badRequest, "the request is not a FileStreamRequest: \(reason)")
        }
        guard let descriptor = passed else {
            throw LocalAPIError(
                .badRequest, accepted.passed == -2 ? "attach exactly one file to the request, not several" : "attach the file to the request (SCM_RIGHTS)"
            )
        }
        passed = nil
        do throws(DaemonError) {
            return (try StreamFile(descriptor: descriptor, role: request.role), request.path)
        } catch {
            throw LocalAPIError(error)
        }
    }
}
