#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffClient
import HandoffModel
import HandoffSystem

#if canImport(Glibc)
import Glibc
#endif

/// What handoffctl does with a continuation stream's byte pipe, on either device: receive it into a
/// file, send a file, or run a command on it. Each ends by asking handoffd for the stream's
/// outcome: the pipe ending is not proof that everything arrived (a broken stream also ends it).
enum StreamTransfer {
    /// `continue --stream-to F|-`: receives until the other app finishes. A file appears under its
    /// name only if the stream completed: it is written beside it under a temporary name first.
    ///
    /// Nothing goes the other way, but our side ends only once everything arrived: if the sending
    /// app hangs up early, our side still being open is what tells handoffd it was cut short.
    static func receive(_ stream: StreamPipe, into destination: String, client: HandoffClient) throws -> StreamInfo {
        if destination == "-" {
            let copied = BytePump.copy(from: stream.fileDescriptor, to: 1)
            stream.finishWriting()
            let info = try outcome(of: stream, client: client)
            if case .failure(let failure) = copied, !failure.reading {
                throw CLIError(.streamFailed, "cannot write the stream to standard output: \(String(cString: strerror(failure.errno)))")
            }
            return info
        }
        let (temporary, fd) = try temporaryFile(beside: destination)
        var kept = false
        defer {
            close(fd)
            if !kept { unlink(temporary) }
        }
        let copied = BytePump.copy(from: stream.fileDescriptor, to: fd)
        stream.finishWriting()
        if case .failure(let failure) = copied, !failure.reading {
            stream.close()
            _ = try? client.stream(stream.id, waitForOutcome: true)
            throw CLIError(.streamFailed, "cannot write \(destination): \(String(cString: strerror(failure.errno))); nothing was kept")
        }
        let info = try outcome(of: stream, client: client)
        guard case .success(let count) = copied, count == info.bytesReceived else {
            throw CLIError(.streamFailed, "the stream ended short of what handoffd received; \(destination) was not written")
        }
        guard fsync(fd) == 0, rename(temporary, destination) == 0 else {
            throw CLIError(.streamFailed, "cannot put the stream in place at \(destination): \(String(cString: strerror(errno)))")
        }
        kept = true
        return info
    }

    /// `become-current --stream-file F`: sends the file, then waits for the other app to finish.
    static func send(file path: String, on stream: StreamPipe, client: HandoffClient) throws -> StreamInfo {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            stream.close()
            throw CLIError(.failure, "cannot read \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        let sent = BytePump.sendFile(fd, to: stream.fileDescriptor)
        stream.finishWriting()
        // What comes back is not ours to keep; reading it lets the stream end in order.
        BytePump.drain(stream.fileDescriptor)
        let info = try outcome(of: stream, client: client)
        if case .failure(let failure) = sent, info.state != .failed {
            throw CLIError(.streamFailed, "cannot send \(path): \(failure)")
        }
        return info
    }

    /// `--stream-exec CMD` on either device: `/bin/sh -c CMD` reads the stream on its standard
    /// input and writes to it on its standard output. Through pipes, so that the command closing
    /// its output (or exiting) ends our direction while it still reads.
    static func exec(_ command: String, on stream: StreamPipe, client: HandoffClient) throws -> StreamInfo {
        let started: ShellCommand.Started
        do {
            started = try ShellCommand.start(command, pipeInput: true, pipeOutput: true)
        } catch {
            stream.close()
            throw error
        }
        let pid = started.pid
        let socket = stream.fileDescriptor
        let (input, output) = (started.input!, started.output!)
        // Stream → command. A command that stops reading early does not stall the stream: the
        // rest is read and dropped.
        let inbound = BlockingThread {
            if case .failure(let failure) = BytePump.copy(from: socket, to: input), !failure.reading {
                BytePump.drain(socket)
            }
            close(input)
        }
        // Command → stream; its end is the stream's end in this direction.
        _ = BytePump.copy(from: output, to: socket)
        close(output)
        stream.finishWriting()
        let ended = ChildProcess.wait(pid)
        inbound.join()
        let info = try outcome(of: stream, client: client)
        if ended != .exited(0), info.state == .completed {
            throw CLIError(.failure, "\(displayQuoted(command)) \(ended)")
        }
        return info
    }

    /// Closes the pipe and asks handoffd how the stream ended; a failed stream is an error.
    static func outcome(of stream: StreamPipe, client: HandoffClient) throws -> StreamInfo {
        stream.close()
        let info: StreamInfo
        do {
            info = try client.stream(stream.id, waitForOutcome: true)
        } catch {
            throw CLIError(.streamFailed, "cannot learn how stream \(stream.id.lowercasedString) ended: \(error.message)")
        }
        switch info.state {
        case .completed:
            return info
        case .failed:
            throw CLIError(.streamFailed, "the stream failed: \(safe(info.error ?? "no reason given"))")
        case .pending, .open:
            throw CLIError(.streamFailed, "the stream did not end in order within 10 seconds")
        }
    }

    private static func temporaryFile(beside destination: String) throws -> (String, Int32) {
        let slash = destination.lastIndex(of: "/")
        let directory = slash.map { String(destination[...$0]) } ?? ""
        let name = slash.map { String(destination[destination.index(after: $0)...]) } ?? destination
        guard !name.isEmpty else { throw CLIError(.badValueSyntax, "--stream-to \(destination) names a directory; give a file name") }
        var template = Array((directory + "." + name + ".handoff-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else {
            throw CLIError(.failure, "cannot create a file beside \(destination): \(String(cString: strerror(errno)))")
        }
        // mkstemp makes it 0600; a received file gets the usual mode.
        let mask = umask(0)
        umask(mask)
        fchmod(fd, 0o666 & ~mask)
        return (String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self), fd)
    }
}
