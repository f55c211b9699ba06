#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import Logging
import Synchronization

/// The device's settings that change while it runs, above all the handoff switch
/// (docs/local-api.md, "Settings"). Every feature that deals with the other devices reads
/// `isOn` where it decides: discovery before it advertises, the listener as it accepts, the
/// sessions before they dial, the invites before they open, the offers before they ask for a
/// notification. A change is announced (`.settingsChanged`), and the composition root makes
/// each feature follow it at once.
///
/// Kept in `settings.json` in the state directory (0600), written before the change takes
/// effect: a switch turned off stays off across restarts.
package final class DeviceSwitch: Sendable {
    package static let fileName = "settings.json"

    private let path: String
    private let announce: Announce
    private struct State {
        /// As the user set them (kept in the file).
        var settings: DeviceSettings
        /// `handoff = false` in handoffd.toml: off, whatever `settings` says.
        var allowed = true
        /// `[clipboard] enabled = false` in handoffd.toml: the clipboard is off, whatever
        /// `settings` says.
        var clipboardAllowed = true
        /// What is in effect.
        var effective: DeviceSettings {
            var s = settings
            s.handoff = s.handoff && allowed
            s.clipboard = s.clipboard && clipboardAllowed
            return s
        }
        /// Who waits in `waitUntilOn`, by key (so that a cancelled wait can take itself out).
        var waitingForOn: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
    }

    private let state: Mutex<State>
    /// Changes one at a time, each written before the next is read.
    private let writing = Mutex(())

    /// Reads the settings kept in `stateDirectory`; an unreadable file is moved aside (and
    /// logged), and handoff is off.
    package init(stateDirectory: String, allowed: Bool = true, clipboardAllowed: Bool = true, announce: @escaping Announce, logger: Logger) {
        path = stateDirectory + "/" + Self.fileName
        self.announce = announce
        var settings = DeviceSettings()
        do {
            if let bytes = try PrivateFiles.read(path, maximumSize: 64 * 1024) {
                settings = try JSONDecoder().decode(DeviceSettings.self, from: Data(bytes))
            }
        } catch {
            // The file was there, so the user may have turned handoff off: it stays off (a
            // privacy switch fails closed) until they turn it on; status and doctor say it is off.
            settings.handoff = false
            let aside = PrivateFiles.quarantine(path)
            logger.warning("the device's settings are unreadable; moved them aside, and handoff stays off until turned on", metadata: ["path": "\(aside)"])
        }
        state = Mutex(State(settings: settings, allowed: allowed, clipboardAllowed: clipboardAllowed))
    }

    /// The settings in effect.
    package var settings: DeviceSettings { state.withLock { $0.effective } }

    /// Whether handoff runs between this device and the others.
    package var isOn: Bool { state.withLock { $0.effective.handoff } }

    /// Whether handoffd.toml allows handoff (`handoff = false` does not) and the clipboard
    /// (`[clipboard] enabled = false` does not); applied at once on reload, announced when what
    /// is in effect changes.
    package func allow(_ allowed: Bool, clipboard: Bool = true) {
        writing.withLock { _ in
            let (before, after, woken) = state.withLock { s -> (DeviceSettings, DeviceSettings, [CheckedContinuation<Void, Never>]) in
                let before = s.effective
                s.allowed = allowed
                s.clipboardAllowed = clipboard
                guard s.effective.handoff else { return (before, s.effective, []) }
                defer { s.waitingForOn.removeAll() }
                return (before, s.effective, Array(s.waitingForOn.values))
            }
            for waiter in woken { waiter.resume() }
            if before != after { announce(.settingsChanged(after)) }
        }
    }

    /// Applies `change`, keeps it, and announces it if anything changed; the settings as they
    /// now are.
    package func change(_ change: SettingsChange) throws(DaemonError) -> DeviceSettings {
        try writing.withLock { _ throws(DaemonError) -> DeviceSettings in
            let (old, allowed, clipboardAllowed) = state.withLock { ($0.settings, $0.allowed, $0.clipboardAllowed) }
            if change.handoff == true, !allowed {
                throw DaemonError(.handoffOff, "handoff is turned off in handoffd.toml (handoff = false); remove that line and reload handoffd to turn it on")
            }
            if change.clipboard == true, !clipboardAllowed {
                throw DaemonError(
                    .clipboardOff, "the clipboard is turned off in handoffd.toml ([clipboard] enabled = false); remove that line and reload handoffd to turn it on"
                )
            }
            var new = old
            if let handoff = change.handoff { new.handoff = handoff }
            if let clipboard = change.clipboard { new.clipboard = clipboard }
            guard new != old else { return settings }
            let bytes: [UInt8]
            do {
                bytes = Array(try JSONEncoder().encode(new))
            } catch {
                throw DaemonError(.io, "cannot encode the device's settings", cause: error)
            }
            try PrivateFiles.writeAtomically(bytes, to: path)
            let (effective, woken) = state.withLock { s -> (DeviceSettings, [CheckedContinuation<Void, Never>]) in
                s.settings = new
                guard s.effective.handoff else { return (s.effective, []) }
                defer { s.waitingForOn.removeAll() }
                return (s.effective, Array(s.waitingForOn.values))
            }
            for waiter in woken { waiter.resume() }
            announce(.settingsChanged(effective))
            return effective
        }
    }

    /// Returns once handoff is on (at once if it is), or the calling task is cancelled.
    package func waitUntilOn() async {
        let key = state.withLock { s -> Int in
            s.nextWaiter += 1
            return s.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.effective.handoff || Task.isCancelled { return true }
                    s.waitingForOn[key] = done
                    return false
                }
                if now { done.resume() }
            }
        } onCancel: {
            state.withLock { $0.waitingForOn.removeValue(forKey: key) }?.resume()
        }
    }
}

extension DaemonError.Code {
    /// What needs handoff on was asked while it is off here.
    public static let handoffOff = Self(.handoffOff)
    /// The clipboard was asked for while it is off here.
    public static let clipboardOff = Self(.clipboardOff)
}
