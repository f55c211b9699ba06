#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ArgumentParser
import HandoffAPI
import HandoffClient
import HandoffModel

struct Continue: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Continue what another of your devices is doing.",
        discussion: """
            PEER is a device name, a unique start of its id (see handoffctl peers), or HOST:PORT; \
            without it, the device whose activity is the newest (handoffctl says which). The \
            activity asked for is the one this device saw; if it changed meanwhile, that is an \
            error (status 17) rather than a surprise.

            The activity goes to the app installed for its type (a .desktop file with \
            X-Handoff-ActivityTypes, or [handlers] in handoffd.toml), else its web page to the \
            browser. With --json, or a --stream option, handoffctl takes it itself instead.

            Continuation streams (when the other app offers them): --stream-to F receives the \
            stream into F (which appears only once all of it arrived) or - for standard output; \
            --stream-exec CMD runs CMD with the stream on its standard input and output.
            """
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Argument(help: "The device to continue from (default: the one whose activity is the newest).")
    var peer: String?

    @Flag(help: "Print the activity as the local API's JSON (and start no app).")
    var json = false

    @Option(name: .customLong("stream-to"), help: ArgumentHelp("Receive a continuation stream into a file, or - for stdout.", valueName: "file|-"))
    var streamTo: String?

    @Option(name: .customLong("stream-exec"), help: ArgumentHelp("Run a shell command on a continuation stream.", valueName: "command"))
    var streamExec: String?

    func validate() throws {
        if streamTo != nil, streamExec != nil {
            throw ValidationError("--stream-to and --stream-exec cannot be used together")
        }
    }

    func run() throws {
        try Continue.perform(peer: peer, json: json, streamTo: streamTo, streamExec: streamExec, client: global.client(root))
    }

    /// The command itself, also run without ArgumentParser for its common forms (QuickCommand).
    static func perform(peer: String?, json: Bool, streamTo: String?, streamExec: String?, client: HandoffClient) throws {
        let streaming = streamTo != nil || streamExec != nil
        let delivery: ContinueRequest.Delivery = json || streaming ? .returnToCaller : .dispatch
        let request = ContinueRequest(
            peer: try peer ?? Continue.newest(client),
            delivery: delivery,
            // Only an app started here needs the session's variables.
            environment: delivery == .dispatch ? SessionEnvironment.pick(ProcessInfo.processInfo.environment) : [:]
        )
        if json, !streaming {
            // The activity as the daemon wrote it: decoding the whole answer to encode the
            // activity again was a tenth of what this command cost (docs/benchmarks.md).
            let answer = try client.answerBody(of: .continueActivity(request))
            guard let activity = JSONMember.value("activity", in: answer) else {
                throw CLIError(.failure, "handoffd's answer to continue has no activity; are handoffd and handoffctl the same version?")
            }
            Terminal.out(String(decoding: JSONIndenter.indent(Array(activity)), as: UTF8.self))
            return
        }
        let response = try client.send(.continueActivity(request))
        if json {
            try Terminal.json(response.activity)
        } else if !streaming {
            Continue.describe(response)
        }
        guard streaming else { return }
        let info: StreamInfo
        if let streamTo {
            info = try StreamTransfer.receive(.openStream(continuationID: response.continuationID), into: streamTo, client: client, progress: !json)
        } else {
            info = try StreamTransfer.exec(streamExec!, on: client.pipe(.openStream(continuationID: response.continuationID)), client: client)
        }
        Terminal.diagnostic("handoffctl: stream from \(safe(response.peerName)) done: received \(info.bytesReceived) bytes, sent \(info.bytesSent)\n")
    }

    /// The device whose current activity is the newest, by id; says which on stderr.
    static func newest(_ client: HandoffClient) throws -> String {
        let peers = try client.send(.peers).peers
        guard let (peer, activity) = peers.compactMap({ p in p.activity.map { (p, $0) } }).max(by: { $0.1.updatedAt < $1.1.updatedAt }) else {
            throw CLIError(.noCurrentActivity, "none of your other devices has a current activity (see handoffctl peers)")
        }
        let age = activity.updatedAt.age(at: .now())
        Terminal.diagnostic("handoffctl: continuing \(safe(peer.name))'s \(displayQuoted(activity.title)) (the newest activity, \(age) old)\n")
        return peer.id.text
    }

    /// Where the activity went, on stderr; the activity on stdout.
    static func describe(_ response: ContinueResponse) {
        switch response.delivered {
        case let d? where d.kind == .handler:
            Terminal.diagnostic("handoffctl: from \(safe(response.peerName)) (\(response.peerID.short)…), opened with \(safe(d.handler))\(d.pid.map { " (pid \($0))" } ?? ""):\n")
        case let d? where d.kind == .app:
            Terminal.diagnostic(
                "handoffctl: from \(safe(response.peerName)) (\(response.peerID.short)…), taken by the running \(safe(d.handler))\(d.window.map { " in window \(safe($0))" } ?? ""):\n"
            )
        case let d? where d.kind == .browser:
            Terminal.diagnostic("handoffctl: from \(safe(response.peerName)) (\(response.peerID.short)…), opened in the browser (\(safe(d.handler))):\n")
        default:
            Terminal.diagnostic("handoffctl: from \(safe(response.peerName)) (\(response.peerID.short)…):\n")
        }
        HumanFormat.activity(response.activity).forEach(Terminal.out)
    }
}
