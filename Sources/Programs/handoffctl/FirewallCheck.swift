#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffSystem

#if canImport(Glibc)
import Glibc
#endif

/// Whether this machine's firewall lets the other devices reach handoffd's port. ufw's rules are
/// root's to read and firewalld answers queries over D-Bus, so a normal user cannot always tell;
/// but a device that connected to this one proves the port open, whatever the firewall.
enum FirewallCheck {
    enum Finding: Equatable {
        /// No ufw or firewalld is active.
        case noFirewall
        /// Known open: `how` says how it is known.
        case open(how: String)
        case closed(firewall: String, fix: String)
        /// A firewall is active, and whether it lets the port in cannot be seen from here.
        case unknown(firewall: String, fix: String)
    }

    /// What ufw's files say (nil when ufw is not enabled).
    struct UFW: Equatable {
        /// `DEFAULT_INPUT_POLICY="ACCEPT"` in /etc/default/ufw.
        var acceptsByDefault: Bool
        /// user.rules and user6.rules together; nil when this user cannot read them.
        var rules: String?
    }

    /// firewalld running, and whether it said the port (or the handoff service) is allowed
    /// (nil: it could not be asked).
    struct FirewallD: Equatable {
        var allows: Bool?
    }

    static func judge(port: Int, inbound: Int, ufw: UFW?, firewalld: FirewallD?) -> Finding {
        if inbound > 0 {
            return .open(how: "\(inbound == 1 ? "a device connects" : "\(inbound) devices connect") to this one")
        }
        if let ufw {
            let fix = port == 47810 ? "sudo ufw allow handoff (the profile make install puts in /etc/ufw/applications.d)" : "sudo ufw allow \(port)/tcp"
            if ufw.acceptsByDefault { return .open(how: "ufw lets every port in") }
            guard let rules = ufw.rules else { return .unknown(firewall: "ufw", fix: fix) }
            return allows(rules, port: port) ? .open(how: "ufw lets it in") : .closed(firewall: "ufw", fix: fix)
        }
        if let firewalld {
            let fix = port == 47810
                ? "sudo firewall-cmd --reload && sudo firewall-cmd --permanent --add-service=handoff && sudo firewall-cmd --reload"
                : "sudo firewall-cmd --permanent --add-port=\(port)/tcp && sudo firewall-cmd --reload"
            switch firewalld.allows {
            case true?: return .open(how: "firewalld lets it in")
            case false?: return .closed(firewall: "firewalld", fix: fix)
            case nil: return .unknown(firewall: "firewalld", fix: fix)
            }
        }
        return .noFirewall
    }

    /// An ACCEPT rule of ufw's user chains for `port` over TCP (or any protocol), as
    /// `ufw allow PORT`, `ufw allow PORT/tcp` and `ufw allow APP` write them.
    static func allows(_ rules: String, port: Int) -> Bool {
        rules.split(separator: "\n").contains { line in
            line.hasPrefix("-A ufw") && line.contains("-input ") && line.contains(" -j ACCEPT")
                && (line.contains(" --dport \(port) ") || line.contains(" --dport \(port)\t") || line.hasSuffix(" --dport \(port)"))
                && !line.contains("-p udp")
        }
    }

    /// ufw's state, from its files.
    static func readUFW() -> UFW? {
        guard let conf = try? String(contentsOfFile: "/etc/ufw/ufw.conf", encoding: .utf8),
            conf.split(separator: "\n").contains(where: { $0.replacing(" ", with: "") == "ENABLED=yes" })
        else { return nil }
        let defaults = (try? String(contentsOfFile: "/etc/default/ufw", encoding: .utf8)) ?? ""
        let accepts = defaults.split(separator: "\n").contains { $0.replacing(" ", with: "") == "DEFAULT_INPUT_POLICY=\"ACCEPT\"" }
        let files = ["/etc/ufw/user.rules", "/etc/ufw/user6.rules"].map { try? String(contentsOfFile: $0, encoding: .utf8) }
        return UFW(acceptsByDefault: accepts, rules: files.contains { $0 == nil } ? nil : files.compactMap { $0 }.joined(separator: "\n"))
    }

    /// firewalld's answer, if it runs: `firewall-cmd --query-service=handoff` or `--query-port`.
    static func askFirewallD(port: Int) -> FirewallD? {
        guard access("/run/firewalld/firewalld.pid", F_OK) == 0 || access("/var/run/firewalld.pid", F_OK) == 0 else { return nil }
        guard let command = ChildProcess.search("firewall-cmd", path: "/usr/bin:/bin:/usr/sbin:/sbin") else { return FirewallD(allows: nil) }
        func query(_ argument: String) -> Int32? {
            let quiet = ChildProcess.Stream.file(path: "/dev/null", flags: O_WRONLY)
            guard let pid = try? ChildProcess.spawn(command, arguments: ["--quiet", argument], environment: [:], stdout: quiet, stderr: quiet) else {
                return nil
            }
            if case .exited(let status) = ChildProcess.wait(pid) { return status }
            return nil
        }
        // 0: yes; 1: no; anything else (not allowed to ask, not running): cannot tell.
        let answers = [query("--query-service=handoff"), query("--query-port=\(port)/tcp")]
        if answers.contains(0) { return FirewallD(allows: true) }
        return FirewallD(allows: answers.allSatisfy { $0 == 1 } ? false : nil)
    }
}
