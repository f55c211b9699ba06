import Foundation
#if canImport(Glibc)
import Glibc
#endif
import BrowserHost
import HandoffAPI
import HandoffKit
import HandoffModel
import HandoffSystem
import Synchronization

/// The browser's native messaging host (docs/browser.md): started by Chromium, Chrome or Firefox
/// for handoff's extension, it speaks the browser's framing on stdin/stdout and handoffd's local
/// API. Also what installs its manifests, and the `.desktop` handler that opens a page in a
/// browser that is not running yet.
@main enum HandoffBrowserHost {
    static let usage = """
        usage: handoff-browser-host install --user | --system [--root DIR] [--host PATH]
               handoff-browser-host manifest chromium|chrome|firefox --host PATH
               handoff-browser-host open        (the .desktop handler of browser pages; handoffd runs it)
               handoff-browser-host --version
        The browser starts it for handoff's extension by itself (docs/browser.md).
        """

    static func main() async {
        var arguments = Array(CommandLine.arguments.dropFirst())
        switch arguments.first {
        case "install":
            arguments.removeFirst()
            exit(install(arguments))
        case "manifest":
            arguments.removeFirst()
            exit(manifest(arguments))
        case "open":
            exit(open())
        case "--version":
            print(HandoffVersion.current)
            exit(0)
        case "--help", "-h", nil:
            print(usage)
            exit(arguments.isEmpty ? 64 : 0)
        default:
            guard HostManifest.caller(arguments) != nil else {
                fail("handoff-browser-host is started by the browser for handoff's extension only (not for \(arguments.first?.prefix(80) ?? "")); install it with: handoff-browser-host install --user")
                exit(64)
            }
            await serveBrowser()
            exit(0)
        }
    }

    // MARK: Serving the extension

    static func serveBrowser() async {
        // A write to a browser that is gone fails with EPIPE (and stdin ends) instead of killing the host.
        signal(SIGPIPE, SIG_IGN)
        let output = Mutex<Void>(())
        let bridge = BrowserBridge { message in
            guard let framed = NativeMessaging.frame(message.encoded()) else { return }
            // The browser gone, writing fails (SIGPIPE is ignored): stdin ends too.
            output.withLock { _ in _ = framed.withUnsafeBytes { BytePump.writeAll(1, $0, isSocket: false) } }
        }
        let (messages, sink) = AsyncStream.makeStream(of: Result<[UInt8], NativeMessaging.FramingError>.self, bufferingPolicy: .unbounded)
        // stdin is a pipe the browser holds: read by a plain thread (the cooperative pool must not block).
        let reading = BlockingThread.detach(name: "browser-stdin") {
            var reader = NativeMessaging.Reader()
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let count = buffer.withUnsafeMutableBytes { raw in SystemCall.retrying { read(0, raw.baseAddress, raw.count) } }
                guard count > 0 else { break }
                do throws(NativeMessaging.FramingError) {
                    for message in try reader.feed(buffer[0..<count]) { sink.yield(.success(message)) }
                } catch {
                    sink.yield(.failure(error))
                    break
                }
            }
            sink.finish()
        }
        guard reading else {
            fail("cannot start a thread to read the browser's messages")
            return
        }
        await bridge.serve(messages)
    }

    // MARK: Installing

    static func install(_ arguments: [String]) -> Int32 {
        var system = false
        var user = false
        var root = ""
        var host = ownPath()
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--user": user = true
            case "--system": system = true
            case "--root":
                guard let value = rest.popFirst() else { return usageError("--root needs a directory") }
                root = value
            case "--host":
                guard let value = rest.popFirst(), value.hasPrefix("/") else { return usageError("--host needs the host's absolute path") }
                host = value
            default: return usageError("unknown argument \(argument)")
            }
        }
        guard system != user else { return usageError("say --user (your browsers) or --system (every user's)") }
        let directories =
            user
            ? HostManifest.userDirectories(environment: ProcessInfo.processInfo.environment)
            : HostManifest.systemDirectories.map { ($0.0, root + $0.1) }
        do {
            for file in try HostManifest.install(hostPath: host, into: directories) { print(file) }
        } catch {
            fail("cannot write the manifests: \(error.localizedDescription)\(system && geteuid() != 0 ? " (--system needs root: sudo)" : "")")
            return 73
        }
        print("Load the extension (\(extensionHint())) and it will find this host at \(host).")
        return 0
    }

    static func manifest(_ arguments: [String]) -> Int32 {
        guard arguments.count == 3, let family = HostManifest.Family(rawValue: arguments[0]), arguments[1] == "--host", arguments[2].hasPrefix("/") else {
            return usageError("manifest chromium|chrome|firefox --host /ABSOLUTE/PATH")
        }
        print(HostManifest.json(family, hostPath: arguments[2]), terminator: "")
        return 0
    }

    static func extensionHint() -> String {
        let installed = (ownPath() as NSString).deletingLastPathComponent + "/../share/webext/handoff"
        return FileManager.default.fileExists(atPath: installed) ? (installed as NSString).standardizingPath : "the browser/ folder of handoff's source"
    }

    static func ownPath() -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    // MARK: The .desktop handler

    /// handoffd found no running browser with the extension: start the browser with the page,
    /// scrolled to where the user was by a text fragment (the extension is not there to scroll).
    static func open() -> Int32 {
        let environment = ProcessInfo.processInfo.environment
        let continuation: IncomingContinuation
        do {
            // A page's activity is small: 1 MiB is plenty (HandoffKit would take 4).
            guard let launched = try IncomingContinuation.launched(environment: environment, maximumSize: 1024 * 1024) else {
                fail("open: handoffd runs this with \(HandlerEnvironment.activityFile) and \(HandlerEnvironment.continuationID) set")
                return 64
            }
            continuation = launched
        } catch {
            fail("open: \(error.description)")
            return 65
        }
        guard let opening = PageActivity.opening(PageActivity.content(of: continuation.userActivity)) else {
            fail("open: the activity has no http(s) page")
            return 65
        }
        let url = PageActivity.launchURL(opening.url, position: opening.position)
        // The browser the user gave handoffd, as handoffd would start it for a web page.
        let browser: ExecLine
        do {
            browser = try ExecLine(parsing: environment[HandlerEnvironment.browser] ?? "xdg-open")
        } catch {
            fail("open: the browser command handoffd gave (\(HandlerEnvironment.browser)): \(error.description)")
            return 65
        }
        let command = browser.opening(url)
        let argv = command.map { strdup($0) } + [nil]
        execvp(argv[0]!, argv)
        fail("open: cannot run \(command[0]): \(String(cString: strerror(errno))); set browser in handoffd.toml")
        return 69
    }

    static func usageError(_ text: String) -> Int32 {
        fail("\(text)\n\(usage)")
        return 64
    }

    static func fail(_ text: String) {
        FileHandle.standardError.write(Data("handoff-browser-host: \(text)\n".utf8))
    }
}
