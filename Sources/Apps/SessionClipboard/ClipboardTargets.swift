import HandoffModel

/// How X11 apps name the kinds of a copy (ICCCM's targets) against the MIME types the clipboard
/// carries between devices (docs/clipboard.md): a pure mapping, tested without an X server.
public enum ClipboardTargets {
    /// UTF-8 text's traditional target, which `xclip -o` and most toolkits ask for first.
    public static let utf8String = "UTF8_STRING"
    /// Offered beside another device's copy, and asked for by no app: how the agent tells its own
    /// offer from an app's copy when the compositor tells both alike (Wayland).
    public static let ownMarker = "application/x-handoff-offer"

    /// The kinds worth reading from what an app offers: each carried type the app offers, UTF-8
    /// text however it names it; plain `text/plain` only when no UTF-8 text is offered. Each with
    /// the target to ask the app for.
    public static func readable(from targets: [String]) -> [(type: String, target: String)] {
        var found: [(String, String)] = []
        let names = Set(targets)
        for type in ClipboardNotice.carriedTypes {
            switch type {
            case "text/plain;charset=utf-8":
                if names.contains(type) {
                    found.append((type, type))
                } else if names.contains(utf8String) {
                    found.append((type, utf8String))
                }
            case "text/plain":
                if names.contains(type), !found.contains(where: { $0.0 == "text/plain;charset=utf-8" }) { found.append((type, type)) }
            default:
                if names.contains(type) { found.append((type, type)) }
            }
        }
        return found
    }

    /// The targets this device offers for another device's copy of `types`, and the type each
    /// answers with (`ownMarker` is offered beside them, answering nothing).
    public static func offered(for types: [String]) -> [(target: String, type: String)] {
        var targets: [(String, String)] = []
        for type in types where ClipboardNotice.carriedTypes.contains(type) {
            targets.append((type, type))
            if type == "text/plain;charset=utf-8" { targets.append((utf8String, type)) }
        }
        return targets
    }
}
