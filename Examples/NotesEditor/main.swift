// A notes editor that takes part in Handoff with HandoffKit (docs/handoffkit.md), headless so
// that tests and people can drive it from a terminal. One line per command on stdin:
//
//   new TITLE       start a note: it becomes the device's current activity
//   type TEXT       add TEXT to the note (needsSave: sent only when another device takes it)
//   attach PATH     offer the file at PATH to whoever continues the note (a continuation stream)
//   quit
//
// It prints one line for each thing that happens: `current`, `willSave`, `wasContinued`,
// `sent attachment`, and on the receiving side `continued` and `received attachment` (saved in
// the directory given with --dir, default the current one). With --web-domain it also claims a
// site: a page of it continued here prints `opened page URL TITLE` (docs/apps.md, "Web pages
// into apps").
//
//   handoff-example-notes [--socket PATH] [--dir DIR] [--web-domain DOMAIN]

import Foundation
import HandoffKit
import Synchronization

let noteType = "org.handoff.example.note"

final class Editor: UserActivityDelegate, ContinuationReceiver {
    struct State {
        var note: UserActivity?
        var text = ""
        var attachment: String?
    }

    let app: HandoffApp
    let directory: String
    let state = Mutex(State())

    init(app: HandoffApp, directory: String) {
        self.app = app
        self.directory = directory
    }

    func perform(_ command: String, _ argument: String) async {
        switch command {
        case "new":
            let note = UserActivity(activityType: noteType, app: app)
            note.title = argument
            note.userInfo = ["text": .string("")]
            note.delegate = self
            state.withLock { $0 = State(note: note) }
            await becomeCurrent(note)
        case "type":
            guard let note = state.withLock({ s -> UserActivity? in
                s.text += argument
                return s.note
            }) else { return say("error: no note; start one with `new TITLE`") }
            // Not sent now: the other device asks for it when it takes the note (willSave).
            note.needsSave = true
            say("typed \(argument.count) characters")
        case "attach":
            guard let note = state.withLock({ s -> UserActivity? in
                s.attachment = argument
                return s.note
            }) else { return say("error: no note; start one with `new TITLE`") }
            note.supportsContinuationStreams = true
            say("attached \(argument)")
        default:
            say("error: unknown command \(command); use new, type, attach or quit")
        }
    }

    func becomeCurrent(_ note: UserActivity) async {
        do {
            try await note.becomeCurrent()
            say("current \(note.title)")
        } catch {
            say("error: \(error)")
        }
    }

    // MARK: UserActivityDelegate: this device's note, taken by another

    func userActivityWillSave(_ userActivity: UserActivity) async {
        let text = state.withLock { $0.text }
        userActivity.userInfo = ["text": .string(text)]
        say("willSave")
    }

    func userActivityWasContinued(_ userActivity: UserActivity) async {
        say("wasContinued")
    }

    func userActivity(_ userActivity: UserActivity, didReceive stream: ContinuationStream) async {
        defer { stream.close() }
        guard let path = state.withLock({ $0.attachment }), let bytes = FileManager.default.contents(atPath: path) else {
            return say("error: a stream was asked for, but no attachment is set")
        }
        do {
            try await stream.write(Array(bytes))
            stream.finishWriting()
            _ = try await stream.readToEnd(limit: 0)
            say("sent attachment \(bytes.count) bytes")
        } catch {
            say("error: sending the attachment: \(error)")
        }
    }

    // MARK: ContinuationReceiver: another device's note, taken here

    func willContinueUserActivity(withType type: String, from device: String) async {
        say("willContinue from \(device)")
    }

    func continueUserActivity(_ continuation: IncomingContinuation) async throws -> String {
        let received = continuation.userActivity
        if received.activityType == UserActivity.browsingWebType {
            say("opened page \(received.webpageURL?.absoluteString ?? "") \(received.title)")
            return HandoffApp.mainWindow
        }
        let text: String
        if case .string(let t) = received.userInfo["text"] { text = t } else { text = "" }
        say("continued \(received.title) from \(continuation.device): \(text)")
        if received.supportsContinuationStreams {
            let stream = try await continuation.openStream()
            stream.finishWriting()
            let bytes = try await stream.readToEnd()
            let path = directory + "/attachment"
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            say("received attachment \(bytes.count) bytes")
        }
        // The note is edited here now: `new` starts another; `type` and `attach` change this one.
        let note = UserActivity(copying: received, app: app)
        note.delegate = self
        note.supportsContinuationStreams = false
        state.withLock { $0 = State(note: note, text: text) }
        return HandoffApp.mainWindow
    }

    func didFailToContinueUserActivity(withType type: String, error: HandoffError) async {
        say("failed to continue: \(error)")
    }
}

/// One line of output, at once (stdout may be a pipe).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// The next line of stdin, read on a thread of its own so the app keeps serving meanwhile.
func nextLine() async -> String? {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: readLine()) }
    }
}

func option(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count else { return nil }
    return arguments[i + 1]
}

let app = HandoffApp(
    appID: "org.handoff.example.Notes", continues: [noteType], webDomains: option("--web-domain").map { [$0] } ?? [], socketPath: option("--socket")
)
let editor = Editor(app: app, directory: option("--dir") ?? FileManager.default.currentDirectoryPath)
do {
    try await app.connect()
    say("ready")
} catch {
    say("waiting for handoffd: \(error)")
}
await withDiscardingTaskGroup { group in
    group.addTask { await app.run(receiver: editor) }
    while let line = await nextLine(), line != "quit" {
        let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
        guard let command = parts.first else { continue }
        await editor.perform(command, parts.count > 1 ? parts[1] : "")
    }
    group.cancelAll()
}
