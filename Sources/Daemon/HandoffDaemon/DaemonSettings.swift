#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonClipboard
import DaemonContinue
import DaemonCore
import DaemonDocuments
import DaemonHistory
import HandoffAPI
import HandoffDiscovery
import HandoffModel
import HandoffSystem
import HandoffWideArea

#if canImport(Glibc)
import Glibc
#endif

/// handoffd's settings: defaults, then `/etc/handoff/handoffd.toml`, then
/// `$XDG_CONFIG_HOME/handoff/handoffd.toml` (each overriding the one before), then flags.
/// `config/handoffd.toml` documents every key; an unknown key or a bad value stops the daemon with
/// the file, the line and the reason.
public struct DaemonSettings: Sendable, Equatable {
    public var port = DaemonConfiguration.defaultPeerPort
    public var listen = ["0.0.0.0", "::"]
    public var maxActivityBytes = ActivityLimits.defaultMaximumEncodedSize
    public var logLevel = "info"
    public var peers: [String] = []
    public var browseDomains: [String] = []
    /// What opens a continued activity's web page when no app here handles its type.
    public var browser = "xdg-open"
    /// Activity type → command line, ahead of the apps' `.desktop` files.
    public var handlers: [String: String] = [:]
    /// `handoff`: false turns handoff off on this device and keeps it off whatever the switch
    /// says (a managed machine's policy); true or absent, the switch decides (`DeviceSwitch`).
    public var handoffAllowed = true
    /// `[notifications] enabled`: the desktop shows what the other devices are doing.
    public var notifications = true
    /// `[notifications] muted_types`: activity types never shown.
    public var mutedNotificationTypes: [String] = []
    /// `[web_domains] off`: apps' claims the user turned off (docs/apps.md, "Web pages into apps").
    public var webDomainsOff: [String] = []
    /// `[documents] follow`: the desktop's recently-used list makes documents current
    /// (docs/apps.md, "Documents from any app").
    public var documentsFollow = false
    /// `[documents] folders`: besides the home, where documents are offered from and looked for;
    /// absolute, or `~/` for the home.
    public var documentFolders: [String] = []
    /// `[documents] max_size`: larger files are not offered.
    public var documentsMaxSize: Int64 = DocumentSettings.defaultMaximumSize
    /// `[history]`: whether the recent activities are kept, and how many and how many bytes
    /// (docs/apps.md, "History").
    public var historyEnabled = true
    public var historyMaxEntries = HistoryStore.Limits.defaultEntries
    public var historyMaxBytes = HistoryStore.Limits.defaultBytes

    /// `[clipboard]` (docs/clipboard.md): `enabled = false` keeps the clipboard off whatever the
    /// switch says; how long a copy is given out; the largest form announced or pasted.
    public var clipboardAllowed = true
    public var clipboardLifetime = Int(ClipboardSettings.defaultLifetimeSeconds)
    public var clipboardMaxSize: Int64 = ClipboardSettings.defaultMaximumSize

    /// `[wide_area]`: DNS-SD in a unicast zone (docs/discovery.md, "Beyond one link"), when a
    /// `domain` is given: where updates and queries go (nil: found from the zone), the TSIG key
    /// that signs updates (nil: browse only), how often the zone is browsed, the records' TTL.
    public var wideAreaDomain: String?
    public var wideAreaServer: DNSServer?
    public var wideAreaKeyFile: String?
    public var wideAreaBrowseInterval = 60
    public var wideAreaTTL = 120

    public static let logLevels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    public init() {}

    /// The files read when no `--config` is given, lowest precedence first.
    public static func defaultFiles(environment: [String: String] = ProcessInfo.processInfo.environment) -> [String] {
        ["/etc/handoff/handoffd.toml", HandoffPaths.configDirectory(environment: environment) + "/handoffd.toml"]
    }

    /// Applies each existing file in order; returns the ones that were read.
    public mutating func load(files: [String], requireAll: Bool = false) throws(ConfigFile.ParseError) -> [String] {
        var read: [String] = []
        for path in files {
            guard let data = FileManager.default.contents(atPath: path) else {
                if requireAll || FileManager.default.fileExists(atPath: path) {
                    throw ConfigFile.ParseError(path: path, line: 0, reason: "cannot read the file")
                }
                continue
            }
            guard let text = String(data: data, encoding: .utf8) else {
                throw ConfigFile.ParseError(path: path, line: 0, reason: "the file is not UTF-8 text")
            }
            try apply(ConfigFile(path: path, text: text))
            read.append(path)
        }
        return read
    }

    public mutating func apply(_ file: ConfigFile) throws(ConfigFile.ParseError) {
        let keys = Dictionary(uniqueKeysWithValues: Self.keys.map { ($0.name, $0) })
        for entry in file.entries {
            func fail(_ reason: String) -> ConfigFile.ParseError {
                ConfigFile.ParseError(path: file.path, line: entry.line, reason: reason)
            }
            if let key = keys[entry.key] {
                do throws(SettingRefusal) {
                    try key.read(entry.value, &self)
                } catch {
                    throw fail(error.reason)
                }
                continue
            }
            // `[handlers]`: its keys are activity types.
            guard entry.key.hasPrefix("handlers.") else {
                throw fail("unknown key \(entry.key) (every key is listed in config/handoffd.toml)")
            }
            let type = String(entry.key.dropFirst("handlers.".count))
            do {
                try ActivityContent.validateType(type)
            } catch {
                throw fail("[handlers] \(type) is not an activity type: \(error.message)")
            }
            guard case .string(let text) = entry.value else {
                throw fail("[handlers] \"\(type)\" must be a \"command line\" (%f is the activity's file)")
            }
            do {
                _ = try ExecLine(parsing: text)
            } catch {
                throw fail("[handlers] \"\(type)\": \(error.description)")
            }
            handlers[type] = text
        }
    }
}

extension DaemonSettings {
    /// What `[documents]` says, for a user whose home is `home` (`~/` is expanded to it).
    package func documents(home: String) -> DocumentSettings {
        let folders = documentFolders.map { $0.hasPrefix("~/") ? home + "/" + $0.dropFirst(2) : $0 }
        return DocumentSettings(follow: documentsFollow, folders: DocumentFolders(home: home, folders: folders), maximumSize: documentsMaxSize)
    }

    /// What `[clipboard]` says of copies.
    package var clipboard: ClipboardSettings {
        ClipboardSettings(lifetimeSeconds: UInt32(clipboardLifetime), maximumSize: clipboardMaxSize)
    }

    /// A domain name as `[wide_area] domain` takes it: fully qualified, lowercased; nil if it is none.
    static func zoneName(_ text: String) -> String? {
        let name = (text.hasSuffix(".") ? String(text.dropLast()) : text).lowercased()
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        guard !name.isEmpty, name.utf8.count <= 200, labels.allSatisfy({ label in
            (1...63).contains(label.utf8.count) && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
        }) else { return nil }
        return name + "."
    }

    /// What `[wide_area]` says, with its key read (or why it cannot be); nil without a domain.
    /// `~/` is the home; the names we put in the zone are kept in `stateDirectory`.
    package func wideArea(home: String, stateDirectory: String) -> WideAreaConfiguration? {
        guard let domain = wideAreaDomain else { return nil }
        var key: TSIGKey?
        var keyProblem: String?
        if let file = wideAreaKeyFile {
            let path = file.hasPrefix("~/") ? home + "/" + file.dropFirst(2) : file
            do {
                key = try TSIGKey.load(path: path)
            } catch {
                keyProblem = "registering in \(domain) is off: \(error.description)"
            }
        }
        var configuration = WideAreaConfiguration(
            domain: domain, server: wideAreaServer, key: key, leftoverFile: stateDirectory + "/wide-area-names", addresses: { LocalAddresses.routable() }
        )
        configuration.keyProblem = keyProblem
        configuration.browseInterval = .seconds(wideAreaBrowseInterval)
        configuration.ttl = wideAreaTTL
        return configuration
    }

    /// What `[history]` says.
    package var history: HistoryStore.Limits {
        HistoryStore.Limits(enabled: historyEnabled, maximumEntries: historyMaxEntries, maximumBytes: historyMaxBytes)
    }
}
