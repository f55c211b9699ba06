#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffSystem

#if canImport(Glibc)
import Glibc
#endif

/// A continuation stream whose end on this device is a file that handoffd reads or writes itself
/// (the file socket, `FileStreamSocket`): the file's descriptor is handed over, and this side only
/// waits for the outcome. Cheaper than a `StreamPipe` for a file: the bytes do not pass through
/// this process. Regular files and /dev/null only.
///
/// Closing it (or exiting) before the outcome came ends the stream as failed.
public final class FileStream: @unchecked Sendable {
    /// The stream as it opened.
    public let info: StreamInfo
    private let fd: Int32
    private var pending: [UInt8]
    private var closed = false

    init(socketPath: String, request: FileStreamRequest, file: Int32, timeoutSeconds: Int) throws(HandoffClientError) {
        let path = FileStreamSocket.path(forAPISocket: socketPath)
        let fd: Int32
        do {
            fd = try UnixHTTPConnection.connect(path)
        } catch where error.code == .daemonNotRunning {
            throw HandoffClientError(
                .daemonNotRunning,
                "handoffd has no file socket at \(path) (it answers on \(socketPath)): it is older than this handoffctl; restart it (systemctl --user restart handoffd)"
            )
        }
        self.fd = fd
        self.pending = []
        var line: [UInt8]
        do {
            line = Array(try LocalAPIJSON.encoder().encode(request))
        } catch {
            Glibc.close(fd)
            throw HandoffClientError(.protocolError, "cannot encode the request: \(error)")
        }
        line.append(UInt8(ascii: "\n"))
        let sent = line.withUnsafeBytes { LinuxCalls.send($0, attaching: file, on: fd) }
        guard sent == line.count else {
            let e = errno
            // Turned away before the request went (too many at once): its reply says why.
            var brief = timeval(tv_sec: 1, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &brief, socklen_t(MemoryLayout<timeval>.size))
            var unread: [UInt8] = []
            let said = try? Self.nextReply(fd, pending: &unread)
            Glibc.close(fd)
            if let failure = said?.error { throw HandoffClientError(.api(failure.code), failure.message) }
            throw HandoffClientError(.protocolError, "cannot hand the file to handoffd at \(path): \(SystemCall.describe(e))")
        }
        // Opening reaches the other device, which may take a TLS handshake or two.
        var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let first: FileStreamReply
        do throws(HandoffClientError) {
            first = try Self.nextReply(fd, pending: &pending)
        } catch {
            Glibc.close(fd)
            throw error
        }
        if let failure = first.error {
            Glibc.close(fd)
            throw HandoffClientError(.api(failure.code), failure.message)
        }
        guard let info = first.stream else {
            Glibc.close(fd)
            throw HandoffClientError(.protocolError, "handoffd's answer on the file socket names no stream; are handoffctl and handoffd the same version?")
        }
        self.info = info
    }

    deinit {
        close()
    }

    /// Gives up on the stream (if it has not ended yet, it fails).
    public func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
    }

    /// Waits for the stream to end — as long as it lasts, or at most `seconds` (then it is given
    /// up: it fails, and this throws `timeout`); its final state.
    public func outcome(withinSeconds seconds: Int = 0) throws(HandoffClientError) -> StreamInfo {
        var tv = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let last: FileStreamReply
        do throws(HandoffClientError) {
            last = try Self.nextReply(fd, pending: &pending)
        } catch where error.code == .timeout && seconds > 0 {
            close()
            throw HandoffClientError(.timeout, "the stream did not end within \(seconds) s; it was given up")
        }
        guard let info = last.stream, info.state.isFinal else {
            throw HandoffClientError(.protocolError, "handoffd ended the file stream without its outcome; are handoffctl and handoffd the same version?")
        }
        return info
    }

    private static func nextReply(_ fd: Int32, pending: inout [UInt8]) throws(HandoffClientError) -> FileStreamReply {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while !pending.contains(UInt8(ascii: "\n")) {
            let n = chunk.withUnsafeMutableBytes { raw in SystemCall.retrying { recv(fd, raw.baseAddress, raw.count, 0) } }
            if n < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                throw HandoffClientError(.timeout, "handoffd did not answer on the file socket in time")
            }
            guard n > 0 else {
                throw HandoffClientError(.protocolError, "handoffd closed the file stream without an answer (did it stop?)")
            }
            pending += chunk[0..<n]
        }
        let end = pending.firstIndex(of: UInt8(ascii: "\n"))!
        let line = Array(pending[..<end])
        pending.removeFirst(end + 1)
        do {
            return try LocalAPIJSON.decoder().decode(FileStreamReply.self, from: Data(line))
        } catch {
            throw HandoffClientError(.protocolError, "handoffd's answer on the file socket is not what this client expects; are both the same version?")
        }
    }
}
