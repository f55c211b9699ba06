#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffClient
import HandoffModel
import HandoffSystem
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A copy's list of files and links (`text/uri-list`, RFC 2483 as docs/clipboard.md has it):
/// one URI a line, lines ending in CRLF, `#` starting a comment. Its files are those of its
/// `file:` URIs on this computer (`file:///path`, or `file://localhost/path`); each is named by
/// its place among the list's URIs (`ClipboardNotice.fileForm`).
package enum FileList {
    /// The URIs, in order: at most `ClipboardNotice.maximumFiles` (what a paste can name; a
    /// longer list from another device is cut there, before more is held).
    package static func uris(_ bytes: [UInt8]) -> [String] {
        var uris: [String] = []
        var start = 0
        while start < bytes.count, uris.count < ClipboardNotice.maximumFiles {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
            var line = bytes[start..<end]
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            if !line.isEmpty, line.first != UInt8(ascii: "#") { uris.append(String(decoding: line, as: UTF8.self)) }
            start = end + 1
        }
        return uris
    }

    /// The list of `uris`, as apps read it.
    package static func text(_ uris: [String]) -> [UInt8] {
        Array(uris.map { $0 + "\r\n" }.joined().utf8)
    }

    /// The local path a `file:` URI names; nil for any other URI, or a file on another host.
    package static func path(of uri: String) -> String? {
        let rest: Substring
        if uri.hasPrefix("file:///") {
            rest = uri.dropFirst("file://".count)
        } else if uri.hasPrefix("file://localhost/") {
            rest = uri.dropFirst("file://localhost".count)
        } else {
            return nil
        }
        var bytes: [UInt8] = []
        var i = rest.utf8.startIndex
        let utf8 = rest.utf8
        while i < utf8.endIndex {
            let b = utf8[i]
            if b == UInt8(ascii: "%") {
                let j = utf8.index(after: i)
                guard j < utf8.endIndex, utf8.index(after: j) < utf8.endIndex,
                    let value = UInt8(String(decoding: utf8[j...utf8.index(after: j)], as: UTF8.self), radix: 16)
                else { return nil }
                bytes.append(value)
                i = utf8.index(j, offsetBy: 2)
            } else {
                bytes.append(b)
                i = utf8.index(after: i)
            }
        }
        guard !bytes.contains(0), let path = String(validating: bytes, as: UTF8.self) else { return nil }
        return path
    }

    /// The `file:` URI of a local path: every byte but unreserved characters and `/` escaped.
    package static func uri(of path: String) -> String {
        "file://" + path.split(separator: "/", omittingEmptySubsequences: false).map { PathSegment.escape(String($0)) }.joined(separator: "/")
    }

    /// The name a file from another device is kept under: its name there, made safe here — no
    /// control or format characters, no leading dot (neither hidden nor taken for a partial
    /// file), at most 255 bytes with its extension.
    package static func keptName(of path: String) -> String {
        let safe = String(visible(path.split(separator: "/").last.map(String.init) ?? "").drop { $0 == "." })
        return safe.isEmpty ? "file" : FileKeeping.numbered(safe, 1)
    }

    /// `text` as part of a file name: a slash, control and format characters (bidi overrides)
    /// become `-`.
    package static func visible(_ text: String) -> String {
        String(text.unicodeScalars.map { $0 == "/" || [.control, .format].contains($0.properties.generalCategory) ? "-" : Character($0) })
    }

    /// Whether `uri` is a `file:` URI of any spelling (`FILE:/x`, `file:x`…): one not kept here
    /// must not reach an app, which would read it as a file of this computer.
    static func isFileURI(_ uri: String) -> Bool {
        uri.prefix(5).lowercased() == "file:"
    }

    /// Which entries of `uris` are regular files here, by their place: what another device may
    /// paste of this list.
    package static func files(_ uris: [String]) -> [Int: String] {
        var files: [Int: String] = [:]
        for (index, uri) in uris.prefix(ClipboardNotice.maximumFiles).enumerated() {
            guard let path = path(of: uri) else { continue }
            var st = stat()
            if stat(path, &st) == 0, st.st_mode & S_IFMT == S_IFREG { files[index] = path }
        }
        return files
    }
}

/// Pastes from another device's copy: a form into memory, for an app (`fetch`), or kept in
/// `Downloads/Handoff` (`HandoffPaths.received`) — a form, or one file of a file list — streamed
/// by handoffd into a hidden file beside where it goes, then put in place under its name (or
/// `name (2)`…) once it came whole. Nothing stays of a paste that failed. Each paste ends within
/// `timeout` and a second per MiB once its stream opened (then it is given up); the files of one
/// list take at most `max_size` bytes together.
package struct ClipboardKeeper: Sendable {
    package let client: HandoffClient
    /// The session's variables with HOME, PATH and XDG_CONFIG_HOME: where Downloads is, and what
    /// opens a file.
    package let environment: [String: String]
    package let timeout: Duration
    package let logger: Logger

    package init(client: HandoffClient, environment: [String: String], timeout: Duration, logger: Logger) {
        self.client = client
        self.environment = environment
        self.timeout = timeout
        self.logger = logger
    }

    package enum Kept: Sendable {
        case kept(path: String, bytes: Int64)
        case failed(String)
    }

    /// Set when what is being kept is no longer wanted (a newer copy came): the next file is not
    /// asked for.
    package final class Stop: Sendable {
        private let stopped = Mutex(false)
        var isSet: Bool { stopped.withLock { $0 } }
        func set() { stopped.withLock { $0 = true } }
    }

    /// Keeps form `form` of `copy` as `name`; at most `budget` bytes.
    package func keep(_ form: String, of copy: ClipboardCopy, as name: String, budget: Int64 = .max) async -> Kept {
        let directory = HandoffPaths.received(environment: environment)
        // Files: on the disk thread, never on a task's (a slow disk, a network mount).
        let opened = await DiskThread.shared.run { () -> Result<(String, Int32), FileKeeping.Failure> in
            if case .failure(let failure) = FileKeeping.makeDirectory(directory) { return .failure(failure) }
            let partial = directory + "/.clipboard-\(UUID().lowercasedString).part"
            let fd = SystemCall.retrying { open(partial, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600) }
            return fd >= 0 ? .success((partial, fd)) : .failure(.system(path: partial, errno: errno))
        }
        let (partial, fd): (String, Int32)
        switch opened {
        case .success(let pair): (partial, fd) = pair
        case .failure(let failure): return .failed(Self.describe(failure))
        }
        defer {
            // After a rename `partial` is gone; after a hard link (`FileKeeping.keep`) it stays.
            let drop: @Sendable () -> Void = {
                close(fd)
                unlink(partial)
            }
            if !BlockingThread.detach(name: "handoff-close", drop) { drop() }
        }
        let info: StreamInfo
        do throws(HandoffClientError) {
            let stream = try await client.fileStream(.pasteClipboard(copy.id, type: form), file: fd, role: .receive)
            let expected = stream.info.expectedBytes ?? 0
            guard expected <= budget else {
                stream.close()
                return .failed("over [clipboard] max_size for one copy's files together")
            }
            info = try await stream.outcome(withinSeconds: Int(timeout.components.seconds) + Int(expected >> 20))
        } catch {
            return .failed(error.message)
        }
        guard info.state == .completed else { return .failed(info.error ?? "the paste did not complete") }
        // Ended in order but short (a file that shrank there): not the copy.
        guard let expected = info.expectedBytes, info.bytesReceived == expected else {
            return .failed("\(info.bytesReceived) bytes came of \(info.expectedBytes.map(String.init) ?? "an unknown size")")
        }
        let put = await DiskThread.shared.run { () -> Result<String, FileKeeping.Failure> in
            guard fsync(fd) == 0 else { return .failure(.system(path: partial, errno: errno)) }
            return FileKeeping.keep(partial, as: name, in: directory)
        }
        switch put {
        case .success(let path):
            return .kept(path: path, bytes: expected)
        case .failure(let failure):
            return .failed(Self.describe(failure))
        }
    }

    /// Each file of a copy's file list `uris` kept here, and the list as it reads here: the
    /// files' URIs are those of the copies kept, links as they were; a file that did not come (a
    /// folder there, gone, cut short, over the budget) is left out, and so is any other `file:`
    /// URI. At most `budget` bytes together; stops before the next file once `stop` is set.
    func keepFiles(of copy: ClipboardCopy, uris: [String], budget: Int64, stop: Stop? = nil) async -> (list: [String], kept: Int, failures: [String]) {
        var local: [String] = []
        var kept = 0
        var left = budget
        var failures: [String] = []
        for (index, uri) in uris.prefix(ClipboardNotice.maximumFiles).enumerated() {
            guard let path = FileList.path(of: uri) else {
                if FileList.isFileURI(uri) { failures.append("a file URI this computer cannot read as its own") } else { local.append(uri) }
                continue
            }
            guard stop?.isSet != true else { break }
            switch await keep(ClipboardNotice.fileForm(index), of: copy, as: FileList.keptName(of: path), budget: left) {
            case .kept(let path, let bytes):
                local.append(FileList.uri(of: path))
                kept += 1
                left -= bytes
            case .failed(let reason):
                failures.append("\(FileList.keptName(of: path)): \(reason)")
            }
        }
        return (local, kept, failures)
    }

    package func fetch(_ type: String, of copy: ClipboardCopy) async -> [UInt8]? {
        guard let size = copy.items.first(where: { $0.type == type })?.size else { return nil }
        do throws(HandoffClientError) {
            let pipe = try await client.pipe(.pasteClipboard(copy.id, type: type))
            defer { pipe.close() }
            pipe.finishWriting()
            let deadline = timeout + .seconds(size >> 20)
            let bytes = try await withTaskGroup(of: Result<[UInt8], HandoffClientError>?.self) { group in
                group.addTask {
                    do throws(HandoffClientError) {
                        return .success(try await pipe.readToEnd(limit: Int(size)))
                    } catch {
                        return .failure(error)
                    }
                }
                group.addTask {
                    // Cuts the stream: the read ends at once, with what came.
                    if (try? await QuietSleep.sleep(for: deadline)) != nil { shutdown(pipe.fileDescriptor, Int32(SHUT_RDWR)) }
                    return nil
                }
                let first = await group.next() ?? nil
                group.cancelAll()
                if let first { return first }
                // The deadline came first: the read ends now, cut short.
                let cut = await group.next() ?? nil
                return cut ?? .success([])
            }.get()
            guard bytes.count == Int(size) else {
                logger.notice("a paste from another device came short", metadata: ["expected": "\(size)", "got": "\(bytes.count)"])
                return nil
            }
            logger.info("pasted from another device", metadata: ["device": "\(copy.peer?.name ?? "")", "bytes": "\(size)"])
            return bytes
        } catch {
            logger.notice("a paste from another device failed", metadata: ["error": "\(error)"])
            return nil
        }
    }

    package static func describe(_ failure: FileKeeping.Failure) -> String {
        switch failure {
        case .system(let path, let errno): "cannot write \(path): \(SystemCall.describe(errno))"
        case .crowded(let directory, let name): "\(directory) already holds 1000 files called \(name)"
        }
    }
}
