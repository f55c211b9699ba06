#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The routes of the local API (docs/local-api.md). Versioned so that a future `/v2` can live beside.
public enum LocalAPIRoute {
    /// GET: `DaemonStatus`.
    public static let status = "/v1/status"
    /// GET: `CurrentActivityResponse`; PUT `PutCurrentActivityRequest`: become current; DELETE: resign.
    public static let currentActivity = "/v1/activity/current"
    /// A file becomes the current activity, as a document.
    public static let currentDocument = "/v1/activity/current/document"
    /// GET: `HistoryResponse`, the recent activities this device saw.
    public static let history = "/v1/history"
    public static let historyDelete = "/v1/history/delete"
    public static let links = "/v1/links"
    public static let openLink = "/v1/links/open"
    /// GET: NDJSON stream of `LocalEvent`.
    public static let events = "/v1/events"
    /// GET: `AccountInfo`; POST `CreateAccountRequest`: create one.
    public static let account = "/v1/account"
    /// POST `JoinAccountRequest`: join another device's account.
    public static let accountJoin = "/v1/account/join"
    /// POST: create an invite; NDJSON of `InviteUpdate` until someone joins or it expires.
    public static let accountInvites = "/v1/account/invites"
    /// POST `SyncRequest`: exchange account state with one device now.
    public static let accountSync = "/v1/account/sync"
    /// POST: a new recovery code (on the device holding the account key): `RecoveryCodeResponse`.
    public static let accountRecoveryCode = "/v1/account/recovery-code"
    /// POST `RecoverRequest`: the account key restored here from a recovery code: `AccountInfo`.
    public static let accountRecover = "/v1/account/recover"
    /// POST `KeyTransferRequest` (on the key holder): NDJSON of `KeyTransferUpdate` until the
    /// device took the key or the offer expired; hanging up withdraws the offer.
    public static let accountTransferKey = "/v1/account/transfer-key"
    /// POST: take the account key another device offered this one: `AccountInfo`.
    public static let accountAcceptKey = "/v1/account/accept-key"
    /// POST (on the key holder): a new account key, linked from the current one: `AccountInfo`.
    public static let accountRotateKey = "/v1/account/rotate-key"
    /// POST `LeaveRequest`: forget the account here (telling the others): `LeaveResponse`.
    public static let accountLeave = "/v1/account/leave"
    /// POST `RenameDeviceRequest`: a device's name in the account: `DeviceInfo`.
    public static let devicesRename = "/v1/devices/rename"
    /// GET: `PeersResponse`.
    public static let peers = "/v1/peers"
    /// GET: `OffersResponse`, what this device can continue from the others now.
    public static let offers = "/v1/offers"
    /// POST `ContinueRequest`: fetch a peer's current activity.
    public static let `continue` = "/v1/continue"
    /// GET: `DevicesResponse`. `DELETE /v1/devices/ID` (or a unique prefix): remove a device.
    public static let devices = "/v1/devices"
    /// POST `AttachRequest`: NDJSON of `AttachEvent` while the activity stays current.
    public static let attach = "/v1/activity/current/attach"
    /// `POST /v1/continuations/ID/streams` with `Upgrade: handoff-stream`: open a continuation
    /// stream to the device the activity came from.
    public static let continuations = "/v1/continuations"
    /// GET: `StreamsResponse`; `GET /v1/streams/ID`: `StreamInfo`; `POST /v1/streams/ID` with
    /// `Upgrade: handoff-stream`: the originating app takes a requested stream.
    public static let streams = "/v1/streams"
    /// GET: `ClipboardState`; POST `ClipboardAnnouncement`: something was copied here (the
    /// desktop agent); under it, `POST /v1/clipboard/COPY/TYPE` (an upgrade, or the file socket)
    /// pastes one form of another device's copy (docs/clipboard.md).
    public static let clipboard = "/v1/clipboard"
    /// POST: NDJSON of `ClipboardHolderEvent` for as long as the desktop agent holds this
    /// device's copies: its id first, then the pastes it serves (docs/clipboard.md).
    public static let clipboardHolder = "/v1/clipboard/holder"
    /// GET: `DeviceSettings`; PUT `SettingsChange`: change them (answers the new `DeviceSettings`).
    public static let settings = "/v1/settings"

    /// POST `AppRegistration`: NDJSON of `AppEvent` for as long as the app runs (docs/apps.md);
    /// under it, `/v1/apps/REGISTRATION/windows/WINDOW[/activity|/focus|/restoration]`.
    public static let apps = "/v1/apps"

    /// What a window's requests act on: the window itself (DELETE: closed), its activity (PUT,
    /// DELETE), its focus (POST), its state-restoration activity (PUT, DELETE).
    public enum WindowPart: String, Sendable, CaseIterable {
        case window = ""
        case activity
        case focus
        case restoration
        case conditions
    }

    /// `/v1/apps/REGISTRATION/windows/WINDOW[/PART]`, the window id percent-encoded (any id is
    /// one path segment).
    public static func window(_ window: String, of registration: UUID, _ part: WindowPart = .window) -> String {
        apps + "/" + registration.lowercasedString + "/windows/" + PathSegment.escape(window) + (part == .window ? "" : "/" + part.rawValue)
    }

    /// `/v1/apps/REGISTRATION/continuations/ID`: the app's answer to a continuation.
    public static func continuationAnswer(_ continuationID: UUID, of registration: UUID) -> String {
        apps + "/" + registration.lowercasedString + "/continuations/" + continuationID.lowercasedString
    }

    public static func parseContinuationAnswer(_ path: Substring) -> (registration: UUID, continuationID: UUID)? {
        guard path.hasPrefix(apps + "/") else { return nil }
        let segments = path.dropFirst(apps.count + 1).split(separator: "/", omittingEmptySubsequences: false)
        guard segments.count == 3, segments[1] == "continuations", let registration = UUID(uuidString: String(segments[0])),
            let continuationID = UUID(uuidString: String(segments[2]))
        else { return nil }
        return (registration, continuationID)
    }

    /// The registration, window and part a window request's path names; nil for anything else.
    public static func parseWindow(_ path: Substring) -> (registration: UUID, window: String, part: WindowPart)? {
        guard path.hasPrefix(apps + "/") else { return nil }
        let segments = path.dropFirst(apps.count + 1).split(separator: "/", omittingEmptySubsequences: false)
        guard (3...4).contains(segments.count), segments[1] == "windows", let registration = UUID(uuidString: String(segments[0])),
            let window = PathSegment.strictUnescape(segments[2]), !window.isEmpty
        else { return nil }
        if segments.count == 3 { return (registration, window, .window) }
        guard let part = WindowPart(rawValue: String(segments[3])), part != .window else { return nil }
        return (registration, window, part)
    }

    public static func continuationStreams(_ continuationID: UUID) -> String {
        continuations + "/" + continuationID.lowercasedString + "/streams"
    }

    public static func stream(_ id: UUID) -> String {
        streams + "/" + id.lowercasedString
    }

    /// The stream that pastes form `type` of copy `copyID`.
    public static func clipboardPaste(_ copyID: UUID, type: String) -> String {
        clipboard + "/" + copyID.lowercasedString + "/" + PathSegment.escape(type)
    }

    /// The copy and form a paste's path names.
    public static func parseClipboardPaste(_ path: Substring) -> (copyID: UUID, type: String)? {
        guard path.hasPrefix(clipboard + "/") else { return nil }
        let parts = path.dropFirst(clipboard.count + 1).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let id = UUID(uuidString: String(parts[0])), let type = PathSegment.strictUnescape(parts[1]) else { return nil }
        return (id, type)
    }

    /// `DELETE` removes the device whose name or id (prefix) is `nameOrID`.
    public static func device(_ nameOrID: String) -> String {
        devices + "/" + PathSegment.escape(nameOrID)
    }
}

/// One segment of a path, percent-encoded by the client and decoded by the daemon.
public enum PathSegment {
    /// Everything but unreserved characters (RFC 3986) becomes `%XX`.
    public static func escape(_ text: String) -> String {
        var out = ""
        for b in text.utf8 {
            let c = Character(Unicode.Scalar(b))
            if (b >= 0x30 && b <= 0x39) || (b | 0x20 >= 0x61 && b | 0x20 <= 0x7A) || c == "-" || c == "." || c == "_" || c == "~" {
                out.append(c)
            } else {
                out += "%" + (b < 16 ? "0" : "") + String(b, radix: 16, uppercase: true)
            }
        }
        return out
    }

    /// `%XX` back to bytes, or nil for a malformed escape or bytes that are not UTF-8: one id,
    /// one spelling (a window's id names its files).
    public static func strictUnescape(_ text: Substring) -> String? {
        let hex = Array("0123456789abcdefABCDEF".utf8)
        var out: [UInt8] = []
        let b = Array(text.utf8)
        var i = 0
        while i < b.count {
            if b[i] == 0x25 {
                guard i + 2 < b.count, let high = hex.firstIndex(of: b[i + 1]), let low = hex.firstIndex(of: b[i + 2]) else { return nil }
                out.append(UInt8((high > 15 ? high - 6 : high) << 4 | (low > 15 ? low - 6 : low)))
                i += 3
            } else {
                out.append(b[i])
                i += 1
            }
        }
        return String(validating: out, as: UTF8.self)
    }

    /// `%XX` back to bytes; a malformed escape is left as it is.
    public static func unescape(_ text: String) -> String {
        var out: [UInt8] = []
        let b = Array(text.utf8)
        var i = 0
        while i < b.count {
            if b[i] == 0x25, i + 2 < b.count, let v = UInt8(String(decoding: b[(i + 1)...(i + 2)], as: UTF8.self), radix: 16) {
                out.append(v)
                i += 3
            } else {
                out.append(b[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// JSON as the API writes it: keys sorted (stable for diffs and snapshots), slashes unescaped
/// (URLs stay readable).
public enum LocalAPIJSON {
    public static func encoder(pretty: Bool = false) -> JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = pretty ? [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted] : [.sortedKeys, .withoutEscapingSlashes]
        return e
    }

    public static func decoder() -> JSONDecoder { JSONDecoder() }
}

/// Where the daemon and its clients find each other and keep state, per the XDG base directories.
/// Both sides compute the same default, so `--socket` is only needed for unusual setups.
public enum HandoffPaths {
    /// `$XDG_RUNTIME_DIR/handoff/handoffd.sock`. Without `XDG_RUNTIME_DIR` (a root shell, cron, a
    /// container) `/run/user/UID` is used when it exists, else a private `/tmp/handoff-UID`, which
    /// the daemon creates 0700 and refuses to use if someone else owns it.
    public static func defaultSocketPath() -> String {
        runtimeDirectory() + "/handoffd.sock"
    }

    public static func defaultSocketPath(environment: [String: String]) -> String {
        runtimeDirectory(environment: environment) + "/handoffd.sock"
    }

    /// This process's runtime directory. Its variable is read with getenv: building the
    /// environment as a dictionary (`ProcessInfo`, or even a dictionary of one) makes the Swift
    /// runtime build the dictionary's generic type, looking up `String: Hashable` through every
    /// conformance in the binary — a measurable share of starting handoffctl (docs/benchmarks.md,
    /// "Starting handoffctl", "handoffctl's share of continue").
    public static func runtimeDirectory() -> String {
        runtimeDirectory(xdgRuntimeDirectory: getenv("XDG_RUNTIME_DIR").map { String(cString: $0) })
    }

    public static func runtimeDirectory(environment: [String: String]) -> String {
        runtimeDirectory(xdgRuntimeDirectory: environment["XDG_RUNTIME_DIR"])
    }

    private static func runtimeDirectory(xdgRuntimeDirectory: String?) -> String {
        if let dir = xdgRuntimeDirectory, dir.hasPrefix("/") {
            return dir + "/handoff"
        }
        let uid = getuid()
        var st = stat()
        if stat("/run/user/\(uid)", &st) == 0, st.st_uid == uid {
            return "/run/user/\(uid)/handoff"
        }
        return "/tmp/handoff-\(uid)"
    }

    /// `$XDG_STATE_HOME/handoff`, defaulting to `~/.local/state/handoff`.
    public static func stateDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let dir = environment["XDG_STATE_HOME"], dir.hasPrefix("/") {
            return dir + "/handoff"
        }
        return homeDirectory(environment: environment) + "/.local/state/handoff"
    }

    /// `$XDG_CONFIG_HOME/handoff`, defaulting to `~/.config/handoff`.
    public static func configDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let dir = environment["XDG_CONFIG_HOME"], dir.hasPrefix("/") {
            return dir + "/handoff"
        }
        return homeDirectory(environment: environment) + "/.config/handoff"
    }

    /// The XDG base directories of a kind, most important first: the user's own, then the
    /// system's (the XDG Base Directory specification).
    public enum BaseDirectories {
        /// `$XDG_DATA_HOME` (default `~/.local/share`), then `$XDG_DATA_DIRS` (default
        /// `/usr/local/share:/usr/share`): applications, MIME data, the recently-used list.
        case data
        /// `$XDG_CONFIG_HOME` (default `~/.config`), then `$XDG_CONFIG_DIRS` (default `/etc/xdg`):
        /// mimeapps.list.
        case config
    }

    public static func baseDirectories(_ kind: BaseDirectories, environment: [String: String] = ProcessInfo.processInfo.environment) -> [String] {
        let (own, ownDefault, system, systemDefault) =
            switch kind {
            case .data: ("XDG_DATA_HOME", "/.local/share", "XDG_DATA_DIRS", "/usr/local/share:/usr/share")
            case .config: ("XDG_CONFIG_HOME", "/.config", "XDG_CONFIG_DIRS", "/etc/xdg")
            }
        let first = environment[own].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? homeDirectory(environment: environment) + ownDefault
        let rest = (environment[system].flatMap { $0.isEmpty ? nil : $0 } ?? systemDefault).split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        return [first] + rest
    }

    /// `$XDG_DOWNLOAD_DIR` as xdg-user-dirs keeps it (`$XDG_CONFIG_HOME/user-dirs.dirs`), else
    /// `~/Downloads`.
    public static func downloads(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        let home = homeDirectory(environment: environment)
        let config = baseDirectories(.config, environment: environment)[0]
        var found = home + "/Downloads"
        // As the shell that sources the file would: the last assignment stands.
        if let text = try? String(contentsOfFile: config + "/user-dirs.dirs", encoding: .utf8) {
            for line in text.split(separator: "\n") where line.hasPrefix("XDG_DOWNLOAD_DIR=") {
                var value = line.dropFirst("XDG_DOWNLOAD_DIR=".count)
                guard value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 else { continue }
                value = value.dropFirst().dropLast()
                if value.hasPrefix("$HOME/") { found = home + "/" + value.dropFirst("$HOME/".count) }
                if value.hasPrefix("/") { found = String(value) }
            }
        }
        return found
    }

    /// Where files that come from another device are kept: `Downloads/Handoff`.
    public static func received(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        downloads(environment: environment) + "/Handoff"
    }

    /// `$HOME`, else the user's home in the password database, else `/`.
    public static func homeDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let home = environment["HOME"], home.hasPrefix("/") { return home }
        if let pw = getpwuid(getuid()), let dir = pw.pointee.pw_dir { return String(cString: dir) }
        return "/"
    }
}
