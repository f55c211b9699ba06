/// Syntax checks for the two kinds of URL an activity carries.
///
/// Written out here rather than delegated to a URL parser because the rules are ours to state
/// (docs/activity-encoding.md) and must give the same answer in the CLI, the daemon and every peer,
/// whatever Foundation version each runs.
public enum URIRules {
    /// An absolute URI per RFC 3986: `scheme:rest`, where `rest` uses only URI characters and every
    /// `%` starts a two-digit hex escape. No spaces, no controls, no non-ASCII (percent-encode it).
    public static func isAbsoluteURI(_ text: String) -> Bool {
        let b = Array(text.utf8)
        guard let colon = b.firstIndex(of: 0x3A), colon > 0 else { return false }
        guard isAlpha(b[0]) else { return false }
        for c in b[1..<colon] where !(isAlpha(c) || isDigit(c) || c == 0x2B || c == 0x2D || c == 0x2E) {
            return false
        }
        var i = colon + 1
        while i < b.count {
            let c = b[i]
            if c == 0x25 {
                guard i + 2 < b.count, isHex(b[i + 1]), isHex(b[i + 2]) else { return false }
                i += 3
                continue
            }
            guard isURIChar(c) else { return false }
            i += 1
        }
        return true
    }

    /// The scheme of an absolute URI, lower-cased.
    public static func scheme(of text: String) -> String? {
        guard isAbsoluteURI(text), let colon = text.firstIndex(of: ":") else { return nil }
        return text[..<colon].lowercased()
    }

    /// A URL a browser may be handed: absolute, scheme `http` or `https`, and a non-empty host.
    public static func isWebURL(_ text: String) -> Bool {
        guard let scheme = scheme(of: text), scheme == "http" || scheme == "https" else { return false }
        let afterScheme = text.utf8.dropFirst(scheme.utf8.count + 1)
        guard afterScheme.starts(with: "//".utf8) else { return false }
        let authority = afterScheme.dropFirst(2).prefix { $0 != 0x2F && $0 != 0x3F && $0 != 0x23 }
        var hostPort = authority[...]
        if let at = authority.lastIndex(of: 0x40) {
            hostPort = authority[authority.index(after: at)...]
        }
        var host = hostPort
        if hostPort.first == 0x5B {  // [IPv6]
            guard let close = hostPort.firstIndex(of: 0x5D) else { return false }
            host = hostPort[hostPort.startIndex...close]
            let rest = hostPort[hostPort.index(after: close)...]
            guard rest.isEmpty || (rest.first == 0x3A && rest.dropFirst().allSatisfy(isDigit)) else { return false }
        } else if let colon = hostPort.firstIndex(of: 0x3A) {
            host = hostPort[..<colon]
            guard hostPort[hostPort.index(after: colon)...].allSatisfy(isDigit) else { return false }
        }
        return !host.isEmpty
    }

    private static func isAlpha(_ c: UInt8) -> Bool { (c | 0x20) >= 0x61 && (c | 0x20) <= 0x7A }
    private static func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }
    private static func isHex(_ c: UInt8) -> Bool { isDigit(c) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x66) }

    /// RFC 3986 unreserved and reserved characters.
    private static func isURIChar(_ c: UInt8) -> Bool {
        if isAlpha(c) || isDigit(c) { return true }
        switch c {
        case 0x2D, 0x2E, 0x5F, 0x7E: return true  // - . _ ~
        case 0x3A, 0x2F, 0x3F, 0x23, 0x5B, 0x5D, 0x40: return true  // : / ? # [ ] @
        case 0x21, 0x24, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x3B, 0x3D: return true  // ! $ & ' ( ) * + , ; =
        default: return false
        }
    }
}
