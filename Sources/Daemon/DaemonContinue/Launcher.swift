#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonApps
import DaemonCore
import DaemonDocuments
import HandoffAPI
import HandoffModel
import HandoffSystem
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Hands a continued activity to a program on this device (docs/local-api.md, "Continuations"): the handler for its type
/// (started with the activity in a private file and the continuation id in its environment), else
/// its web page to the browser, else a clear "no application handles TYPE".
///
/// What a peer sent only ever becomes data: the program is chosen here by type, the file name is
/// the continuation id, and the only URL passed on is an http(s) one, as one argument, never
/// through a shell.
package final class Launcher: Sendable {
    /// What opens what: replaced as a whole when handoffd.toml is reloaded (SIGHUP).
    private let choices: Mutex<(catalog: HandlerCatalog, browser: ExecLine, webDomainsOff: Set<WebDomainClaim>)>
    /// `$XDG_RUNTIME_DIR/handoff/continuations`: the activity files handlers read.
    let directory: String
    private let socketPath: String
    private let environment: [String: String]
    private let logger: Logger
    /// Programs we started that still run, or ended with a launch still waiting for their
    /// verdict (`termination(of:within:)`).
    private let children = Mutex<[pid_t: Child]>([:])

    private enum Child {
        /// `verdictWanted`: a launch will ask how it ended, so the reaper keeps the outcome;
        /// `waiter`: the launch waiting for it now, woken by the reaper.
        case running(verdictWanted: Bool, waiter: CheckedContinuation<Void, Never>? = nil)
        case ended(ChildProcess.Termination)
    }

    /// How long the browser command may take to say whether it worked (xdg-open returns once the
    /// browser has the page; a browser run directly keeps running, which counts as success).
    static let browserVerdictWindow: Duration = .seconds(3)
    /// Activity files older than this are removed when a new one is written.
    static let fileLifetimeSeconds: Int64 = 24 * 3600

    package init(
        catalog: HandlerCatalog, browser: ExecLine, webDomainsOff: Set<WebDomainClaim> = [], directory: String, socketPath: String, environment: [String: String],
        logger: Logger
    ) {
        self.choices = Mutex((catalog, browser, webDomainsOff))
        self.directory = directory
        self.socketPath = socketPath
        self.environment = environment
        self.logger = logger
    }

    /// Starts `handler` for `activity` (with `page`, a claimed page, as its `%u`), or with none
    /// its web page in the browser; returns once it runs (or the browser accepted the page).
    func deliver(
        _ activity: Activity, with handler: HandlerCatalog.Handler?, page: String? = nil, continuationID: UUID, from peer: LocalEvent.PeerRef,
        session: [String: String]
    ) async throws(DaemonError) -> DeliveryOutcome {
        let env = environment.merging(SessionEnvironment.pick(session)) { _, new in new }
        let browser = choices.withLock { $0.browser }
        let type = activity.type
        if let handler {
            return try await run(handler, activity, page: page, continuationID: continuationID, from: peer, environment: env, browser: browser)
        }
        guard let url = activity.content.webpageURL else {
            throw DaemonError(
                .noHandler,
                "no application handles \(type): install one whose .desktop file says \(DesktopEntry.activityTypesKey)=\(type); or set a command for it under [handlers] in handoffd.toml"
            )
        }
        guard URIRules.isWebURL(url) else {
            throw DaemonError(.invalidWebpageURL, "the activity's web page is not an http(s) URL; it was not opened")
        }
        let command = browser.opening(url)
        let pid = try start(command, environment: env, what: "the browser (\(browser.arguments[0]))", wantsVerdict: true)
        if let ended = await termination(of: pid, within: Launcher.browserVerdictWindow), ended != .exited(0) {
            throw DaemonError(.handlerFailed, "the browser command \(browser.arguments[0]) \(ended) instead of opening \(url)")
        }
        logger.info("continuation handed to the browser", metadata: ["type": "\(type)", "browser": "\(browser.arguments[0])"])
        return DeliveryOutcome(kind: .browser, handler: browser.arguments[0], command: command, url: url, pid: pid)
    }

    /// Where programs named without a path are looked for: handoffd's PATH, as they are started.
    private var searchPath: String { environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin" }

    /// The program here (handoffd.toml, a `.desktop` file) that continues activities of `type`.
    func handler(for type: String) -> HandlerCatalog.Handler? {
        choices.withLock { $0.catalog }.handler(for: type, searchPath: searchPath)
    }

    /// The claims the user turned off (handoffd.toml `[web_domains] off`).
    package var webDomainsOff: Set<WebDomainClaim> { choices.withLock { $0.webDomainsOff } }

    /// The installed app that claims `host` (`X-Handoff-WebDomains`), unless the user turned its
    /// claim off. What an app lists that claims nothing (`*.com`) is ignored, and said in the log.
    func webClaimant(host: String) -> (handler: HandlerCatalog.Handler, claim: WebDomainClaim)? {
        let (catalog, off) = choices.withLock { ($0.catalog, $0.webDomainsOff) }
        for (entry, line) in catalog.applications(mentioning: DesktopEntry.webDomainsKey, searchPath: searchPath) {
            for ignored in entry.ignoredWebDomains {
                logger.notice("an app's web domain claims nothing; ignored", metadata: ["app": "\(entry.id)", "claim": "\(ignored)"])
            }
            if let claim = entry.webDomains.first(where: { $0.covers(host: host) && !$0.isTurnedOff(by: off) }) { return (.desktop(entry, line), claim) }
        }
        return nil
    }

    /// What installed apps claim, each on or off (for `doctor`).
    package var webDomainClaims: [WebDomainClaimStatus] {
        let (catalog, off) = choices.withLock { ($0.catalog, $0.webDomainsOff) }
        return catalog.webDomainClaims(searchPath: searchPath).flatMap { entry in
            entry.webDomains.map { claim in
                WebDomainClaimStatus(claim, app: entry.id, running: false, off: off)
            } + entry.ignoredWebDomains.map {
                WebDomainClaimStatus(domain: $0, app: entry.id, running: false, on: false, reason: "claims nothing: not a host name of two labels or more")
            }
        }
    }

    /// Runs `handler` for `activity`: its file written, its environment set, its command (or,
    /// for an app that asks, its running instance over D-Bus). `page`: the claimed page that is
    /// its `%u` (only ever one `WebDomainClaim.claimableHost` took); otherwise `%u` is the file.
    private func run(
        _ handler: HandlerCatalog.Handler, _ activity: Activity, page url: String?, continuationID: UUID, from peer: LocalEvent.PeerRef,
        environment given: [String: String], browser: ExecLine
    ) async throws(DaemonError) -> DeliveryOutcome {
        var env = given
        let type = activity.type
        let file = try await DiskThread.shared.run { [self] () throws(DaemonError) -> String in try writeActivityFile(activity, continuationID: continuationID) }
        env[HandlerEnvironment.activityFile] = file
        env[HandlerEnvironment.continuationID] = continuationID.lowercasedString
        env[HandlerEnvironment.activityType] = type
        env[HandlerEnvironment.peerID] = peer.id.text
        env[HandlerEnvironment.peerName] = peer.name
        env[HandlerEnvironment.socket] = socketPath
        env[HandlerEnvironment.browser] = browser.text
        let command: [String]
        switch handler {
        case .configured(_, let line):
            command = line.expanded(.init(file: file, url: url))
        case .desktop(let entry, let line):
            if entry.continueAction, let command = try await overDBus("activate", entry, file: file, environment: env) {
                logger.info("continuation handed to an app over D-Bus", metadata: ["type": "\(type)", "handler": "\(handler.label)"])
                return DeliveryOutcome(kind: .handler, handler: handler.label, command: command, activityFile: file)
            }
            command = line.expanded(.init(file: file, url: url, name: entry.name, icon: entry.icon, desktopFile: entry.path))
        }
        let pid = try start(command, environment: env, what: "the handler for \(type) (\(handler.label))", wantsVerdict: false)
        logger.info("continuation handed to an app", metadata: ["type": "\(type)", "handler": "\(handler.label)", "pid": "\(pid)"])
        return DeliveryOutcome(kind: .handler, handler: handler.label, command: command, activityFile: file, pid: pid)
    }

    /// What would be started for an activity of `type` now (nil: nothing here takes it).
    func target(for type: String, hasWebpage: Bool) -> ContinueTarget? {
        let (catalog, browser) = choices.withLock { ($0.catalog, $0.browser) }
        switch catalog.handler(for: type, searchPath: searchPath) {
        case .configured(_, let line):
            let program = line.arguments[0].split(separator: "/").last.map(String.init) ?? line.arguments[0]
            return ContinueTarget(kind: .handler, handler: "config", name: program)
        case .desktop(let entry, _):
            return ContinueTarget(kind: .handler, handler: entry.id, name: entry.name, icon: entry.icon, dbusActivatable: entry.dbusActivatable)
        case nil where type == DocumentActivity.type:
            // Which app depends on the document's MIME type, which only the activity says.
            return ContinueTarget(kind: .handler, handler: "document", name: "The app for the document", icon: "text-x-generic")
        case nil:
            return hasWebpage ? ContinueTarget(kind: .browser, handler: browser.arguments[0], name: "Web browser", icon: "web-browser") : nil
        }
    }

    /// A running app, named as its `.desktop` file (`APPID.desktop`) names it.
    func runningApp(_ appID: String) -> ContinueTarget {
        let entry = choices.withLock { $0.catalog }.entry(id: appID + ".desktop")
        return ContinueTarget(kind: .app, handler: appID, name: entry?.name ?? appID, icon: entry?.icon, dbusActivatable: entry?.dbusActivatable ?? false)
    }

    /// The browser command's program, and whether it can be started as it would be.
    package var browserStatus: BrowserStatus {
        let program = choices.withLock { $0.browser.arguments.first ?? "" }
        let found = program.contains("/") ? access(program, X_OK) == 0 : ChildProcess.search(program, path: searchPath) != nil
        return BrowserStatus(program: program, found: found)
    }

    /// New handlers and browser (from a reloaded configuration); continuations under way keep theirs.
    package func replace(configured: [String: ExecLine], browser: ExecLine, webDomainsOff: Set<WebDomainClaim>) {
        choices.withLock { c in
            c.catalog.configured = configured
            c.browser = browser
            c.webDomainsOff = webDomainsOff
        }
    }
    /// How long `handoff-desktop activate` may take: its own call waits 10 s (the bus may start
    /// the app for it), plus connecting.
    static let activationVerdictWindow: Duration = .seconds(15)

    /// A DBusActivatable app gets what is for it in its running instance through the session
    /// bus (docs/dbus.md): `handoff-desktop activate` (a continuation, for an app that asks with
    /// `X-Handoff-ContinueAction=true`) or `handoff-desktop open` (a document). The command run
    /// when it reached the app; nil when that helper is not installed or the call certainly did
    /// not reach the app (exit 1): then its `Exec` line runs. When it may have reached it (no
    /// answer in time), it is a failure: starting the app as well could deliver it twice.
    private func overDBus(_ verb: String, _ entry: DesktopEntry, file: String, environment env: [String: String]) async throws(DaemonError) -> [String]? {
        guard let helper = Self.activationHelper(searchPath: env["PATH"] ?? "/usr/local/bin:/usr/bin:/bin") else { return nil }
        let command = [helper, verb, entry.id, file]
        guard let pid = try? start(command, environment: env, what: "handoff-desktop \(verb)", wantsVerdict: true) else { return nil }
        switch await termination(of: pid, within: Launcher.activationVerdictWindow) {
        case .exited(0):
            return command
        case .exited(1):
            logger.notice("a DBusActivatable app was not reached over D-Bus; running its Exec line", metadata: ["handler": "\(entry.id)", "call": "\(verb)"])
            return nil
        case let how:
            if how == nil { kill(pid, SIGKILL) }
            throw DaemonError(.handlerFailed, "\(entry.name) did not answer over D-Bus in time (handoff-desktop \(verb) \(how.map { "\($0)" } ?? "still ran"))")
        }
    }

    /// Opens a continued document (`path`: the same document here, or the copy that came) with
    /// the app that opens its MIME type here (`HandlerCatalog.application(opening:)`): a
    /// DBusActivatable one in its running instance through `org.freedesktop.Application.Open`,
    /// so GTK and Qt apps take part with no handoff code; else its `Exec` line with the file.
    func open(document path: String, mimeType: String, session: [String: String]) async throws(DaemonError) -> DeliveryOutcome {
        let env = environment.merging(SessionEnvironment.pick(session)) { _, new in new }
        let catalog = choices.withLock { $0.catalog }
        guard let (entry, line) = catalog.application(opening: mimeType, configDirectories: configDirectories, searchPath: searchPath) else {
            throw DaemonError(
                .noHandler, "no application here opens \(mimeType) files; the document is at \(path) (choose one with: xdg-mime default APP.desktop \(mimeType))"
            )
        }
        if entry.dbusActivatable, let command = try await overDBus("open", entry, file: path, environment: env) {
            logger.info("a document handed to an app over D-Bus", metadata: ["handler": "\(entry.id)", "mime": "\(mimeType)"])
            return DeliveryOutcome(kind: .handler, handler: entry.id, command: command, document: path)
        }
        guard !line.quotesAFileOrAddress else {
            throw DaemonError(
                .noHandler,
                "\(entry.name) takes files only inside a quoted argument of its command, where a name from another device is never put; the document is at \(path)"
            )
        }
        // Its name came from the other device: never inside a quoted argument.
        let command = line.expanded(.init(file: path, name: entry.name, icon: entry.icon, desktopFile: entry.path, fileNamedElsewhere: true))
        let pid = try start(command, environment: env, what: "\(entry.name) for the document", wantsVerdict: false)
        logger.info("a document handed to an app", metadata: ["handler": "\(entry.id)", "mime": "\(mimeType)", "pid": "\(pid)"])
        return DeliveryOutcome(kind: .handler, handler: entry.id, command: command, pid: pid, document: path)
    }

    /// Where mimeapps.list is looked for (`HandlerCatalog.configDirectories`).
    private var configDirectories: [String] { HandlerCatalog.configDirectories(environment: environment) }

    /// `handoff-desktop` installed next to handoffd, else on the handlers' PATH.
    static func activationHelper(searchPath: String) -> String? {
        if let own = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            let sibling = own.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/") + "/handoff-desktop"
            if access(sibling, X_OK) == 0 { return sibling }
        }
        return ChildProcess.search("handoff-desktop", path: searchPath)
    }

    /// The activity as the local API's JSON, in a file only the user can read.
    private func writeActivityFile(_ activity: Activity, continuationID: UUID) throws(DaemonError) -> String {
        let path = directory + "/" + continuationID.lowercasedString + ".json"
        do {
            try PrivateFiles.ensureDirectory(directory)
            removeStaleFiles()
            let json = try LocalAPIJSON.encoder(pretty: true).encode(activity)
            try PrivateFiles.writeAtomically(Array(json), to: path)
        } catch {
            throw DaemonError(.handlerFailed, "cannot write the activity for its app to \(path): \(error)")
        }
        return path
    }

    private func removeStaleFiles() {
        PrivateFiles.removeStale(in: directory, olderThan: Launcher.fileLifetimeSeconds, now: .now()) { $0.hasSuffix(".json") }
    }

    private func start(_ command: [String], environment: [String: String], what: String, wantsVerdict: Bool) throws(DaemonError) -> pid_t {
        let home = environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
        let pid: pid_t
        do {
            pid = try ChildProcess.spawn(
                command[0], arguments: Array(command.dropFirst()), environment: environment, newSession: true, workingDirectory: home
            )
        } catch {
            throw DaemonError(.handlerFailed, "cannot start \(what): \(SystemCall.describe(error.errno)) (\(command[0]))")
        }
        children.withLock { $0[pid] = .running(verdictWanted: wantsVerdict) }
        reapWhenItEnds(pid)
        return pid
    }

    /// How `pid` ended if it did within `window`; nil if it still runs (and then nobody asks).
    /// Woken by the reaper or by the end of the window, whichever comes first: nothing polls.
    private func termination(of pid: pid_t, within window: Duration) async -> ChildProcess.Termination? {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.ended(pid) }
            group.addTask { _ = try? await QuietSleep.sleep(for: window) }
            await group.next()
            group.cancelAll()
        }
        // Ended in time: its verdict. Still running (or cancelled at shutdown): nobody asks any more.
        return children.withLock { c -> ChildProcess.Termination? in
            switch c[pid] {
            case .ended(let how):
                c[pid] = nil
                return how
            case .running:
                c[pid] = .running(verdictWanted: false)
                return nil
            case nil:
                return nil
            }
        }
    }

    /// Returns once `pid` has ended (the reaper wakes it), or the task is cancelled.
    private func ended(_ pid: pid_t) async {
        // Not watched (no thread to reap it): its end cannot be seen, so the window decides.
        if children.withLock({ $0[pid] == nil }) {
            _ = try? await QuietSleep.sleep(for: .seconds(86_400))
            return
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                let resumeNow = children.withLock { c -> Bool in
                    guard case .running(let wanted, nil) = c[pid], !Task.isCancelled else { return true }
                    c[pid] = .running(verdictWanted: wanted, waiter: done)
                    return false
                }
                if resumeNow { done.resume() }
            }
        } onCancel: {
            let waiter = children.withLock { c -> CheckedContinuation<Void, Never>? in
                guard case .running(let wanted, let waiter?) = c[pid] else { return nil }
                c[pid] = .running(verdictWanted: wanted)
                return waiter
            }
            waiter?.resume()
        }
    }

    /// Programs we started are collected when they exit (no zombies) by a thread that blocks in
    /// waitpid until then: nothing wakes while they run.
    private func reapWhenItEnds(_ pid: pid_t) {
        let started = BlockingThread.detach(name: "handoff-reap") { [self] in
            let how = ChildProcess.wait(pid)
            let waiter = children.withLock { c -> CheckedContinuation<Void, Never>? in
                guard case .running(let wanted, let waiter) = c[pid] else { return nil }
                c[pid] = wanted ? .ended(how) : nil
                return waiter
            }
            waiter?.resume()
            logger.debug("a started program ended", metadata: ["pid": "\(pid)", "how": "\(how)"])
        }
        if !started {
            // At the thread limit: the program runs on, and stays a zombie once it ends, until
            // handoffd exits.
            logger.warning("cannot watch a started program (no thread)", metadata: ["pid": "\(pid)"])
            children.withLock { $0[pid] = nil }
        }
    }
}
