import HandoffAPI
import HandoffDBus

/// Hands a continuation to an app whose `.desktop` file says `DBusActivatable=true` (the Desktop
/// Entry specification's D-Bus activation), as `handoff-desktop activate` does for handoffd
/// (docs/dbus.md, "DBusActivatable apps"): `org.freedesktop.Application.ActivateAction`
/// with the action `handoff-continue` and the activity file's path. The bus delivers it to the
/// running instance — a GApplication or a Qt app with a D-Bus activation adaptor — or starts the
/// app for it.
package enum ApplicationActivation {
    package static let action = "handoff-continue"
    package static let interface = "org.freedesktop.Application"
    /// Starting an app for the call can take a moment.
    static let timeout: Duration = .seconds(10)

    /// The object path the specification derives from an application id: `org.example.App-1` →
    /// `/org/example/App_1`.
    package static func objectPath(applicationID: String) -> String {
        "/" + String(applicationID.map { $0 == "." ? "/" : $0 == "-" ? "_" : $0 })
    }

    /// The application id of a desktop file id (`org.example.App.desktop`), if it is a valid
    /// well-known bus name, as the specification requires of DBusActivatable apps.
    package static func applicationID(desktopFileID: String) -> String? {
        guard desktopFileID.hasSuffix(".desktop") else { return nil }
        let id = String(desktopFileID.dropLast(".desktop".count))
        let elements = id.split(separator: ".", omittingEmptySubsequences: false)
        guard id.utf8.count <= 255, elements.count >= 2 else { return nil }
        for element in elements {
            guard let first = element.unicodeScalars.first, !("0"..."9").contains(first),
                element.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == "-") })
            else { return nil }
        }
        return id
    }

    /// Whether `error` proves the call never reached the app (so starting it another way does
    /// not deliver the continuation twice): nobody has the name and the bus cannot start it, or
    /// the app has no such object, interface or action.
    package static func notDelivered(_ error: DBusError) -> Bool {
        [
            "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner", "org.freedesktop.DBus.Error.UnknownObject",
            "org.freedesktop.DBus.Error.UnknownInterface", "org.freedesktop.DBus.Error.UnknownMethod", DBusError.invalidArgsName,
        ].contains(error.name)
    }

    /// Asks the app to continue the activity in `activityFile`. `session` may carry the
    /// launcher's activation token, which lets the app raise its window.
    package static func activate(_ bus: DBusConnection, applicationID: String, activityFile: String, session: [String: String]) async throws(DBusError) {
        let call = DBusMethodCall(
            destination: applicationID, path: objectPath(applicationID: applicationID), interface: interface, member: "ActivateAction",
            arguments: [.string(action), .array(element: "v", [.variant(.string(activityFile))]), .vardict(platformData(session))]
        )
        _ = try await bus.call(call, timeout: timeout)
    }

    /// Asks the app to open `file` (an absolute path), as a file manager would:
    /// `org.freedesktop.Application.Open` with its `file://` URI — a continued document
    /// (docs/apps.md, "Documents from any app"), for apps with no handoff code.
    package static func open(_ bus: DBusConnection, applicationID: String, file: String, session: [String: String]) async throws(DBusError) {
        let call = DBusMethodCall(
            destination: applicationID, path: objectPath(applicationID: applicationID), interface: interface, member: "Open",
            arguments: [.array(element: "s", [.string(fileURI(file))]), .vardict(platformData(session))]
        )
        _ = try await bus.call(call, timeout: timeout)
    }

    /// The launcher's activation token, which lets the app raise its window.
    private static func platformData(_ session: [String: String]) -> [String: DBusValue] {
        var platformData: [String: DBusValue] = [:]
        if let token = session["XDG_ACTIVATION_TOKEN"] { platformData["activation-token"] = .string(token) }
        if let startup = session["DESKTOP_STARTUP_ID"] { platformData["desktop-startup-id"] = .string(startup) }
        return platformData
    }

    /// `file://` and the path, each part percent-encoded as the local API encodes a path segment.
    package static func fileURI(_ path: String) -> String {
        "file://" + path.split(separator: "/", omittingEmptySubsequences: false).map { PathSegment.escape(String($0)) }.joined(separator: "/")
    }
}
