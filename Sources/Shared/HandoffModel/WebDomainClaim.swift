/// A site an app says it shows, so that a web page of that site continued from another device
/// opens in the app rather than a browser (docs/apps.md, "Web pages into apps"): Apple's
/// associated domains. An app claims `example.com` (that host) or `*.example.org` (every host
/// below example.org, not example.org itself), in its `.desktop` file
/// (`X-Handoff-WebDomains=example.com;*.example.org;`) or when it registers.
///
/// A claim is a host name of at least two labels, each of letters, digits and inner hyphens
/// (an internationalized name in its `xn--` form), not an IP address; a wildcard must leave at
/// least two labels, so `*.com` claims nothing. Only https pages on the default port are ever covered
/// (`WebDomainClaim.claimableHost`).
public struct WebDomainClaim: Hashable, Sendable, CustomStringConvertible {
    /// The claimed host, or the one whose subdomains are claimed; lowercase, no trailing dot.
    public let domain: String
    /// `*.domain`: the hosts below `domain`.
    public let subdomains: Bool

    /// Nil for anything that is not a claim as described above.
    public init?(_ text: String) {
        var name = Substring(text.lowercased())
        while name.first == " " || name.first == "\t" { name = name.dropFirst() }
        while name.last == " " || name.last == "\t" { name = name.dropLast() }
        subdomains = name.hasPrefix("*.")
        if subdomains { name = name.dropFirst(2) }
        if name.hasSuffix(".") { name = name.dropLast() }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        guard name.utf8.count <= 253, labels.count >= 2, labels.allSatisfy(Self.isLabel), !Self.isNumeric(labels.last!) else { return nil }
        domain = String(name)
    }

    public var description: String { (subdomains ? "*." : "") + domain }

    /// Whether the user turned this claim off: `off` names it, or a wildcard there covers its
    /// domain (`*.example.org` turns off an app's `shop.example.org` and `*.shop.example.org`).
    public func isTurnedOff(by off: Set<WebDomainClaim>) -> Bool {
        off.contains(self) || off.contains { $0.subdomains && $0.covers(host: domain) }
    }

    /// Whether this claim covers `host` (as `claimableHost` gives it).
    public func covers(host: String) -> Bool {
        subdomains ? host.hasSuffix("." + domain) : host == domain
    }

    /// The host of `url` that a claim may cover: an https URL (as `URIRules.isWebURL` checks it)
    /// without user info and on the default port, its host lowercased without a trailing dot.
    /// Nil for anything else — an http page, or one that names a user or a port, always goes to
    /// the browser.
    public static func claimableHost(of url: String) -> String? {
        guard URIRules.isWebURL(url), url.utf8.count > 8, url.prefix(8).lowercased() == "https://" else { return nil }
        let authority = url.dropFirst(8).prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !authority.contains("@"), !authority.hasPrefix("[") else { return nil }
        var host = authority
        if let colon = authority.firstIndex(of: ":") {
            guard authority[authority.index(after: colon)...] == "443" else { return nil }
            host = authority[..<colon]
        }
        if host.hasSuffix(".") { host = host.dropLast() }
        let lowered = host.lowercased()
        let labels = lowered.split(separator: ".", omittingEmptySubsequences: false)
        guard !lowered.isEmpty, labels.allSatisfy(isLabel), !isNumeric(labels.last!) else { return nil }
        return lowered
    }

    /// A last label of digits (or `0x…`) makes an IP address, not a host name (as the WHATWG
    /// URL standard reads it): never claimed.
    private static func isNumeric(_ label: Substring) -> Bool {
        label.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } || label.hasPrefix("0x")
    }

    private static func isLabel(_ label: Substring) -> Bool {
        guard (1...63).contains(label.utf8.count), label.first != "-", label.last != "-" else { return false }
        return label.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D }
    }
}

extension ActivityContent {
    /// A web page handed to the app that claims its site (Apple's `NSUserActivityTypeBrowsingWeb`):
    /// its title and `webpageURL`, nothing of the app that showed it.
    public static let browsingWebType = "org.handoff.browsing-web"
}
