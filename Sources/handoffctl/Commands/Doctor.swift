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
            Checks: handoffd running, Avahi reachable, this device in an account, its certificate, \
            clocks against the other devices, \
            other devices seen by multicast, the port and the firewall, nss-mdns. Exits 42 when \
            something must be fixed (warnings alone exit 0).
            """
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Flag(help: "Print the checks as JSON.")
    var json = false

    struct Check: Codable {
        enum Verdict: String, Codable { case ok, warning, problem }
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

    static func examine(_ client: HandoffClient, now: Timestamp) -> [Check] {
        var checks: [Check] = []
        let status: DaemonStatus
        do {
            status = try client.status()
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
            return checks
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
        } else {
            checks.append(
                Check(
                    name: "account", verdict: .warning, message: "this device is in no account yet",
                    fix: "handoffctl account create (first device), or handoffctl account join CODE"
                )
            )
        }

        let peers = status.account == nil ? [] : (try? client.peers())?.peers ?? []
        if status.account != nil, status.discovery.state == .running {
            let viaMulticast = peers.filter { $0.foundVia.contains("mdns") }.count
            if viaMulticast > 0 || status.strangers > 0 {
                checks.append(Check(name: "multicast", verdict: .ok, message: "multicast DNS works: \(viaMulticast + status.strangers) handoff device(s) seen"))
            } else {
                checks.append(
                    Check(
                        name: "multicast", verdict: .warning,
                        message: "no other handoff device has been seen through multicast DNS (are they on? does the network isolate clients or block multicast?)",
                        fix: "give their addresses instead: peers = [\"HOST:47810\"] in ~/.config/handoff/handoffd.toml, or handoffd --peer HOST:PORT"
                    )
                )
            }
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
        if let firewall = activeFirewall() {
            checks.append(
                Check(
                    name: "firewall", verdict: .warning,
                    message: "\(firewall.name) is active: your other devices need TCP port \(status.peerPort) open",
                    fix: firewall.fix
                )
            )
        }
        checks.append(nssMDNS())
        return checks
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

    static func activeFirewall() -> (name: String, fix: String)? {
        if let ufw = try? String(contentsOfFile: "/etc/ufw/ufw.conf", encoding: .utf8),
            ufw.split(separator: "\n").contains(where: { $0.replacing(" ", with: "") == "ENABLED=yes" })
        {
            return ("ufw", "sudo ufw allow handoff (the profile make install puts in /etc/ufw/applications.d)")
        }
        if access("/run/firewalld/firewalld.pid", F_OK) == 0 || access("/var/run/firewalld.pid", F_OK) == 0 {
            return ("firewalld", "sudo firewall-cmd --permanent --add-service=handoff && sudo firewall-cmd --reload")
        }
        return nil
    }
}
