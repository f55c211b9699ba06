#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffClient
import HandoffModel
import HandoffSystem
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `become-current --wait` and the options that imply it: handoffctl stays attached to the
/// activity as its originating app — printing what happens to it, answering willSave with
/// `--save-exec`, and serving continuation streams with `--stream-file` or `--stream-exec`.
struct AttachedActivity {
    let command: BecomeCurrent
    let client: HandoffClient
    let activity: Activity

    func run() throws {
        let subscription = try client.subscribe(.attach(
            AttachRequest(activityID: activity.id, serveStreams: command.servesStreams, resignOnDetach: command.resignOnExit)
        ))
        if !command.json {
            Terminal.diagnostic("handoffctl: attached to \(activity.id.lowercasedString) (Ctrl-C to stop\(command.resignOnExit ? " and withdraw it" : ""))\n")
        }
        let failures = Atomic<Int>(0)
        var workers: [BlockingThread] = []
        defer { workers.forEach { $0.join() } }
        while let event = try subscription.next() {
            if command.json {
                try Terminal.json(event, pretty: false)
            } else if let line = describe(event) {
                Terminal.out(line)
            }
            Terminal.flush()
            switch event.body {
            case .willSave:
                if let saveExec = command.saveExec { save(with: saveExec) }
            case .streamRequested(let streamID, _, let peerName):
                let (client, command) = (self.client, self.command)
                workers.append(
                    BlockingThread {
                        if !serve(streamID, from: peerName, client: client, command: command) {
                            failures.add(1, ordering: .relaxed)
                        }
                    }
                )
            case .ended:
                workers.forEach { $0.join() }
                if failures.load(ordering: .relaxed) > 0 {
                    throw CLIError(.streamFailed, "\(failures.load(ordering: .relaxed)) continuation stream(s) failed (see above)")
                }
                return
            case .attached, .wasContinued, .unknown:
                break
            }
        }
        throw CLIError(.daemonNotRunning, "handoffd ended the attachment without saying why (it stopped?)")
    }

    private func describe(_ event: AttachEvent) -> String? {
        switch event.body {
        case .attached: nil
        case .willSave(_, let id, let name): "willSave      \(safe(name)) \(id.short)…"
        case .wasContinued(_, let id, let name): "wasContinued  \(safe(name)) \(id.short)…"
        case .streamRequested(let stream, let id, let name): "stream        \(stream.lowercasedString) for \(safe(name)) \(id.short)…"
        case .ended(_, let reason): "ended         \(safe(reason))"
        case .unknown: nil
        }
    }

    /// Runs `--save-exec`; its output (typed userInfo JSON) updates the activity before it leaves.
    /// Failing that, the activity goes as it was, and we say why.
    private func save(with saveExec: String) {
        do {
            let output = try ShellCommand.output(of: saveExec)
            let userInfo = try InfoArguments.parseJSON("--save-exec output") { _ in Data(output) }
            var content = activity.content
            content.userInfo.merge(userInfo) { _, new in new }
            _ = try client.send(.becomeCurrent(PutCurrentActivityRequest(id: activity.id, content: content)))
        } catch {
            Terminal.warning("willSave: \(message(of: error)); the activity goes as it was")
        }
    }
}

/// One stream, on its own thread: take it, serve it, report how it ended.
private func serve(_ id: UUID, from peerName: String, client: HandoffClient, command: BecomeCurrent) -> Bool {
    do {
        let info: StreamInfo
        if let file = command.streamFile {
            info = try StreamTransfer.send(file: file, streamID: id, client: client, progress: !command.json)
        } else {
            info = try StreamTransfer.exec(command.streamExec!, on: client.pipe(.takeStream(id)), client: client)
        }
        Terminal.diagnostic("handoffctl: stream \(id.lowercasedString) for \(safe(peerName)) done: sent \(info.bytesSent) bytes, received \(info.bytesReceived)\n")
        return true
    } catch {
        Terminal.error("stream \(id.lowercasedString) for \(safe(peerName)): \(message(of: error))")
    }
    return false
}

/// What a failure says, whichever kind it is.
private func message(of error: any Error) -> String {
    switch error {
    case let e as CLIError: e.message
    case let e as HandoffClientError: e.message
    default: "\(error)"
    }
}
