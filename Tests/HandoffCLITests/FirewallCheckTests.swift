import Testing

@testable import handoffctl

/// `doctor`'s firewall verdict, from what ufw's files and firewalld say and whether devices
/// connect in.
@Suite struct FirewallCheckTests {
    // As `ufw allow handoff` (with the profile installed) and `ufw allow 47811/tcp` write them.
    static let userRules = """
        ### tuple ### allow tcp 47810 0.0.0.0/0 any 0.0.0.0/0 handoff - in
        -A ufw-user-input -p tcp --dport 47810 -j ACCEPT -m comment --comment 'dapp_handoff'
        ### tuple ### allow tcp 47811 0.0.0.0/0 any 0.0.0.0/0 in
        -A ufw-user-input -p tcp --dport 47811 -j ACCEPT
        ### tuple ### allow udp 5353 0.0.0.0/0 any 0.0.0.0/0 in
        -A ufw-user-input -p udp --dport 5353 -j ACCEPT
        ### tuple ### deny tcp 47812 0.0.0.0/0 any 0.0.0.0/0 in
        -A ufw-user-input -p tcp --dport 47812 -j DROP
        """

    @Test func ufwRulesAreRead() {
        #expect(FirewallCheck.allows(Self.userRules, port: 47810))
        #expect(FirewallCheck.allows(Self.userRules, port: 47811))
        #expect(!FirewallCheck.allows(Self.userRules, port: 5353), "udp only")
        #expect(!FirewallCheck.allows(Self.userRules, port: 47812), "denied")
        #expect(!FirewallCheck.allows(Self.userRules, port: 4781))
    }

    @Test func verdicts() {
        let closed = FirewallCheck.UFW(acceptsByDefault: false, rules: "")
        let open = FirewallCheck.UFW(acceptsByDefault: false, rules: Self.userRules)
        #expect(FirewallCheck.judge(port: 47810, inbound: 0, ufw: nil, firewalld: nil) == .noFirewall)
        #expect(FirewallCheck.judge(port: 47810, inbound: 2, ufw: closed, firewalld: nil) == .open(how: "2 devices connect to this one"))
        #expect(FirewallCheck.judge(port: 47810, inbound: 0, ufw: open, firewalld: nil) == .open(how: "ufw lets it in"))
        #expect(
            FirewallCheck.judge(port: 47810, inbound: 0, ufw: closed, firewalld: nil)
                == .closed(firewall: "ufw", fix: "sudo ufw allow handoff (the profile make install puts in /etc/ufw/applications.d)")
        )
        #expect(FirewallCheck.judge(port: 47900, inbound: 0, ufw: closed, firewalld: nil) == .closed(firewall: "ufw", fix: "sudo ufw allow 47900/tcp"))
        #expect(FirewallCheck.judge(port: 47810, inbound: 0, ufw: .init(acceptsByDefault: false, rules: nil), firewalld: nil).isUnknown)
        #expect(FirewallCheck.judge(port: 47810, inbound: 0, ufw: .init(acceptsByDefault: true, rules: nil), firewalld: nil) == .open(how: "ufw lets every port in"))
        #expect(FirewallCheck.judge(port: 47810, inbound: 0, ufw: nil, firewalld: .init(allows: true)) == .open(how: "firewalld lets it in"))
        #expect(FirewallCheck.judge(port: 47810, inbound: 0, ufw: nil, firewalld: .init(allows: nil)).isUnknown)
        guard case .closed(_, let fix) = FirewallCheck.judge(port: 47810, inbound: 0, ufw: nil, firewalld: .init(allows: false)) else {
            Issue.record("firewalld saying no is closed")
            return
        }
        #expect(fix.contains("--add-service=handoff"))
    }
}

extension FirewallCheck.Finding {
    var isUnknown: Bool {
        if case .unknown = self { return true }
        return false
    }
}
