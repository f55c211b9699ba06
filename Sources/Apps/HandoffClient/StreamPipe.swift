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

/// A continuation stream's byte pipe: the local-API connection after `101 Switching Protocols`,
/// joined by handoffd to the app on the other device. Plain blocking socket I/O, so it can also be
/// handed to another program as its stdin/stdout (`fileDescriptor`).
///
/// End of stream: `finishWriting()` tells the other app that nothing more comes (it reads
/// end-of-file) while this side keeps reading; `read` returning 0 means the other app finished.
/// Whether everything arrived both ways is the stream's outcome (`HandoffClient.stream(id,
/// waitForOutcome: true)`): a connection that breaks also ends in end-of-file or an error here.
public final class StreamPipe: @unchecked Sendable {
    public let id: UUID
    public let fileDescriptor: Int32
    private var closed = false

    init(id: UUID, connection: UnixHTTPConnection) {
        self.id = id
        self.fileDescriptor = connection.detachDescriptor()
    }

    deinit {
        close()
    }

    /// Reads up to `buffer.count` bytes; 0 at end of stream.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(HandoffClientError) -> Int {
        let n = SystemCall.retrying { recv(fileDescriptor, buffer.baseAddress, buffer.count, 0) }
        if n >= 0 { return n }
        throw HandoffClientError(.protocolError, "the stream broke: \(SystemCall.describe(errno))")
    }

    /// Up to `maximum` bytes; empty at end of stream.
    public func read(maximum: Int) throws(HandoffClientError) -> [UInt8] {
        var chunk = [UInt8](repeating: 0, count: maximum)
        let result = chunk.withUnsafeMutableBytes { raw in Result { () throws(HandoffClientError) in try read(into: raw) } }
        chunk.removeLast(maximum - (try result.get()))
        return chunk
    }

    public func write(_ bytes: UnsafeRawBufferPointer) throws(HandoffClientError) {
        var offset = 0
        while offset < bytes.count {
            let n = SystemCall.retrying { send(fileDescriptor, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                throw HandoffClientError(.protocolError, "the stream broke: \(SystemCall.describe(errno))")
            }
            offset += n
        }
    }

    public func write(_ bytes: [UInt8]) throws(HandoffClientError) {
        let failure = bytes.withUnsafeBytes { raw -> HandoffClientError? in
            do throws(HandoffClientError) {
                try write(raw)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
    }

    /// Nothing more will be written; reading goes on.
    public func finishWriting() {
        shutdown(fileDescriptor, Int32(SHUT_WR))
    }

    public func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fileDescriptor)
    }
}
