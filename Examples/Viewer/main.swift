// A viewer with one window per item, to show how a continuation finds its window
// (docs/handoffkit.md): each window's activity names the item it shows
// (`targetContentIdentifier`), and each window declares what it takes (activation
// conditions): it prefers its own item, and can take what `can` adds. An item continued from
// another device goes to the window that prefers it, else to one that can take it, else to a
// new window. Windows come back when the viewer starts again (state restoration). Headless: one
// command per line on stdin (an item is any word: item-7, photo-9) —
//
//   open ITEM          open a window showing ITEM (focused: its activity is the device's current one)
//   focus ITEM         focus the window showing ITEM
//   can ITEM PATTERN…  the window showing ITEM can also take these items (item-8, item-*, *)
//   close ITEM         close it
//   quit
//
//   handoff-example-viewer [--socket PATH]

import Foundation
import HandoffKit
import Synchronization

let itemType = "org.handoff.example.item"

final class Viewer: ContinuationReceiver {
    let app: HandoffApp
    /// The windows, by item shown, with what each can take besides.
    let windows = Mutex<[String: [String]]>([:])

    init(app: HandoffApp) {
        self.app = app
    }

    static func window(showing item: String) -> String { "w:" + item }

    /// Opens (or refreshes) the window showing `item`, focused, and keeps it for next time.
    func open(_ item: String) async throws {
        let activity = UserActivity(activityType: itemType, app: app, window: Self.window(showing: item))
        activity.title = "Item \(item)"
        activity.targetContentIdentifier = item
        activity.userInfo = ["item": .string(item)]
        let can = windows.withLock { $0[item, default: []] }
        try await app.setActivationConditions(ActivationConditions(can: can, prefers: [item]), for: Self.window(showing: item))
        try await activity.becomeCurrent()
        try await app.saveRestoration(activity)
        windows.withLock { $0[item] = can }
    }

    func perform(_ command: String, _ item: String) async {
        do {
            switch command {
            case "open":
                try await open(item)
                say("window \(Self.window(showing: item)) shows item \(item)")
            case "focus":
                try await app.focus(window: Self.window(showing: item))
                say("focused \(Self.window(showing: item))")
            case "can":
                let words = item.split(separator: " ").map(String.init)
                guard let shown = words.first, windows.withLock({ $0[shown] != nil }) else { return say("error: no window shows that item") }
                windows.withLock { $0[shown] = Array(words.dropFirst()) }
                try await app.setActivationConditions(ActivationConditions(can: Array(words.dropFirst()), prefers: [shown]), for: Self.window(showing: shown))
                say("window \(Self.window(showing: shown)) can take \(words.dropFirst().joined(separator: " "))")
            case "close":
                try await app.close(window: Self.window(showing: item))
                windows.withLock { $0[item] = nil }
                say("closed \(Self.window(showing: item))")
            default:
                say("error: unknown command \(command); use open, focus, can, close or quit")
            }
        } catch {
            say("error: \(error)")
        }
    }

    func continueUserActivity(_ continuation: IncomingContinuation) async throws -> String {
        guard case .string(let item) = continuation.userActivity.userInfo["item"] else {
            throw ViewerError("the activity names no item")
        }
        if let window = continuation.window {
            try await app.focus(window: window)
            say("item \(item) continued in open window \(window)")
            return window
        }
        try await open(item)
        say("item \(item) continued in new window \(Self.window(showing: item))")
        return Self.window(showing: item)
    }

    func didFailToContinueUserActivity(withType type: String, error: HandoffError) async {
        say("failed to continue: \(error)")
    }
}

struct ViewerError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
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

let arguments = CommandLine.arguments
let socket = arguments.firstIndex(of: "--socket").flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
let app = HandoffApp(appID: "org.handoff.example.Viewer", continues: [itemType], socketPath: socket)
let viewer = Viewer(app: app)
do {
    try await app.connect()
    // Reopen the windows of last time, as they were.
    for (window, activity) in await app.restoredWindows.sorted(by: { $0.key < $1.key }) {
        if case .string(let item) = activity.userInfo["item"], window == Viewer.window(showing: item) {
            try await viewer.open(item)
            say("restored window \(window) showing item \(item)")
        }
    }
    say("ready")
} catch {
    say("waiting for handoffd: \(error)")
}
await withDiscardingTaskGroup { group in
    group.addTask { await app.run(receiver: viewer) }
    while let line = await nextLine(), line != "quit" {
        let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
        guard let command = parts.first else { continue }
        await viewer.perform(command, parts.count > 1 ? parts[1] : "")
    }
    group.cancelAll()
}
