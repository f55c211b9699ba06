import HandoffAPI
import HandoffSystem

#if canImport(Glibc)
import Glibc
#endif

/// One HTTP/1.1 exchange over a Unix socket, with blocking I/O.
///
/// Blocking on purpose: a CLI call is one request and one answer, and an event loop would cost
/// start-up time for nothing. Only what the local API uses is supported: a request with an
/// optional body, and a response framed by Content-Length, chunked encoding, or connection close.
final class UnixHTTPConnection {
    let fd: Int32
    private var buffer: [UInt8] = []
    private var bufferStart = 0
    private let socketPath: String

    init(socketPath: String, timeoutSeconds: Int?) throws(HandoffClientError) {
        self.socketPath = socketPath
        let fd = try Self.connect(socketPath)
        self.fd = fd
        if let timeoutSeconds {
            var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        }
    }

    /// Over a descriptor someone else connected (`HandoffClient.readEventStream`); closed with us.
    init(connected fd: Int32, name: String) {
        self.socketPath = name
        self.fd = fd
    }

    deinit {
        close(fd)
    }

    /// Ends the connection both ways now (a reader blocked on it returns at once); the
    /// descriptor itself is closed with this object.
    func hangUp() {
        shutdown(fd, Int32(SHUT_RDWR))
    }

    /// A connected, blocking, close-on-exec Unix socket to a handoffd of this user; errors say
    /// what to do about them. Nothing is sent to a server run by anyone else (docs/security.md,
    /// "On the device"): the default directory must be this user's and private, and the process
    /// at the other end must be this user's.
    static func connect(_ socketPath: String) throws(HandoffClientError) -> Int32 {
        try checkDirectory(of: socketPath)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            throw HandoffClientError(.protocolError, "cannot create a socket: \(SystemCall.describe(errno))")
        }
        guard let rc = UnixSocketAddress.with(socketPath, { Glibc.connect(fd, $0, $1) }) else {
            close(fd)
            throw HandoffClientError(.daemonNotRunning, "the socket path \(socketPath) is too long for a Unix socket")
        }
        if rc != 0 {
            let e = errno
            close(fd)
            switch e {
            case ENOENT, ECONNREFUSED, ENOTDIR:
                throw HandoffClientError(
                    .daemonNotRunning,
                    "handoffd is not running (nothing answers on \(socketPath)); start it with `make run` or `systemctl --user start handoffd`"
                )
            case EACCES, EPERM:
                throw HandoffClientError(
                    .permissionDenied,
                    "permission denied on \(socketPath): that handoffd belongs to another user; run as its owner or use your own daemon"
                )
            default:
                throw HandoffClientError(
                    .daemonNotRunning,
                    "cannot connect to handoffd at \(socketPath): \(SystemCall.describe(e))"
                )
            }
        }
        guard let peer = LinuxCalls.peer(of: fd) else {
            let e = errno
            close(fd)
            throw HandoffClientError(.protocolError, "cannot tell who serves \(socketPath): \(SystemCall.describe(e))")
        }
        // Root may talk to any user's handoffd (it serves root too); its own default directory
        // is checked above.
        guard peer.uid == getuid() || getuid() == 0 else {
            close(fd)
            throw HandoffClientError(
                .permissionDenied,
                "\(socketPath) is served by another user (uid \(peer.uid)), not by your handoffd; nothing was sent. Start your own (make run, or systemctl --user start handoffd), or set XDG_RUNTIME_DIR"
            )
        }
        return fd
    }

    /// The directories handoffd makes for itself (`…/handoff`, and `/tmp/handoff-UID` when there
    /// is no runtime directory) must be this user's and closed to others: a directory someone
    /// else made first (in /tmp, anyone can) is theirs to listen in.
    static func checkDirectory(of socketPath: String) throws(HandoffClientError) {
        guard let slash = socketPath.lastIndex(of: "/"), slash != socketPath.startIndex else { return }
        var directory = socketPath[..<slash]
        while directory.count > 1, directory.last == "/" { directory = directory.dropLast() }  // "…/handoff//handoffd.sock"
        // Its last component (not `split`, whose array of substrings is one more generic type
        // for the runtime to build at each handoffctl start: docs/benchmarks.md, "handoffctl's
        // share of continue").
        let name = directory.lastIndex(of: "/").map { directory[directory.index(after: $0)...] } ?? directory
        // A --socket of the user's choosing is theirs to judge; so is a user's directory that root
        // was pointed at.
        guard name == "handoff-\(getuid())" || (name == "handoff" && getuid() != 0) else { return }
        var st = stat()
        guard lstat(String(directory), &st) == 0 else { return }  // absent: nothing listens there
        let isDirectory = st.st_mode & S_IFMT == S_IFDIR
        guard isDirectory, st.st_uid == getuid(), st.st_mode & 0o077 == 0 else {
            throw HandoffClientError(
                .permissionDenied,
                "\(directory) is not your private directory (owner uid \(st.st_uid), mode \(String(st.st_mode & 0o7777, radix: 8))): someone else may have made it to listen in; nothing was sent. Remove it (it is not yours: ask root) or set XDG_RUNTIME_DIR to a directory of yours"
            )
        }
    }

    /// An answer's status line and headers.
    struct Head {
        var status: Int
        /// Header names, lowercased, and beside them their values, trimmed: two arrays of
        /// strings rather than one of pairs, because handoffctl's start has already made the Swift
        /// runtime build `[String]`'s type, and a pair's array would be one type more to build
        /// (docs/benchmarks.md, "handoffctl's share of continue").
        private var names: [String] = []
        private var values: [String] = []

        init(status: Int) {
            self.status = status
        }

        mutating func add(_ name: String, _ value: String) {
            names.append(name)
            values.append(value)
        }

        /// The first value of a header, by its lowercased name.
        func header(_ name: String) -> String? {
            names.firstIndex(of: name).map { values[$0] }
        }

        var isChunked: Bool { header("transfer-encoding")?.lowercased().contains("chunked") == true }
        var contentLength: Int? { header("content-length").flatMap { Int($0) } }
    }

    struct Response {
        var head: Head
        var body: [UInt8]

        var status: Int { head.status }
        func header(_ name: String) -> String? { head.header(name) }
    }

    func send(method: String, path: String, body: [UInt8]?, upgrade: String? = nil) throws(HandoffClientError) {
        // Bytes from the start, in one buffer of the right size: a string grown piece by piece
        // frees its outgrown storage, whose first release makes the runtime build a type.
        var request: [UInt8] = []
        request.reserveCapacity(256 + path.utf8.count + (body?.count ?? 0))
        func add(_ text: String) { request.append(contentsOf: text.utf8) }
        add(method)
        add(" ")
        add(path)
        add(" HTTP/1.1\r\nHost: handoffd\r\nUser-Agent: handoff/")
        add(HandoffVersion.current)
        add("\r\n")
        if let upgrade {
            add("Connection: Upgrade\r\nUpgrade: ")
            add(upgrade)
            add("\r\n")
        } else {
            add("Connection: close\r\n")
        }
        if let body {
            add("Content-Type: application/json\r\nContent-Length: ")
            add(String(body.count))
            add("\r\n\r\n")
            request.append(contentsOf: body)
        } else {
            add("\r\n")
        }
        // A request that asks to become a stream reads its answer head byte by byte, from nothing
        // buffered: an early answer is not looked for then.
        try writeAll(request, answerMayComeEarly: upgrade == nil)
    }

    /// Reads the status line and headers; the body is read by `readBody` or streamed by `nextChunkLine`.
    func readHead() throws(HandoffClientError) -> Head {
        let statusLine = try readLine()
        guard let status = Self.status(of: statusLine) else {
            throw HandoffClientError(.protocolError, "\(socketPath) does not speak the handoff local API (got \(statusLine.prefix(40)))")
        }
        var head = Head(status: status)
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: ":") else { continue }
            head.add(line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingSpaces())
        }
        return head
    }

    /// The status of `HTTP/1.x NNN reason`, or nil. Read by hand: `split` would make the runtime
    /// build `[Substring]`'s type at each handoffctl start (docs/benchmarks.md, "handoffctl's
    /// share of continue").
    static func status(of line: String) -> Int? {
        let bytes = line.utf8
        guard bytes.starts(with: "HTTP/1.".utf8) else { return nil }
        guard let space = bytes.firstIndex(of: 0x20) else { return nil }
        let code = bytes[bytes.index(after: space)...].prefix { $0 != 0x20 }
        guard code.count == 3, code.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return code.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    /// Reads the head one byte at a time, so that nothing after it is taken from the socket (a
    /// stream's bytes, for the program the socket is handed to).
    func readHeadExactly() throws(HandoffClientError) -> Head {
        precondition(bufferStart == buffer.count, "bytes already buffered")
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while !(head.count >= 4 && head.suffix(4).elementsEqual([0x0D, 0x0A, 0x0D, 0x0A])) {
            guard head.count < 64 * 1024 else { throw HandoffClientError(.protocolError, "handoffd sent an over-long answer head") }
            let n = SystemCall.retrying { recv(fd, &byte, 1, 0) }
            if n == 1 {
                head.append(byte)
            } else if n == 0 {
                throw HandoffClientError(.protocolError, "handoffd closed the connection mid-answer")
            } else {
                throw errno == EAGAIN || errno == EWOULDBLOCK
                    ? HandoffClientError(.timeout, "handoffd did not answer in time")
                    : HandoffClientError(.protocolError, "lost the connection to handoffd: \(SystemCall.describe(errno))")
            }
        }
        buffer = head
        bufferStart = 0
        let result = try readHead()
        buffer = []
        bufferStart = 0
        return result
    }

    /// Gives the socket to a `StreamPipe`: no timeouts from here on (a stream lasts as long as it lasts).
    func detachDescriptor() -> Int32 {
        var none = timeval(tv_sec: 0, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, socklen_t(MemoryLayout<timeval>.size))
        let copy = dup(fd)
        return copy
    }

    func readResponse(maximumBody: Int = 64 * 1024 * 1024) throws(HandoffClientError) -> Response {
        let head = try readHead()
        var body: [UInt8] = []
        if head.isChunked {
            while let chunk = try readChunk() {
                body += chunk
                guard body.count <= maximumBody else { throw oversized() }
            }
        } else if let length = head.contentLength {
            guard length <= maximumBody else { throw oversized() }
            body = try readExactly(length)
        } else {
            while let more = try readAvailable() {
                body += more
                guard body.count <= maximumBody else { throw oversized() }
            }
        }
        return Response(head: head, body: body)
    }

    private func oversized() -> HandoffClientError {
        HandoffClientError(.protocolError, "handoffd sent an answer larger than expected")
    }

    /// The next chunk of a chunked body, or nil at its end. With `endOnClose`, a connection closed
    /// between chunks also ends the body: an event stream ends that way when the daemon stops.
    func readChunk(endOnClose: Bool = false) throws(HandoffClientError) -> [UInt8]? {
        if endOnClose, bufferStart == buffer.count, try !fill() { return nil }
        let sizeLine = try readLine()
        let sizeText = sizeLine.split(separator: ";").first ?? ""
        guard let size = Int(sizeText.trimmingSpaces(), radix: 16), size >= 0 else {
            throw HandoffClientError(.protocolError, "handoffd sent a malformed chunk")
        }
        if size == 0 {
            while try !readLine().isEmpty {}  // trailers
            return nil
        }
        let data = try readExactly(size)
        guard try readLine().isEmpty else { throw HandoffClientError(.protocolError, "handoffd sent a malformed chunk") }
        return data
    }

    // MARK: Bytes

    func writeAll(_ bytes: [UInt8], answerMayComeEarly: Bool = true) throws(HandoffClientError) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw in SystemCall.retrying { Glibc.send(fd, raw.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) } }
            if n < 0 {
                let error = errno
                if error == EAGAIN || error == EWOULDBLOCK {
                    throw HandoffClientError(.timeout, "handoffd did not accept the request in time")
                }
                // handoffd stops reading a request it refuses (one far too large) and answers at
                // once: that answer, if it came, is what the caller reads next.
                if answerMayComeEarly, error == EPIPE || error == ECONNRESET, (try? fill()) == true { return }
                throw HandoffClientError(.protocolError, "lost the connection to handoffd: \(SystemCall.describe(error))")
            }
            offset += n
        }
    }

    /// More bytes from the socket, or nil at end of stream.
    func readAvailable() throws(HandoffClientError) -> [UInt8]? {
        if bufferStart < buffer.count {
            defer {
                buffer = []
                bufferStart = 0
            }
            return Array(buffer[bufferStart...])
        }
        let (chunk, n, error) = receive()
        if n > 0 { return chunk }
        if n == 0 { return nil }
        throw Self.receiveFailure(error)
    }

    private func fill() throws(HandoffClientError) -> Bool {
        if bufferStart > 0 {
            buffer.removeFirst(bufferStart)
            bufferStart = 0
        }
        let (chunk, n, error) = receive()
        if n > 0 {
            if buffer.isEmpty { buffer = chunk } else { buffer += chunk }
            return true
        }
        if n == 0 { return false }
        throw Self.receiveFailure(error)
    }

    /// Up to 64 KiB from the socket, recv's result, and its errno. The array is not zeroed first:
    /// only the pages recv writes are touched (zeroing all 64 KiB faulted in 16 pages per read).
    /// A short read is copied into an array of its size, so that a buffer kept for long (an
    /// event stream's) does not hold 64 KiB for a few bytes.
    private func receive() -> ([UInt8], Int, Int32) {
        var n = 0
        var error: Int32 = 0
        let chunk = [UInt8](unsafeUninitializedCapacity: 64 * 1024) { raw, count in
            n = SystemCall.retrying { recv(fd, raw.baseAddress!, raw.count, 0) }
            error = errno
            count = max(n, 0)
        }
        return (n > 0 && n < 16 * 1024 ? Array(chunk[..<n]) : chunk, n, error)
    }

    private static func receiveFailure(_ error: Int32) -> HandoffClientError {
        error == EAGAIN || error == EWOULDBLOCK
            ? HandoffClientError(.timeout, "handoffd did not answer in time")
            : HandoffClientError(.protocolError, "lost the connection to handoffd: \(SystemCall.describe(error))")
    }

    private func readLine() throws(HandoffClientError) -> String {
        while true {
            if let nl = buffer[bufferStart...].firstIndex(of: 0x0A) {
                var end = nl
                if end > bufferStart, buffer[end - 1] == 0x0D { end -= 1 }
                let line = String(decoding: buffer[bufferStart..<end], as: UTF8.self)
                bufferStart = nl + 1
                return line
            }
            guard buffer.count - bufferStart < 64 * 1024 else {
                throw HandoffClientError(.protocolError, "handoffd sent an over-long header line")
            }
            guard try fill() else {
                throw HandoffClientError(.protocolError, "handoffd closed the connection mid-answer")
            }
        }
    }

    private func readExactly(_ count: Int) throws(HandoffClientError) -> [UInt8] {
        while buffer.count - bufferStart < count {
            guard try fill() else {
                throw HandoffClientError(.protocolError, "handoffd closed the connection mid-answer")
            }
        }
        defer { bufferStart += count }
        return Array(buffer[bufferStart..<bufferStart + count])
    }
}

extension Substring {
    /// Without the spaces and tabs at either end. (Index loops on purpose: the generic
    /// `drop(while:).reversed()` spelling made the runtime build generic type metadata at each
    /// handoffctl start, a measurable share of it: docs/benchmarks.md, "Starting handoffctl".)
    func trimmingSpaces() -> String {
        var start = startIndex
        var end = endIndex
        while start < end, self[start] == " " || self[start] == "\t" { start = index(after: start) }
        while end > start, self[index(before: end)] == " " || self[index(before: end)] == "\t" { end = index(before: end) }
        return String(self[start..<end])
    }
}
