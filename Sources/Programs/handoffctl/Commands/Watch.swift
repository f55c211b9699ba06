#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ArgumentParser
import HandoffAPI
import HandoffClient
import HandoffModel

#if canImport(Glibc)
import Glibc
#endif

struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print events as they happen, until interrupted.",
        discussion: """
            One line per change, with the local time, and devices and activities by name. With \
            --json, every local-API event object, one per line (NDJSON).
            """
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Flag(help: "Print each event as one line of the local API's JSON.")
    var json = false

    func run() throws {
        let client = global.client(root)
        let subscription = try client.subscribe(.events)
        Terminal.diagnostic("handoffctl: watching \(global.socketPath(root)) (Ctrl-C to stop)\n")
        // Names for what the events name by id: the devices and the activity known already.
        var format = WatchFormat()
        if !json {
            (try? client.send(.peers))?.peers.forEach { format.know($0) }
            if let current = try? client.send(.currentActivity) { format.know(current.activity) }
        }
        while let event = try subscription.next() {
            if json {
                try Terminal.json(event, pretty: false)
            } else if let line = format.line(event) {
                Terminal.out(line)
            }
            Terminal.flush()
        }
        throw CLIError(.daemonNotRunning, "handoffd closed the event stream (it stopped, or this watcher fell behind)")
    }
}

/// `watch` for people: the time (local, to the millisecond, so the columns line up), what
/// happened in a column of its own, and devices and activities by name rather than id. A change
/// that looks the same as the one before it for the same device or stream (the daemon reports
/// every change of what `peers --json` shows, last-seen times included) is printed once.
struct WatchFormat {
    private var titles: [UUID: String] = [:]
    private var names: [DeviceID: String] = [:]
    private var shown: [String: String] = [:]

    mutating func know(_ peer: PeerInfo) {
        names[peer.id] = peer.name
        if let a = peer.activity { titles[a.id] = displayQuoted(a.title) }
    }

    mutating func know(_ activity: Activity) {
        titles[activity.id] = displayQuoted(activity.title)
    }

    mutating func line(_ event: LocalEvent) -> String? {
        let (what, text, subject): (String, String, String?)
        switch event.body {
        case .currentActivityChanged(let a):
            know(a)
            (what, text, subject) = ("current", "\(safe(a.type)) \(displayQuoted(a.title))", nil)
        case .currentActivityResigned(let id, let reason):
            (what, text, subject) = (reason == .expired ? "expired" : "resigned", titles[id] ?? "the activity", nil)
        case .peerChanged(let peer):
            know(peer)
            let activity = peer.activity.map { ": \(safe($0.type)) \(displayQuoted($0.title))" } ?? ", no activity"
            (what, text, subject) = ("peer", "\(safe(peer.name)) \(peer.reachable ? "reachable" : "unreachable")\(activity)", "peer " + peer.id.text)
        case .peerGone(let id):
            (what, text, subject) = ("gone", names[id].map(safe) ?? id.short + "…", "peer " + id.text)
        case .willContinue(_, let type, let peer):
            (what, text, subject) = ("continuing", "\(safe(type)) from \(safe(peer.name))", nil)
        case .continued(_, let activity, let peer, let delivered):
            let how = switch delivered.kind {
            case .handler: ", opened with \(safe(delivered.handler))"
            case .browser: ", opened in the browser"
            case .app: ", taken by the running \(safe(delivered.handler))"
            default: ""
            }
            (what, text, subject) = ("continued", "\(safe(activity.type)) \(displayQuoted(activity.title)) from \(safe(peer.name))\(how)", nil)
        case .continueFailed(_, let type, let peer, let code, let reason):
            (what, text, subject) = ("failed", "\(safe(type)) from \(safe(peer.name)): \(safe(reason)) (\(code.rawValue))", nil)
        case .willSave(let id, let peer):
            (what, text, subject) = ("saving", "\(titles[id] ?? "the activity") for \(safe(peer.name))", nil)
        case .wasContinued(let id, let peer):
            (what, text, subject) = ("taken", "\(titles[id] ?? "the activity") by \(safe(peer.name))", nil)
        case .streamChanged(let s):
            let direction = s.role == .resuming ? "from" : "to"
            let bytes = s.state.isFinal ? ", sent \(StreamProgress.size(s.bytesSent)), received \(StreamProgress.size(s.bytesReceived))" : ""
            let error = s.error.map { ": \(safe($0))" } ?? ""
            (what, text, subject) = ("stream", "\(direction) \(safe(s.peerName)): \(s.state.rawValue)\(bytes)\(error)", "stream " + s.id.lowercasedString)
        case .statusChanged:
            (what, text, subject) = ("status", "this device changed (account, switch or invites): handoffctl status", nil)
        case .clipboardChanged(let state):
            (what, text, subject) = ("clipboard", ClipboardText.summary(state), "clipboard")
        case .clipboardStreamRequested(_, _, let type, let peer):
            (what, text, subject) = ("pasting", "\(safe(peer.name)) pastes \(safe(type)) from this device's copy", nil)
        case .unknown:
            return nil
        }
        if let subject {
            guard shown[subject] != text else { return nil }
            shown[subject] = text
        }
        return "\(Self.clock(event.at))  \(what.padding(to: 10))  \(text)"
    }

    /// "14:03:27.052", this machine's local time.
    static func clock(_ t: Timestamp) -> String {
        var seconds = time_t(t.microsecondsSinceEpoch / 1_000_000)
        var parts = tm()
        localtime_r(&seconds, &parts)
        let millis = Int((t.microsecondsSinceEpoch % 1_000_000 + 1_000_000) % 1_000_000 / 1000)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(millis < 10 ? "00" : millis < 100 ? "0" : "")\(millis)"
    }
}
