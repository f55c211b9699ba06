#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonCore
import HandoffModel
import Synchronization

/// Where this device last had a session with each other device of the account, from which of its
/// own addresses, and the other's advert then: kept in the state directory (`dialled`, 0600) so
/// that a device that starts dials them at once — only from a network it was on then — while
/// discovery is still asking Avahi (docs/discovery.md, "First contact"). A cache: a missing or
/// unreadable file costs only that head start; a stale entry at most a second of it.
package final class DialMemory: Sendable {
    package struct Entry: Codable, Equatable, Sendable {
        package var device: DeviceID
        package var host: String
        package var port: Int
        /// The advert's instance name the dial was addressed to: a hello to it is answered only
        /// while that device runs under that name (docs/security.md, "A captured ClientHello").
        package var instance: String
        /// This device's own address on that session: the entry is dialled only while this
        /// device has it again (on the same network), never from another network.
        package var via: String

        package init(device: DeviceID, host: String, port: Int, instance: String, via: String) {
            self.device = device
            self.host = host
            self.port = port
            self.instance = instance
            self.via = via
        }
    }

    private struct File: Codable {
        var devices: [Entry]
    }

    /// More than an account's devices could ever need; a larger file is not read.
    static let maximumFileSize = 64 * 1024
    static let maximumEntries = 256

    private let path: String?
    private let entries: Mutex<[DeviceID: Entry]>

    /// `path` nil: remembered for this run only (tests).
    package init(path: String?) {
        self.path = path
        var loaded: [DeviceID: Entry] = [:]
        if let path, let bytes = try? PrivateFiles.read(path, maximumSize: Self.maximumFileSize),
            let file = try? JSONDecoder().decode(File.self, from: Data(bytes))
        {
            for entry in file.devices.prefix(Self.maximumEntries) where (1...65535).contains(entry.port) { loaded[entry.device] = entry }
        }
        entries = Mutex(loaded)
    }

    package var all: [Entry] { entries.withLock { Array($0.values) }.sorted { $0.device < $1.device } }

    package func remember(_ entry: Entry) {
        entries.withLock { e in
            guard e[entry.device] != entry else { return }
            e[entry.device] = entry
            save(e)
        }
    }

    package func forget(_ id: DeviceID) {
        entries.withLock { e in
            if e.removeValue(forKey: id) != nil { save(e) }
        }
    }

    /// Forgets every device but `members` (one removed meanwhile, or another account's).
    package func keep(only members: Set<DeviceID>) {
        entries.withLock { e in
            let before = e.count
            e = e.filter { members.contains($0.key) }
            if e.count != before { save(e) }
        }
    }

    /// Under the lock, so that saves land in the order of the changes. Not made durable (no
    /// fsync): losing the latest change only costs the next start its head start, and the rename
    /// never leaves half a file.
    private func save(_ entries: [DeviceID: Entry]) {
        let devices = entries.values.sorted { $0.device < $1.device }
        guard let path, let bytes = try? JSONEncoder().encode(File(devices: devices)) else { return }
        try? PrivateFiles.writeAtomically(Array(bytes), to: path, durable: false)
    }
}
