#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonCore
import HandoffModel
import HandoffSystem
import Logging

/// Windows' state-restoration activities (docs/apps.md, "State restoration"): an app saves one per
/// window, and gets the set back when it registers again, to reopen its windows as they were.
/// One file per app id and window, under the state directory, 0600 in 0700 directories, written
/// atomically; bounded in count and size, since any process of the user can save them.
package actor RestorationStore {
    /// At most this many windows are kept per app: a save for one more is refused.
    package static let windowsPerApp = 64
    /// And for at most this many app ids: with the activity cap, what any process of the user
    /// can make handoffd keep here is bounded (64 × 64 × 64 KiB at the default cap).
    package static let appsAtMost = 64
    package static let maximumWindowIDBytes = 64

    private let directory: String
    private let limits: ActivityLimits
    private let logger: Logger

    /// Saves are fsync'd: on the disk thread, never on the event loop.
    package nonisolated var unownedExecutor: UnownedSerialExecutor { DiskThread.shared.asUnownedSerialExecutor() }

    package init(stateDirectory: String, limits: ActivityLimits, logger: Logger) {
        self.directory = stateDirectory + "/restoration"
        self.limits = limits
        self.logger = logger
    }

    /// Keeps `activity` as the restoration activity of `window` of `appID`, replacing the one
    /// before.
    package func save(_ activity: Activity, appID: String, window: String) throws(DaemonError) {
        try Self.check(appID: appID, window: window)
        do {
            _ = try activity.validate(now: activity.updatedAt, limits: limits)
        } catch {
            throw DaemonError(error)
        }
        let appDirectory = directory + "/" + appID
        let path = appDirectory + "/" + Self.fileName(of: window)
        if !FileManager.default.fileExists(atPath: path), windows(in: appDirectory).count >= Self.windowsPerApp {
            throw DaemonError(
                .tooManyWindows, "\(appID) already keeps \(Self.windowsPerApp) windows' restoration activities; remove those of closed windows first"
            )
        }
        if !FileManager.default.fileExists(atPath: appDirectory),
            ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).count >= Self.appsAtMost
        {
            throw DaemonError(.tooManyWindows, "restoration activities are kept for \(Self.appsAtMost) apps already")
        }
        try PrivateFiles.ensureDirectory(directory)
        try PrivateFiles.ensureDirectory(appDirectory)
        try PrivateFiles.writeAtomically(ActivityEncoding.encode(activity), to: path)
    }

    /// Every window's restoration activity of `appID`, by window. Unreadable files are moved
    /// aside (and logged); expired activities are dropped.
    package func restoration(of appID: String, now: Timestamp = .now()) -> [String: Activity] {
        guard (try? Self.check(appID: appID)) != nil else { return [:] }
        let appDirectory = directory + "/" + appID
        var found: [String: Activity] = [:]
        for name in windows(in: appDirectory) {
            let path = appDirectory + "/" + name
            guard let window = Self.window(ofFileName: name) else { continue }
            do {
                guard let bytes = try PrivateFiles.read(path, maximumSize: limits.maximumEncodedSize) else { continue }
                let activity = try ActivityEncoding.decode(bytes, maximumSize: limits.maximumEncodedSize)
                if activity.isExpired(at: now) {
                    PrivateFiles.remove(path)
                    continue
                }
                found[window] = activity
            } catch {
                let aside = PrivateFiles.quarantine(path)
                logger.warning("a window's restoration activity is unreadable; moved it aside", metadata: ["path": "\(aside)", "error": "\(error)"])
            }
        }
        return found
    }

    /// Forgets `window`'s restoration activity (the user closed the window).
    package func remove(appID: String, window: String) throws(DaemonError) {
        try Self.check(appID: appID, window: window)
        PrivateFiles.remove(directory + "/" + appID + "/" + Self.fileName(of: window))
    }

    /// Forgets every app's restoration activities that `deletes` (saved activities deleted,
    /// docs/apps.md "Deleting saved activities"); returns how many.
    package func remove(where deletes: (Activity) -> Bool) -> Int {
        var removed = 0
        for appID in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] where (try? Self.check(appID: appID)) != nil {
            for (window, activity) in restoration(of: appID) where deletes(activity) {
                PrivateFiles.remove(directory + "/" + appID + "/" + Self.fileName(of: window))
                removed += 1
            }
        }
        return removed
    }

    // MARK: Names

    static func check(appID: String, window: String) throws(DaemonError) {
        try check(appID: appID)
        try check(window: window)
    }

    /// App ids are reverse-DNS names, as desktop file ids are: they name a directory here.
    static func check(appID: String) throws(DaemonError) {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
        guard !appID.isEmpty, appID.utf8.count <= 255, appID.allSatisfy(allowed.contains), !appID.hasPrefix("."), !appID.contains("..") else {
            throw DaemonError(.invalidAppID, "app id \"\(appID.prefix(64))\" is not a reverse-DNS name (letters, digits, . _ -; like org.example.Notes)")
        }
    }

    static func check(window: String) throws(DaemonError) {
        guard !window.isEmpty, window.utf8.count <= maximumWindowIDBytes else {
            throw DaemonError(.invalidWindowID, "a window id is 1 to \(maximumWindowIDBytes) bytes")
        }
    }

    /// A window id as a file name: its UTF-8 bytes in hex, so that any id is a safe name and
    /// comes back whole.
    static func fileName(of window: String) -> String {
        window.utf8.lowercaseHex + ".activity"
    }

    static func window(ofFileName name: String) -> String? {
        guard name.hasSuffix(".activity") else { return nil }
        let hex = Array(name.dropLast(".activity".count).utf8)
        guard !hex.isEmpty, hex.count % 2 == 0, hex.count <= 2 * maximumWindowIDBytes else { return nil }
        // Lower-case hex only, as `fileName` writes it: one window, one file name.
        let digits = Array("0123456789abcdef".utf8)
        var bytes: [UInt8] = []
        for i in stride(from: 0, to: hex.count, by: 2) {
            guard let high = digits.firstIndex(of: hex[i]), let low = digits.firstIndex(of: hex[i + 1]) else { return nil }
            bytes.append(UInt8(high << 4 | low))
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private func windows(in appDirectory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: appDirectory)) ?? []).filter { $0.hasSuffix(".activity") }
    }
}

extension DaemonError.Code {
    package static let invalidAppID = Self(.invalidAppID)
    package static let invalidWindowID = Self(.invalidWindowID)
    package static let tooManyWindows = Self(.tooManyWindows)
}
