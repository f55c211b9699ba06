import ArgumentParser
import HandoffAPI
import HandoffClient
import HandoffModel

struct Peers: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List your other devices that are reachable now, and what each is doing.",
        discussion: "Devices seen but unreachable are listed after them. handoff devices that are not yours are only counted."
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Flag(help: "Print the local API's peer list.")
    var json = false

    func run() throws {
        let response = try global.client(root).send(.peers)
        if json { return try Terminal.json(response) }
        let now = Timestamp.now()
        let reachable = response.peers.filter(\.reachable)
        let unreachable = response.peers.filter { !$0.reachable }
        if reachable.isEmpty {
            Terminal.out("no other device of your account is reachable")
        }
        for p in reachable {
            // Back under a new name, its advert not seen yet: it is reached on the connection it made.
            let via = p.foundVia.isEmpty ? "its own connection" : p.foundVia.joined(separator: ", ")
            Terminal.out("\(safe(p.name))  \(p.id.short)…  via \(via)  \(p.addresses.first ?? "")")
            if let a = p.activity {
                Terminal.out("    \(safe(a.type))  \(displayQuoted(a.title))  \(a.updatedAt.age(at: now)) ago")
            } else {
                Terminal.out("    no current activity")
            }
        }
        for p in unreachable {
            let since = p.unreachableSince.map { " for \($0.age(at: now))" } ?? ""
            Terminal.out("\(safe(p.name))  \(p.id.short)…  unreachable\(since)")
        }
        if response.strangers > 0 {
            Terminal.diagnostic("handoffctl: \(response.strangers) other handoff device\(response.strangers == 1 ? "" : "s") on this network\n")
        }
        if response.discovery.state == .unavailable {
            Terminal.diagnostic("handoffctl: discovery is down: \(Peers.describe(response.discovery))\n")
        }
    }

    /// `handoff.example.net.: registered`, or what failed there.
    static func describe(_ w: WideAreaStatus) -> String {
        if let problem = w.problem { return "\(w.domain): \(problem)" }
        guard w.registering else { return "\(w.domain): browsing (no key_file: not registered there)" }
        return "\(w.domain): \(w.registered ? "registered and browsing" : "browsing; not registered yet (no account, or handoff is off)")"
    }

    static func describe(_ d: DiscoveryStatus) -> String {
        switch d.state {
        case .running: d.detail.map { "running (\($0))" } ?? "running"
        case .starting: "starting"
        case .off: "off"
        case .unavailable:
            "unavailable: \(d.detail ?? "?")\(d.retryAt.map { "; retrying at \($0.rfc3339)" } ?? "") (start it: \(AvahiHint.startCommand))"
        }
    }
}
