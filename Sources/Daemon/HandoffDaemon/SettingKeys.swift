import DaemonClipboard
import DaemonContinue
import DaemonCore
import DaemonDocuments
import DaemonHistory
import HandoffDiscovery
import HandoffModel
import HandoffWideArea

/// One key of handoffd.toml, said once: how its value is read and checked (a range is written
/// once, and the refusal's words are made from it), and whether a running daemon takes a change
/// on reload or only at its next start (`restart`: the name reload reports then).
struct SettingKey {
    /// As the file spells it: `port`, `clipboard.lifetime` (key `lifetime` of `[clipboard]`).
    let name: String
    let restart: String?
    let read: (ConfigFile.Value, inout DaemonSettings) throws(SettingRefusal) -> Void
    /// The key's setting differs between `next` and `running` (for those a restart applies).
    let differs: (_ next: DaemonSettings, _ running: DaemonSettings) -> Bool

    /// How a refusal names the key: `port`, `[clipboard] lifetime`.
    static func label(_ name: String) -> String {
        guard let dot = name.firstIndex(of: ".") else { return name }
        return "[\(name[..<dot])] \(name[name.index(after: dot)...])"
    }

    /// A key whose value is read by `parse` into `path`.
    static func value<T: Equatable>(
        _ name: String, _ path: WritableKeyPath<DaemonSettings, T>, restart: String? = nil,
        parse: @escaping (ConfigFile.Value, DaemonSettings) throws(SettingRefusal) -> T
    ) -> SettingKey {
        SettingKey(
            name: name, restart: restart,
            read: { value, settings throws(SettingRefusal) in settings[keyPath: path] = try parse(value, settings) },
            differs: { $0[keyPath: path] != $1[keyPath: path] }
        )
    }

    static func boolean(_ name: String, _ path: WritableKeyPath<DaemonSettings, Bool>) -> SettingKey {
        value(name, path) { value, _ throws(SettingRefusal) in
            guard case .boolean(let v) = value else { throw SettingRefusal("\(label(name)) must be true or false") }
            return v
        }
    }

    /// An integer within `range`, described as `what` ("an integer", "a number of seconds").
    static func integer<T: BinaryInteger & Sendable>(
        _ name: String, _ path: WritableKeyPath<DaemonSettings, T>, in range: ClosedRange<Int64>, as what: String = "an integer", restart: String? = nil
    ) -> SettingKey {
        value(name, path, restart: restart) { value, _ throws(SettingRefusal) in
            guard case .integer(let v) = value, range.contains(v) else {
                throw SettingRefusal("\(label(name)) must be \(what) from \(range.lowerBound) to \(range.upperBound)")
            }
            return T(v)
        }
    }

    /// An array whose every item `item` reads (or refuses, with `refusal`).
    static func list<T: Equatable>(
        _ name: String, _ path: WritableKeyPath<DaemonSettings, [T]>, restart: String? = nil, nonEmpty: Bool = false, notAnArray: String,
        refusal: @escaping (ConfigFile.Value) -> String, item: @escaping (ConfigFile.Value, DaemonSettings) -> T?
    ) -> SettingKey {
        value(name, path, restart: restart) { value, settings throws(SettingRefusal) in
            guard case .array(let items) = value, !(nonEmpty && items.isEmpty) else { throw SettingRefusal("\(label(name)) must be \(notAnArray)") }
            var list: [T] = []
            for entry in items {
                guard let read = item(entry, settings) else { throw SettingRefusal(refusal(entry)) }
                list.append(read)
            }
            return list
        }
    }
}

/// Why a value is refused, in words for the user (the file and the line are added).
struct SettingRefusal: Error {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}

extension DaemonSettings {
    /// Every key of handoffd.toml but `[handlers]` (whose keys are activity types), by section
    /// (config/handoffd.toml documents each): `apply` reads from here, and `HandoffDaemon.reload`
    /// says which changes wait for a restart from here.
    static var keys: [SettingKey] {
        deviceKeys + notificationKeys + webDomainKeys + documentKeys + historyKeys + wideAreaKeys + clipboardKeys
    }

    /// The device and its network: the top of the file.
    static var deviceKeys: [SettingKey] {
        [
            SettingKey(
                name: "port", restart: "port",
                read: { value, settings throws(SettingRefusal) in
                    guard case .integer(let v) = value, (1...65535).contains(v) else { throw SettingRefusal("port must be an integer from 1 to 65535") }
                    settings.port = Int(v)
                },
                // A daemon on a port the system chose (0) takes any port it is given next.
                differs: { next, running in next.port != running.port && running.port != 0 }
            ),
            .list(
                "listen", \.listen, restart: "listen", nonEmpty: true, notAnArray: "a non-empty array of addresses, e.g. [\"0.0.0.0\", \"::\"]",
                refusal: { item in
                    "listen holds \(item.typeName == "a string" ? "something that is not an IP address" : item.typeName); give IP addresses such as \"0.0.0.0\" or \"::\""
                },
                item: { item, _ in
                    guard case .string(let a) = item, PeerAddress.isIPAddress(a) else { return nil }
                    return a
                }
            ),
            .integer("max_activity_bytes", \.maxActivityBytes, in: 1024...16 * 1024 * 1024, restart: "max_activity_bytes"),
            .boolean("handoff", \.handoffAllowed),
            .value("log_level", \.logLevel) { value, _ throws(SettingRefusal) in
                guard case .string(let v) = value, DaemonSettings.logLevels.contains(v) else {
                    throw SettingRefusal("log_level must be one of \(DaemonSettings.logLevels.map { "\"\($0)\"" }.joined(separator: ", "))")
                }
                return v
            },
            .list(
                "peers", \.peers, restart: "peers", notAnArray: "an array of \"host:port\" strings",
                refusal: { _ in "peers holds something that is not \"host:port\" (e.g. \"192.168.1.20:47810\")" },
                item: { item, settings in
                    guard case .string(let text) = item, (try? PeerAddress(parsing: text, defaultPort: settings.port)) != nil else { return nil }
                    return text
                }
            ),
            .list(
                "browse_domains", \.browseDomains, restart: "browse_domains", notAnArray: "an array of domain names",
                refusal: { _ in "browse_domains holds something that is not a domain name (e.g. \"example.com.\")" },
                item: { item, _ in
                    guard case .string(let domain) = item, !domain.isEmpty, !domain.contains(" ") else { return nil }
                    return domain
                }
            ),
            .value("browser", \.browser) { value, _ throws(SettingRefusal) in
                guard case .string(let text) = value else { throw SettingRefusal("browser must be a \"command line\" (e.g. \"firefox --new-tab\")") }
                do throws(ExecLine.SyntaxError) {
                    _ = try ExecLine(parsing: text)
                } catch {
                    throw SettingRefusal("browser: \(error.description)")
                }
                return text
            },
        ]
    }

    /// `[notifications]` (the desktop agent's).
    static var notificationKeys: [SettingKey] {
        [
            .boolean("notifications.enabled", \.notifications),
            .list(
                "notifications.muted_types", \.mutedNotificationTypes, notAnArray: "an array of activity types",
                refusal: { _ in "[notifications] muted_types holds something that is not an activity type (e.g. \"org.example.notes.edit\")" },
                item: { item, _ in
                    guard case .string(let type) = item, (try? ActivityContent.validateType(type)) != nil else { return nil }
                    return type
                }
            ),
        ]
    }

    /// `[web_domains]` (continuing web pages into apps).
    static var webDomainKeys: [SettingKey] {
        [
            .list(
                "web_domains.off", \.webDomainsOff, notAnArray: "an array of claimed domains",
                refusal: { _ in "[web_domains] off holds something that is not a claimed domain (e.g. \"example.com\" or \"*.example.org\")" },
                item: { item, _ in
                    guard case .string(let text) = item, let claim = WebDomainClaim(text) else { return nil }
                    return claim.description
                }
            )
        ]
    }

    /// `[documents]`.
    static var documentKeys: [SettingKey] {
        [
            .boolean("documents.follow", \.documentsFollow),
            .value("documents.folders", \.documentFolders) { value, _ throws(SettingRefusal) in
                guard case .array(let items) = value else { throw SettingRefusal("[documents] folders must be an array of folders (e.g. [\"~/Sync\"])") }
                var folders: [String] = []
                var names: Set<String> = []
                for item in items {
                    guard case .string(let text) = item, text.hasPrefix("/") || text.hasPrefix("~/"),
                        let name = text.split(separator: "/").last.map(String.init), DocumentPlace.isFolderName(name)
                    else {
                        throw SettingRefusal("[documents] folders holds something that is not a folder: give absolute paths or ~/… (e.g. \"~/Sync\")")
                    }
                    guard name != DocumentPlace.home, names.insert(name).inserted else {
                        throw SettingRefusal(
                            "[documents] folders: \(text)'s name, \(name), is \(name == DocumentPlace.home ? "the home's" : "another folder's too"); the devices tell folders apart by their last part"
                        )
                    }
                    folders.append(text)
                }
                return folders
            },
            .value("documents.max_size", \.documentsMaxSize) { value, _ throws(SettingRefusal) in
                guard case .integer(let v) = value, v >= 0 else { throw SettingRefusal("[documents] max_size must be a number of bytes (e.g. 1073741824)") }
                return v
            },
        ]
    }

    /// `[history]`.
    static var historyKeys: [SettingKey] {
        [
            .boolean("history.enabled", \.historyEnabled),
            .integer("history.max_entries", \.historyMaxEntries, in: 1...10_000),
            .integer("history.max_bytes", \.historyMaxBytes, in: 64 * 1024...Int64(HistoryStore.Limits.largestBytes)),
        ]
    }

    /// `[wide_area]` (docs/discovery.md, "Beyond one link"): any change waits for a restart.
    static var wideAreaKeys: [SettingKey] {
        [
            .value("wide_area.domain", \.wideAreaDomain, restart: "wide_area") { value, _ throws(SettingRefusal) in
                guard case .string(let text) = value, let domain = Self.zoneName(text) else {
                    throw SettingRefusal("[wide_area] domain must be a domain name (e.g. \"handoff.example.net\")")
                }
                return domain
            },
            .value("wide_area.server", \.wideAreaServer, restart: "wide_area") { value, _ throws(SettingRefusal) in
                guard case .string(let text) = value, let server = try? PeerAddress(parsing: text, defaultPort: 53), PeerAddress.isIPAddress(server.host) else {
                    throw SettingRefusal(
                        "[wide_area] server must be the DNS server's IP address, with a port if not 53 (e.g. \"192.0.2.53\" or \"[2001:db8::53]:5353\")"
                    )
                }
                return DNSServer(address: server.host, port: UInt16(server.port))
            },
            .value("wide_area.key_file", \.wideAreaKeyFile, restart: "wide_area") { value, _ throws(SettingRefusal) in
                guard case .string(let text) = value, text.hasPrefix("/") || text.hasPrefix("~/") else {
                    throw SettingRefusal("[wide_area] key_file must be an absolute path or ~/… (the key tsig-keygen wrote)")
                }
                return text
            },
            .integer("wide_area.browse_interval", \.wideAreaBrowseInterval, in: 5...3600, as: "a number of seconds", restart: "wide_area"),
            .integer("wide_area.ttl", \.wideAreaTTL, in: 10...86400, as: "a number of seconds", restart: "wide_area"),
        ]
    }

    /// `[clipboard]` (docs/clipboard.md).
    static var clipboardKeys: [SettingKey] {
        [
            .boolean("clipboard.enabled", \.clipboardAllowed),
            .integer("clipboard.lifetime", \.clipboardLifetime, in: 1...3600, as: "a number of seconds"),
            .value("clipboard.max_size", \.clipboardMaxSize) { value, _ throws(SettingRefusal) in
                guard case .integer(let v) = value, (0...ClipboardNotice.maximumSize).contains(v) else {
                    throw SettingRefusal("[clipboard] max_size must be a number of bytes (e.g. 67108864)")
                }
                return v
            },
        ]
    }

    /// The settings that differ between `self` and `running` that only a restart applies, by the
    /// names reload reports (each once, in the order of `keys`).
    func restartNeeded(from running: DaemonSettings) -> [String] {
        var names: [String] = []
        for key in Self.keys {
            guard let name = key.restart, !names.contains(name), key.differs(self, running) else { continue }
            names.append(name)
        }
        return names
    }
}
