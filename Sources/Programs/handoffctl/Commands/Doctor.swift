#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ArgumentParser
import HandoffAPI
import HandoffClient
import HandoffModel

#if canImport(Glibc)
import Glibc
#endif

struct Doctor: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check what handoff needs on this machine, and say how to fix what is wrong.",
        discussion: """
            Checks: handoffd running, Avahi reachable, this device in an account (and not removed \
            from it), its certificate, clocks against the other devices, other devices seen by \
            multicast (or found in the wide-area zone, or at the addresses in peers), the port and whether the firewall (ufw, firewalld) lets it in, the command \
            that opens continued web pages, nss-mdns. Exits 42 when something must be fixed \
            (warnings alone exit 0).
            """
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Flag(help: "Print the checks as JSON.")
    var json = false

    /// Whether this device finds the others: by multicast DNS, or — where the network carries
    /// no multicast — through the wide-area zone or `peers`, which are then no reason to warn.
    static func discoveryCheck(peers: [PeerInfo], strangers: Int, wideArea: WideAreaStatus?) -> Check {
        let viaMulticast = peers.filter { $0.foundVia.contains("mdns") }.count
        // Strangers come from the zone too when there is one: only without it do they say
        // multicast works.
        if viaMulticast > 0 || (strangers > 0 && wideArea == nil) {
            return Check(name: "multicast", verdict: .ok, message: "multicast DNS works: \(viaMulticast + strangers) handoff device(s) seen")
        }
        let viaZone = peers.filter { $0.foundVia.contains("wide-area") }.count
        if let wideArea, viaZone > 0 {
            return Check(
                name: "multicast", verdict: .ok,
                message: "no device seen by multicast DNS here; \(viaZone) found in the zone \(safe(wideArea.domain)) (wide area)"
            )
        }
        let viaPeers = peers.filter { $0.foundVia.contains("static") }.count
        if viaPeers > 0 {
            return Check(name: "multicast", verdict: .ok, message: "no device seen by multicast DNS here; \(viaPeers) reached at the addresses in peers")
        }
        if let wideArea {
            return Check(
                name: "multicast", verdict: .warning,
                message: "no other device of this account has been seen by multicast DNS or in the zone \(safe(wideArea.domain)) (are they on, and registered there?)",
                fix: "give the other devices the same [wide_area] domain and a key_file (docs/discovery.md, \"Beyond one link\")"
            )
        }
        return Check(
            name: "multicast", verdict: .warning,
            message: "no other handoff device has been seen through multicast DNS (are they on? does the network isolate clients or block multicast?)",
            fix: "give their addresses instead: peers = [\"HOST:47810\"] in ~/.config/handoff/handoffd.toml, or handoffd --peer HOST:PORT"
        )
    }

    struct Check: Codable, Equatable {
        enum Verdict: String, Codable, Equatable { case ok, warning, problem }
        var name: String
        var verdict: Verdict
        var message: String
        /// The command (or step) that fixes it.
        var fix: String?
    }

    func run() throws {
        let checks = Doctor.examine(global.client(root), now: .now())
        if json {
            try Terminal.json(checks)
        } else {
            for c in checks {
                let mark = switch c.verdict {
                case .ok: "ok     "
                case .warning: "warning"
                case .problem: "PROBLEM"
                }
                Terminal.out("\(mark)  \(c.message)")
                if let fix = c.fix { Terminal.out("         fix: \(fix)") }
            }
        }
        if checks.contains(where: { $0.verdict == .problem }) {
            throw CLIError(.problemsFound, "\(checks.filter { $0.verdict == .problem }.count) problem(s) found; see the fixes above")
        }
    }

    static let tolerableSkewSeconds = 30.0

    static func examine(_ client: HandoffClient, now: Timestamp, environment: [String: String] = ProcessInfo.processInfo.environment) -> [Check] {
        var checks: [Check] = []
        let status: DaemonStatus
        do {
            status = try client.send(.statusWithWebDomains)
            checks.append(Check(name: "daemon", verdict: .ok, message: "handoffd \(status.version) is running (pid \(status.pid))"))
        } catch {
            checks.append(
                Check(
                    name: "daemon", verdict: .problem, message: "handoffd is not answering: \(error.message)",
                    fix: "systemctl --user start handoffd (or: make run)"
                )
            )
            checks.append(avahiWithoutDaemon())
            checks.append(nssMDNS())
            return checks + DesktopCheck.checks(environment: environment)
        }

        if status.settings?.handoff == false {
            checks.append(
                Check(
                    name: "switch", verdict: .warning, message: "handoff is off on this device: it is not advertised and lets no other device in",
                    fix: "handoffctl config handoff on"
                )
            )
        }

        switch status.discovery.state {
        case .unavailable:
            checks.append(
                avahiProblem(
                    "avahi-daemon is not reachable, so this device is neither advertised nor finds the others (\(status.discovery.detail ?? "no detail"))"
                )
            )
        case .running, .starting:
            checks.append(Check(name: "avahi", verdict: .ok, message: "avahi-daemon is reachable; discovery is \(status.discovery.state.rawValue)"))
        case .off:
            checks.append(Check(name: "avahi", verdict: .ok, message: "discovery waits for an account"))
        }

        if let wideArea = status.discovery.wideArea {
            if let problem = wideArea.problem {
                checks.append(
                    Check(
                        name: "wide-area", verdict: .problem, message: "\(safe(problem)); discovery on this link is not affected",
                        fix: "check [wide_area] in handoffd.toml and the DNS server (docs/discovery.md, \"Beyond one link\")"
                    )
                )
            } else {
                checks.append(Check(name: "wide-area", verdict: .ok, message: Peers.describe(wideArea)))
            }
        }

        if let account = status.account, let removal = account.removal {
            checks.append(
                Check(
                    name: "account", verdict: .problem, message: "this device was \(safe(removal.sentence))",
                    fix: "handoffctl account leave, then handoffctl account join CODE\(removal.byName.map { " (from handoffctl account invite on \(safe($0)))" } ?? "")"
                )
            )
        } else if let account = status.account {
            checks.append(Check(name: "account", verdict: .ok, message: "this device is \(safe(account.deviceName)) in \(displayQuoted(account.accountName))"))
            let daysLeft = (account.certificateExpires.microsecondsSinceEpoch - now.microsecondsSinceEpoch) / 86_400_000_000
            if daysLeft < 0 {
                checks.append(
                    Check(
                        name: "certificate", verdict: .problem, message: "this device's certificate expired on \(account.certificateExpires.rfc3339)",
                        fix: "on the device holding the account key: handoffctl account invite; here: handoffctl account join CODE"
                    )
                )
            } else if daysLeft < 30 {
                checks.append(
                    Check(
                        name: "certificate", verdict: .warning, message: "this device's certificate expires in \(daysLeft) days",
                        fix: "on the device holding the account key: handoffctl account invite; here: handoffctl account join CODE"
                    )
                )
            } else {
                checks.append(Check(name: "certificate", verdict: .ok, message: "this device's certificate is valid for \(daysLeft) more days"))
            }
            checks.append(recoveryCheck(account))
        } else {
            checks.append(
                Check(
                    name: "account", verdict: .warning, message: "this device is in no account yet",
                    fix: "handoffctl account create (first device), or handoffctl account join CODE"
                )
            )
        }

        let peers = status.account == nil ? [] : (try? client.send(.peers))?.peers ?? []
        if status.account != nil, status.discovery.state == .running {
            checks.append(Doctor.discoveryCheck(peers: peers, strangers: status.strangers, wideArea: status.discovery.wideArea))
        }

        let measured = peers.filter { $0.reachable && $0.clockOffsetSeconds != nil }
        let skewed = measured.filter { abs($0.clockOffsetSeconds!) > Doctor.tolerableSkewSeconds }
        if !skewed.isEmpty {
            let list = skewed.map { "\(safe($0.name)) by \(Int($0.clockOffsetSeconds!.rounded())) s" }.joined(separator: ", ")
            checks.append(
                Check(
                    name: "clock", verdict: .warning,
                    message: "clocks disagree with \(list) (certificates and expiry dates depend on them)",
                    fix: "sudo timedatectl set-ntp true (on each device)"
                )
            )
        } else if !measured.isEmpty {
            checks.append(Check(name: "clock", verdict: .ok, message: "clocks agree with \(measured.count) device(s) within \(Int(Doctor.tolerableSkewSeconds)) s"))
        }

        checks.append(Check(name: "port", verdict: .ok, message: "accepting devices on TCP port \(status.peerPort)"))
        let port = status.peerPort
        switch FirewallCheck.judge(port: port, inbound: status.inboundPeers ?? 0, ufw: FirewallCheck.readUFW(), firewalld: FirewallCheck.askFirewallD(port: port)) {
        case .noFirewall:
            checks.append(Check(name: "firewall", verdict: .ok, message: "no ufw or firewalld firewall is active here"))
        case .open(let how):
            checks.append(Check(name: "firewall", verdict: .ok, message: "TCP port \(port) is open to your other devices (\(how))"))
        case .closed(let firewall, let fix):
            checks.append(
                Check(
                    name: "firewall", verdict: .problem,
                    message: "\(firewall) is active and does not let TCP port \(port) in: your other devices cannot connect to this one", fix: fix
                )
            )
        case .unknown(let firewall, let fix):
            checks.append(
                Check(
                    name: "firewall", verdict: .warning,
                    message: "\(firewall) is active; whether it lets TCP port \(port) in cannot be seen without root (sudo handoffctl doctor shows it)", fix: fix
                )
            )
        }
        if let browser = status.browser {
            checks.append(browserCheck(browser, configFile: status.configFile))
        }
        checks += webDomainChecks(status.webDomains ?? [])
        checks.append(nssMDNS())
        return checks + DesktopCheck.checks(environment: environment)
    }

    /// Whether losing the device that holds the account key would lose the account
    /// (docs/security.md, "Losing the key holder").
    static func recoveryCheck(_ account: AccountInfo) -> Check {
        if let made = account.recoveryCodeMadeAt {
            return Check(name: "recovery", verdict: .ok, message: "the account key can be restored with the recovery code made \(made.rfc3339)")
        }
        return Check(
            name: "recovery", verdict: .warning,
            message: account.isAdmin
                ? "only this device holds the account key and no recovery code was made: losing this device loses the account"
                : "only the device holding the account key has it and no recovery code was made: losing that device loses the account",
            fix: account.isAdmin ? "handoffctl account recovery-code, and write the code down" : "on the device holding the account key: handoffctl account recovery-code"
        )
    }

    /// The command continued web pages open with is there (else a continue of one fails).
    static func browserCheck(_ browser: BrowserStatus, configFile: String?) -> Check {
        let program = safe(browser.program)
        if browser.found {
            return Check(name: "browser", verdict: .ok, message: "continued web pages open with \(program)")
        }
        if browser.program == "xdg-open" {
            return Check(
                name: "browser", verdict: .warning, message: "xdg-open, which opens continued web pages, is not installed",
                fix: "sudo apt-get install xdg-utils (or set browser = in \(safe(configFile ?? "~/.config/handoff/handoffd.toml")))"
            )
        }
        let file = safe(configFile ?? "handoffd.toml")
        return Check(
            name: "browser", verdict: .warning, message: "the browser command \(program) (browser = in \(file)) is not installed, or not on handoffd's PATH",
            fix: "install it, or change browser = in \(file) and reload handoffd (systemctl --user reload handoffd)"
        )
    }

    /// The sites apps claim: their pages, continued here, open in those apps (docs/apps.md).
    static func webDomainChecks(_ claims: [WebDomainClaimStatus]) -> [Check] {
        claims.map { claim in
            let what = "\(safe(claim.domain)) (\(safe(claim.app))\(claim.running ? ", running" : ""))"
            if claim.on { return Check(name: "web domain", verdict: .ok, message: "https pages of \(what) open in the app") }
            return Check(name: "web domain", verdict: .ok, message: "\(what) is off: \(safe(claim.reason ?? "off"))")
        }
    }

    /// Without a daemon to ask: is Avahi's socket there?
    static func avahiWithoutDaemon() -> Check {
        if access("/run/avahi-daemon/socket", F_OK) == 0 {
            return Check(name: "avahi", verdict: .ok, message: "avahi-daemon is running")
        }
        return avahiProblem("avahi-daemon is not running")
    }

    /// Avahi is missing or stopped: start it (the way this machine starts services), or install it first.
    static func avahiProblem(_ message: String) -> Check {
        Check(name: "avahi", verdict: .problem, message: message, fix: AvahiHint.startCommand)
    }

    /// Host names of the other devices resolve through nss-mdns (else only the advert's A record).
    static func nssMDNS() -> Check {
        let config = (try? String(contentsOfFile: "/etc/nsswitch.conf", encoding: .utf8)) ?? ""
        let hosts = config.split(separator: "\n").first { $0.hasPrefix("hosts:") } ?? ""
        if hosts.contains("mdns") {
            return Check(name: "nss-mdns", verdict: .ok, message: "nss-mdns resolves .local names")
        }
        return Check(
            name: "nss-mdns", verdict: .warning, message: "nss-mdns is not set up: devices are reached by the address in their advert only",
            fix: "sudo apt-get install libnss-mdns"
        )
    }
}
