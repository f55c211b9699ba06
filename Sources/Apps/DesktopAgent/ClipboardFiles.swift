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

#if canImport(Glibc)
import Glibc
#endif

/// A copy's list of files and links (`text/uri-list`, RFC 2483 as docs/clipboard.md has it):
/// one URI a line, lines ending in CRLF, `#` starting a comment. Its files are those of its
/// `file:` URIs on this computer (`file:///path`, or `file://localhost/path`); each is named by
/// its place among the list's URIs (`ClipboardNotice.fileForm`).
package enum FileList {
    /// The URIs, in order.
    package static func uris(_ bytes: [UInt8]) -> [String] {
        String(decoding: bytes, as: UTF8.self).split(whereSeparator: { $0 == "\n" || $0 == "\r\n" }).map {
            $0.hasSuffix("\r") ? String($0.dropLast()) : String($0)
        }.filter { !$0.isEmpty && !$0.hasPrefix("#") }
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

    /// The name a file from another device is kept under: its name there, made safe here.
    package static func keptName(of path: String) -> String {
        let last = path.split(separator: "/").last.map(String.init) ?? ""
        let safe = String(last.unicodeScalars.map { $0.properties.generalCategory == .control ? "-" : Character($0) })
        return safe.isEmpty || safe == "." || safe == ".." ? "file" : safe
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
/// `name (2)`…) once it came whole. Nothing stays of a paste that failed.
struct ClipboardKeeper: Sendable {
    let client: HandoffClient
    /// The session's variables with HOME, PATH and XDG_CONFIG_HOME: where Downloads is, and what
    /// opens a file.
    let environment: [String: String]
    let logger: Logger

    enum Kept: Sendable {
        case kept(path: String)
        case failed(String)
    }

    func keep(_ form: String, of copy: ClipboardCopy, as name: String) async -> Kept {
        let directory = HandoffPaths.received(environment: environment)
        if case .failure(let failure) = FileKeeping.makeDirectory(directory) { return .failed(Self.describe(failure)) }
        let partial = directory + "/.clipboard-\(UUID().lowercasedString).part"
        let fd = SystemCall.retrying { open(partial, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600) }
        guard fd >= 0 else { return .failed("cannot write in \(directory): \(SystemCall.describe(errno))") }
        defer {
            close(fd)
            unlink(partial)
        }
        let info: StreamInfo
        do throws(HandoffClientError) {
            info = try await client.fileStream(.pasteClipboard(copy.id, type: form), file: fd, role: .receive).outcome()
        } catch {
            return .failed(error.message)
        }
        guard info.state == .completed else { return .failed(info.error ?? "the paste did not complete") }
        guard fsync(fd) == 0 else { return .failed("cannot write in \(directory): \(SystemCall.describe(errno))") }
        switch FileKeeping.keep(partial, as: name, in: directory) {
        case .success(let path): return .kept(path: path)
        case .failure(let failure): return .failed(Self.describe(failure))
        }
    }

    /// Each file of a copy's file list `uris` kept here, and the list as it reads here: the
    /// files' URIs are those of the copies kept, the other URIs (links) as they were; a file that
    /// did not come (a folder there, gone, cut short) is left out, and said why in `failures`.
    func keepFiles(of copy: ClipboardCopy, uris: [String]) async -> (list: [String], kept: Int, failures: [String]) {
        var local: [String] = []
        var kept = 0
        var failures: [String] = []
        for (index, uri) in uris.enumerated() {
            guard let path = FileList.path(of: uri) else {
                local.append(uri)
                continue
            }
            guard index < ClipboardNotice.maximumFiles else {
                failures.append("\(FileList.keptName(of: path)): past the first \(ClipboardNotice.maximumFiles) entries")
                continue
            }
            switch await keep(ClipboardNotice.fileForm(index), of: copy, as: FileList.keptName(of: path)) {
            case .kept(let path):
                local.append(FileList.uri(of: path))
                kept += 1
            case .failed(let reason):
                failures.append("\(FileList.keptName(of: path)): \(reason)")
            }
        }
        return (local, kept, failures)
    }

    /// An app here pastes `type` of another device's copy: its bytes, or nil when they do not
    /// come whole within `pasteTimeout` (and a second per MiB) once the stream opened (the app
    /// then gets nothing rather than waiting; the stream is cut).
    func fetch(_ type: String, of copy: ClipboardCopy, timeout pasteTimeout: Duration) async -> [UInt8]? {
        guard let size = copy.items.first(where: { $0.type == type })?.size else { return nil }
        do throws(HandoffClientError) {
            let pipe = try await client.pipe(.pasteClipboard(copy.id, type: type))
            defer { pipe.close() }
            pipe.finishWriting()
            let deadline = pasteTimeout + .seconds(size >> 20)
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

    static func describe(_ failure: FileKeeping.Failure) -> String {
        switch failure {
        case .system(let path, let errno): "cannot write \(path): \(SystemCall.describe(errno))"
        case .crowded(let directory, let name): "\(directory) already holds 1000 files called \(name)"
        }
    }
}
