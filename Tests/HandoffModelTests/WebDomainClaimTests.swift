import HandoffModel
import Testing

/// What an app may claim, what a claim covers, and which pages a claim may take at all
/// (docs/apps.md, "Web pages into apps").
@Suite struct WebDomainClaimTests {
    @Test(arguments: [
        ("example.com", "example.com"), ("*.example.org", "*.example.org"), ("Example.COM.", "example.com"), (" shop.example.com ", "shop.example.com"),
        ("xn--bcher-kva.example", "xn--bcher-kva.example"), ("*.co.uk", "*.co.uk"), ("a-b.example", "a-b.example"),
    ])
    func claims(_ text: String, _ claimed: String) {
        #expect(WebDomainClaim(text)?.description == claimed)
    }

    /// Nothing: a top-level wildcard, one label, a URL, a path, a port, an empty label, a label
    /// with a character a host name cannot have, a wildcard in the middle.
    @Test(arguments: [
        "*.com", "com", "", "*.", "*", "https://example.com", "example.com/item", "example.com:443", "a..example", "-a.example", "a-.example",
        "exa mple.com", "a_b.example", "*.*.example", "www.*.example", "bücher.example", String(repeating: "a", count: 64) + ".example",
        "10.0.0.1", "*.0.0.1", "192.168.1.1.", "a.0x10",
    ])
    func claimsNothing(_ text: String) {
        #expect(WebDomainClaim(text) == nil, "\(text)")
    }

    /// A claim the user turned off: named as claimed, or below a wildcard they turned off.
    @Test func turningOffAWildcardTurnsOffWhatItCovers() throws {
        let off = Set(["*.example.org", "example.com"].compactMap(WebDomainClaim.init))
        for (claim, isOff) in [("example.com", true), ("*.example.com", false), ("shop.example.org", true), ("*.shop.example.org", true), ("*.example.org", true), ("example.org", false)] {
            #expect(try #require(WebDomainClaim(claim)).isTurnedOff(by: off) == isOff, "\(claim)")
        }
    }

    @Test func aClaimCoversItsHostOrTheHostsBelowIt() throws {
        let exact = try #require(WebDomainClaim("example.com"))
        let below = try #require(WebDomainClaim("*.example.org"))
        #expect(exact.covers(host: "example.com") && !exact.covers(host: "www.example.com") && !exact.covers(host: "badexample.com"))
        #expect(below.covers(host: "www.example.org") && below.covers(host: "a.b.example.org"))
        #expect(!below.covers(host: "example.org") && !below.covers(host: "badexample.org") && !below.covers(host: "example.org.evil"))
    }

    /// Only an https page on the default port, without user info, has a host a claim may take.
    @Test(arguments: [
        ("https://example.com/item/7", "example.com"), ("HTTPS://Example.COM/a?b#c", "example.com"), ("https://example.com:443/", "example.com"),
        ("https://www.example.org.", "www.example.org"), ("https://example.com?x", "example.com"), ("https://example.com#top", "example.com"),
    ])
    func claimable(_ url: String, _ host: String) {
        #expect(WebDomainClaim.claimableHost(of: url) == host)
    }

    @Test(arguments: [
        "http://example.com/", "https://example.com:8443/", "https://user@example.com/", "https://user:pw@example.com/", "https://[::1]/",
        "https://exa_mple.com/", "ftp://example.com/", "https:example.com", "https://", "https:///path", "https://example.com:/", "javascript:alert(1)",
        // Another host behind the claimed name: user info, an encoded slash, a backslash.
        "https://example.com@evil.example/", "https://example.com%2f.evil.example/", "https://evil.example\\@example.com/",
        // An IP address is no site an app can claim.
        "https://127.0.0.1/", "https://10.0.0.1:443/x", "https://0x7f.1/",
    ])
    func notClaimable(_ url: String) {
        #expect(WebDomainClaim.claimableHost(of: url) == nil, "\(url)")
    }
}
