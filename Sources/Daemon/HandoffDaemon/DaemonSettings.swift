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
        for entry in file.entries {
            func fail(_ reason: String) -> ConfigFile.ParseError {
                ConfigFile.ParseError(path: file.path, line: entry.line, reason: reason)
            }
            switch entry.key {
            case "port":
                guard case .integer(let v) = entry.value, (1...65535).contains(v) else {
                    throw fail("port must be an integer from 1 to 65535")
                }
                port = Int(v)
            case "listen":
                guard case .array(let items) = entry.value, !items.isEmpty else {
                    throw fail("listen must be a non-empty array of addresses, e.g. [\"0.0.0.0\", \"::\"]")
                }
                var addresses: [String] = []
                for item in items {
                    guard case .string(let a) = item, PeerAddress.isIPAddress(a) else {
                        throw fail("listen holds \(item.typeName == "a string" ? "something that is not an IP address" : item.typeName); give IP addresses such as \"0.0.0.0\" or \"::\"")
                    }
                    addresses.append(a)
                }
                listen = addresses
            case "max_activity_bytes":
                guard case .integer(let v) = entry.value, v >= 1024, v <= 16 * 1024 * 1024 else {
                    throw fail("max_activity_bytes must be an integer from 1024 to 16777216")
                }
                maxActivityBytes = Int(v)
            case "handoff":
                guard case .boolean(let v) = entry.value else { throw fail("handoff must be true or false") }
                handoffAllowed = v
            case "log_level":
                guard case .string(let v) = entry.value, DaemonSettings.logLevels.contains(v) else {
                    throw fail("log_level must be one of \(DaemonSettings.logLevels.map { "\"\($0)\"" }.joined(separator: ", "))")
                }
                logLevel = v
            case "peers":
                guard case .array(let items) = entry.value else { throw fail("peers must be an array of \"host:port\" strings") }
                var list: [String] = []
                for item in items {
                    guard case .string(let text) = item, (try? PeerAddress(parsing: text, defaultPort: port)) != nil else {
                        throw fail("peers holds something that is not \"host:port\" (e.g. \"192.168.1.20:47810\")")
                    }
                    list.append(text)
                }
                peers = list
            case "browse_domains":
                guard case .array(let items) = entry.value else { throw fail("browse_domains must be an array of domain names") }
                var list: [String] = []
                for item in items {
                    guard case .string(let domain) = item, !domain.isEmpty, !domain.contains(" ") else {
                        throw fail("browse_domains holds something that is not a domain name (e.g. \"example.com.\")")
                    }
                    list.append(domain)
                }
                browseDomains = list
            case "browser":
                guard case .string(let text) = entry.value else { throw fail("browser must be a \"command line\" (e.g. \"firefox --new-tab\")") }
                do {
                    _ = try ExecLine(parsing: text)
                } catch {
                    throw fail("browser: \(error.description)")
                }
                browser = text
            case "notifications.enabled":
                guard case .boolean(let v) = entry.value else { throw fail("[notifications] enabled must be true or false") }
                notifications = v
            case "notifications.muted_types":
                guard case .array(let items) = entry.value else { throw fail("[notifications] muted_types must be an array of activity types") }
                var types: [String] = []
                for item in items {
                    guard case .string(let type) = item, (try? ActivityContent.validateType(type)) != nil else {
                        throw fail("[notifications] muted_types holds something that is not an activity type (e.g. \"org.example.notes.edit\")")
                    }
                    types.append(type)
                }
                mutedNotificationTypes = types
            case "web_domains.off":
                guard case .array(let items) = entry.value else { throw fail("[web_domains] off must be an array of claimed domains") }
                var claims: [String] = []
                for item in items {
                    guard case .string(let text) = item, let claim = WebDomainClaim(text) else {
                        throw fail("[web_domains] off holds something that is not a claimed domain (e.g. \"example.com\" or \"*.example.org\")")
                    }
                    claims.append(claim.description)
                }
                webDomainsOff = claims
            case "documents.follow":
                guard case .boolean(let v) = entry.value else { throw fail("[documents] follow must be true or false") }
                documentsFollow = v
            case "documents.folders":
                guard case .array(let items) = entry.value else { throw fail("[documents] folders must be an array of folders (e.g. [\"~/Sync\"])") }
                var folders: [String] = []
                var names: Set<String> = []
                for item in items {
                    guard case .string(let text) = item, text.hasPrefix("/") || text.hasPrefix("~/"),
                        let name = text.split(separator: "/").last.map(String.init), DocumentPlace.isFolderName(name)
                    else {
                        throw fail("[documents] folders holds something that is not a folder: give absolute paths or ~/… (e.g. \"~/Sync\")")
                    }
                    guard name != DocumentPlace.home, names.insert(name).inserted else {
                        throw fail("[documents] folders: \(text)'s name, \(name), is \(name == DocumentPlace.home ? "the home's" : "another folder's too"); the devices tell folders apart by their last part")
                    }
                    folders.append(text)
                }
                documentFolders = folders
            case "documents.max_size":
                guard case .integer(let v) = entry.value, v >= 0 else { throw fail("[documents] max_size must be a number of bytes (e.g. 1073741824)") }
                documentsMaxSize = v
            case "history.enabled":
                guard case .boolean(let v) = entry.value else { throw fail("[history] enabled must be true or false") }
                historyEnabled = v
            case "history.max_entries":
                guard case .integer(let v) = entry.value, (1...10_000).contains(v) else { throw fail("[history] max_entries must be an integer from 1 to 10000") }
                historyMaxEntries = Int(v)
            case "history.max_bytes":
                guard case .integer(let v) = entry.value, (64 * 1024...Int64(HistoryStore.Limits.largestBytes)).contains(v) else {
                    throw fail("[history] max_bytes must be an integer from 65536 to \(HistoryStore.Limits.largestBytes)")
                }
                historyMaxBytes = Int(v)
            case "wide_area.domain":
                guard case .string(let text) = entry.value, let domain = Self.zoneName(text) else {
                    throw fail("[wide_area] domain must be a domain name (e.g. \"handoff.example.net\")")
                }
                wideAreaDomain = domain
            case "wide_area.server":
                guard case .string(let text) = entry.value, let server = try? PeerAddress(parsing: text, defaultPort: 53), PeerAddress.isIPAddress(server.host) else {
                    throw fail("[wide_area] server must be the DNS server's IP address, with a port if not 53 (e.g. \"192.0.2.53\" or \"[2001:db8::53]:5353\")")
                }
                wideAreaServer = DNSServer(address: server.host, port: UInt16(server.port))
            case "wide_area.key_file":
                guard case .string(let text) = entry.value, text.hasPrefix("/") || text.hasPrefix("~/") else {
                    throw fail("[wide_area] key_file must be an absolute path or ~/… (the key tsig-keygen wrote)")
                }
                wideAreaKeyFile = text
            case "wide_area.browse_interval":
                guard case .integer(let v) = entry.value, (5...3600).contains(v) else { throw fail("[wide_area] browse_interval must be a number of seconds from 5 to 3600") }
                wideAreaBrowseInterval = Int(v)
            case "wide_area.ttl":
                guard case .integer(let v) = entry.value, (10...86400).contains(v) else { throw fail("[wide_area] ttl must be a number of seconds from 10 to 86400") }
                wideAreaTTL = Int(v)
            case "clipboard.enabled":
                guard case .boolean(let v) = entry.value else { throw fail("[clipboard] enabled must be true or false") }
                clipboardAllowed = v
            case "clipboard.lifetime":
                guard case .integer(let v) = entry.value, (1...3600).contains(v) else { throw fail("[clipboard] lifetime must be a number of seconds from 1 to 3600") }
                clipboardLifetime = Int(v)
            case "clipboard.max_size":
                guard case .integer(let v) = entry.value, (0...ClipboardNotice.maximumSize).contains(v) else {
                    throw fail("[clipboard] max_size must be a number of bytes (e.g. 67108864)")
                }
                clipboardMaxSize = v
            case let key where key.hasPrefix("handlers."):
                let type = String(key.dropFirst("handlers.".count))
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
            default:
                throw fail("unknown key \(entry.key) (every key is listed in config/handoffd.toml)")
            }
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
