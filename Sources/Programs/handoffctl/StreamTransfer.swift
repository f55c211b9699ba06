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

/// What handoffctl does with a continuation stream, on either device: receive it into a file, send
/// a file (both handed to handoffd, which does the I/O), or run a command on its byte pipe. Each
/// ends with the stream's outcome from handoffd: a pipe ending is not proof that everything
/// arrived (a broken stream also ends it).
enum StreamTransfer {
    /// `continue --stream-to F|-`: receives until the other app finishes. A file appears under its
    /// name only if the stream completed: it is written beside it under a temporary name first.
    ///
    /// Files (and standard output when it is a file or /dev/null) are handed to handoffd, which
    /// writes them itself; a pipe or terminal on standard output gets the bytes through us.
    ///
    /// `progress`: show how far it is on stderr while it runs, if that is a terminal (never when
    /// the stream itself goes to standard output).
    static func receive(_ opening: LocalAPIStream, into destination: String, client: HandoffClient, progress: Bool) throws -> StreamInfo {
        if destination == "-" {
            if HandedOverFile.isAccepted(1) {
                return try outcome(of: client.fileStream(opening, file: 1, role: .receive))
            }
            return try receive(client.pipe(opening), toStandardOutputWith: client)
        }
        let (temporary, fd) = try temporaryFile(beside: destination)
        var kept = false
        defer {
            close(fd)
            if !kept { unlink(temporary) }
        }
        let stream = try client.fileStream(opening, file: fd, role: .receive)
        let shown = StreamProgress.show(stream.info.id, client: client, receiving: true, enabled: progress)
        let finished = Result { try outcome(of: stream) }
        shown?.stop()
        let info = try finished.get()
        var st = stat()
        guard fstat(fd, &st) == 0, Int64(st.st_size) == info.bytesReceived else {
            throw CLIError(.streamFailed, "\(destination) would hold other than the \(info.bytesReceived) bytes handoffd received; it was not written")
        }
        guard fsync(fd) == 0, rename(temporary, destination) == 0 else {
            throw CLIError(.streamFailed, "cannot put the stream in place at \(destination): \(SystemCall.describe(errno))")
        }
        kept = true
        return info
    }

    /// `clipboard paste` to standard output: all of it or nothing. What comes is held aside in an
    /// unlinked file (in $XDG_RUNTIME_DIR, else the temporary directory) and written out only
    /// once the stream completed — a stream cut short, or shorter than its copy announced
    /// (handoffd fails it), prints nothing.
    static func receiveWhole(_ opening: LocalAPIStream, client: HandoffClient) throws -> StreamInfo {
        let variables: [String] = ["XDG_RUNTIME_DIR", "TMPDIR"]
        let directory = variables.lazy.compactMap { (name: String) -> String? in getenv(name).map { String(cString: $0) } }.first { !$0.isEmpty } ?? "/tmp"
        // 0600 and unlinked at once: nobody else can open it while the paste is in it.
        var template = Array((directory + "/.handoff-paste-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw CLIError(.failure, "cannot make a file in \(directory) to hold the paste: \(SystemCall.describe(errno))") }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        defer { close(fd) }
        let info = try outcome(of: client.fileStream(opening, file: fd, role: .receive))
        guard lseek(fd, 0, SEEK_SET) == 0 else { throw CLIError(.streamFailed, "cannot read back the paste: \(SystemCall.describe(errno))") }
        if case .failure(let failure) = BytePump.copy(from: fd, to: 1) {
            throw CLIError(.streamFailed, "cannot write the paste to standard output: \(SystemCall.describe(failure.errno))")
        }
        return info
    }

    /// Into a pipe or terminal. Nothing goes the other way, but our side ends only once everything
    /// arrived: if the sending app hangs up early, our side still being open is what tells handoffd
    /// it was cut short.
    private static func receive(_ stream: StreamPipe, toStandardOutputWith client: HandoffClient) throws -> StreamInfo {
        let copied = BytePump.copy(from: stream.fileDescriptor, to: 1)
        stream.finishWriting()
        let info = try outcome(of: stream, client: client)
        if case .failure(let failure) = copied, !failure.reading {
            throw CLIError(.streamFailed, "cannot write the stream to standard output: \(SystemCall.describe(failure.errno))")
        }
        return info
    }

    /// `become-current --stream-file F`: sends the file (handoffd reads it itself when it is a
    /// regular file), then waits for the other app to finish; what it sends back is dropped.
    static func send(file path: String, streamID: UUID, client: HandoffClient, progress: Bool) throws -> StreamInfo {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let reason = SystemCall.describe(errno)
            // Taken and dropped at once, so that the other device hears now, not at a timeout.
            (try? client.pipe(.takeStream(streamID)))?.close()
            throw CLIError(.failure, "cannot read \(path): \(reason)")
        }
        defer { close(fd) }
        if HandedOverFile.isAccepted(fd) {
            let stream: FileStream
            do {
                stream = try client.fileStream(.takeStream(streamID), file: fd, role: .send)
            } catch {
                // Taken and dropped, so that the other device hears now, not at a timeout.
                (try? client.pipe(.takeStream(streamID)))?.close()
                throw error
            }
            let shown = StreamProgress.show(streamID, client: client, receiving: false, enabled: progress)
            defer { shown?.stop() }
            return try outcome(of: stream)
        }
        let stream = try client.pipe(.takeStream(streamID))
        let sent = BytePump.copy(from: fd, to: stream.fileDescriptor)
        stream.finishWriting()
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
            info = try client.send(.stream(stream.id, waitForOutcome: true))
        } catch {
            throw CLIError(.streamFailed, "cannot learn how stream \(stream.id.lowercasedString) ended: \(error.message)")
        }
        return try judge(info)
    }

    /// Waits for the outcome of a stream handoffd serves from or into a file; a failed stream is an error.
    static func outcome(of stream: FileStream) throws -> StreamInfo {
        let info: StreamInfo
        do {
            info = try stream.outcome()
        } catch {
            throw CLIError(.streamFailed, "cannot learn how stream \(stream.info.id.lowercasedString) ended: \(error.message)")
        }
        return try judge(info)
    }

    private static func judge(_ info: StreamInfo) throws -> StreamInfo {
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
            throw CLIError(.failure, "cannot create a file beside \(destination): \(SystemCall.describe(errno))")
        }
        // mkstemp makes it 0600; a received file gets the usual mode.
        let mask = umask(0)
        umask(mask)
        fchmod(fd, 0o666 & ~mask)
        return (String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self), fd)
    }
}
