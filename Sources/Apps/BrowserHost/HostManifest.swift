import Foundation

/// The native messaging host's manifests (docs/browser.md, "Install"): the file each browser
/// reads to find the host, naming the only extensions that may start it — handoff's own, by the
/// ids fixed in browser/manifest.json (its `key` for Chromium and Chrome, its gecko id for
/// Firefox). The host checks the same ids when it starts (`caller`).
public enum HostManifest {
    /// The name the extension connects to (`runtime.connectNative`).
    public static let name = "org.handoff.browser"
    /// The id Chromium and Chrome give browser/manifest.json's `key`.
    public static let chromiumExtensionID = "nfjgjffpcjniclpafnagjdnfaanbeddb"
    /// browser/manifest.json's `browser_specific_settings.gecko.id`.
    public static let firefoxExtensionID = "browser@handoff"

    public enum Family: String, CaseIterable, Sendable {
        case chromium, chrome, firefox
    }

    /// The manifest for `family`, for a host at `hostPath` (absolute).
    public static func json(_ family: Family, hostPath: String) -> String {
        let allowed =
            family == .firefox
            ? "\"allowed_extensions\": [\"\(firefoxExtensionID)\"]"
            : "\"allowed_origins\": [\"chrome-extension://\(chromiumExtensionID)/\"]"
        let path = hostPath.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        return """
            {
              "name": "\(name)",
              "description": "handoff: the page you are reading follows you to your other devices",
              "path": "\(path)",
              "type": "stdio",
              \(allowed)
            }

            """
    }

    /// Where each browser looks for a user's hosts.
    public static func userDirectories(environment: [String: String]) -> [(Family, String)] {
        let home = environment["HOME"] ?? NSHomeDirectory()
        let config = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? home + "/.config"
        return [
            (.chromium, config + "/chromium/NativeMessagingHosts"),
            (.chrome, config + "/google-chrome/NativeMessagingHosts"),
            (.firefox, home + "/.mozilla/native-messaging-hosts"),
        ]
    }

    /// Where each browser looks for hosts installed for every user (fixed by the browsers).
    public static let systemDirectories: [(Family, String)] = [
        (.chromium, "/etc/chromium/native-messaging-hosts"),
        (.chrome, "/etc/opt/chrome/native-messaging-hosts"),
        (.firefox, "/usr/lib/mozilla/native-messaging-hosts"),
    ]

    /// Writes the manifests into `directories`; returns the files written.
    public static func install(hostPath: String, into directories: [(Family, String)]) throws -> [String] {
        var written: [String] = []
        for (family, directory) in directories {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let file = directory + "/" + name + ".json"
            try Data(json(family, hostPath: hostPath).utf8).write(to: URL(fileURLWithPath: file), options: .atomic)
            written.append(file)
        }
        return written
    }

    /// Which extension started the host, from the arguments the browser gives it: Chromium and
    /// Chrome pass the caller's origin (`chrome-extension://ID/`), Firefox the manifest's path
    /// and the extension's id. Nil for anything but handoff's extension.
    public static func caller(_ arguments: [String]) -> Family? {
        if let origin = arguments.first, origin == "chrome-extension://\(chromiumExtensionID)/" { return .chromium }
        if arguments.count >= 2, arguments[1] == firefoxExtensionID, arguments[0].hasSuffix("/\(name).json") { return .firefox }
        return nil
    }
}
