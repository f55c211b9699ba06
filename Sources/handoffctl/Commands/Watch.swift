import ArgumentParser
import HandoffAPI
import HandoffClient
import HandoffModel

struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print events as they happen, until interrupted.",
        discussion: "With --json, one local-API event object per line (NDJSON)."
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Flag(help: "Print each event as one line of the local API's JSON.")
    var json = false

    func run() throws {
        let subscription = try global.client(root).events()
        Terminal.diagnostic("handoffctl: watching \(global.socketPath(root)) (Ctrl-C to stop)\n")
        while let event = try subscription.next() {
            if json {
                try Terminal.json(event, pretty: false)
            } else if let line = Watch.describe(event) {
                Terminal.out(line)
            }
            Terminal.flush()
        }
        throw CLIError(.daemonNotRunning, "handoffd closed the event stream (it stopped, or this watcher fell behind)")
    }

    static func describe(_ event: LocalEvent) -> String? {
        let at = event.at.rfc3339
        switch event.body {
        case .currentActivityChanged(let a):
            return "\(at)  current   \(safe(a.type)) \(displayQuoted(a.title)) \(a.id.lowercasedString)"
        case .currentActivityResigned(let id, let reason):
            return "\(at)  \(reason == .expired ? "expired " : "resigned")  \(id.lowercasedString)"
        case .peerChanged(let peer):
            let what = peer.activity.map { "\(safe($0.type)) \(displayQuoted($0.title))" } ?? "no activity"
            return "\(at)  peer      \(safe(peer.name)) \(peer.reachable ? "reachable" : "unreachable")  \(what)"
        case .peerGone(let id):
            return "\(at)  gone      \(id.short)…"
        case .willContinue(let cid, let type, let peer):
            return "\(at)  continuing \(safe(type)) from \(safe(peer.name))  \(cid.lowercasedString)"
        case .continued(let cid, let activity, let peer, let delivered):
            return "\(at)  continued \(safe(activity.type)) from \(safe(peer.name)) → \(safe(delivered.handler))  \(cid.lowercasedString)"
        case .continueFailed(let cid, let type, let peer, let code, let reason):
            return "\(at)  failed    \(safe(type)) from \(safe(peer.name)): \(safe(reason)) (\(code.rawValue))  \(cid.lowercasedString)"
        case .willSave(let id, let peer):
            return "\(at)  willSave  for \(safe(peer.name))  \(id.lowercasedString)"
        case .wasContinued(let id, let peer):
            return "\(at)  continued by \(safe(peer.name))  \(id.lowercasedString)"
        case .streamChanged(let stream):
            let error = stream.error.map { ": \(safe($0))" } ?? ""
            return "\(at)  stream    \(stream.state.rawValue) \(stream.role.rawValue) \(safe(stream.peerName)) sent \(stream.bytesSent) received \(stream.bytesReceived)\(error)  \(stream.id.lowercasedString)"
        case .unknown:
            return nil
        }
    }
}
