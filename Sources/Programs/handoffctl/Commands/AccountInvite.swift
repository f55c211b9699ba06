import ArgumentParser
import HandoffAPI
import HandoffClient

#if canImport(Glibc)
import Glibc
#endif

struct AccountInvite: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "invite",
        abstract: "Print a one-time code for another device to join, and wait for it.",
        discussion: """
            The code is valid for 10 minutes and for one device. Stopping this command (Ctrl-C) \
            cancels it. Prints the code on the first line of stdout, and "joined ID NAME" when a \
            device has joined.
            """
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Flag(help: "Print the local API's updates as JSON lines.")
    var json = false

    func run() throws {
        let updates = try global.client(root).subscribe(.invite)
        while let update = try updates.next() {
            if json {
                try Terminal.json(update, pretty: false)
                Terminal.flush()
                if update.expired == true { throw CLIError(.inviteExpired, "the invite expired; nobody joined") }
                continue
            }
            if let invite = update.invite {
                Terminal.out(invite.code)
                Terminal.flush()
                let peer = LocalAddresses.ipv4().first.map { "\($0):\(invite.port)" } ?? "THIS-HOST:\(invite.port)"
                Terminal.diagnostic(
                    """
                    handoffctl: on the other device run:
                        handoffctl account join \(invite.code) --peer \(peer)
                    handoffctl: valid until \(invite.expiresAt.rfc3339), for one device; waiting (Ctrl-C cancels)…

                    """
                )
            } else if let device = update.joined {
                Terminal.out("joined \(device.id.text) \(safe(device.name))")
                return
            } else if update.expired == true {
                throw CLIError(.inviteExpired, "the invite expired; nobody joined (run handoffctl account invite again)")
            }
        }
        throw CLIError(.daemonNotRunning, "handoffd stopped while waiting for the invite")
    }
}

/// This host's IPv4 addresses other devices may reach, for the hint printed with an invite.
enum LocalAddresses {
    static func ipv4() -> [String] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var out: [String] = []
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            guard let address = entry.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET),
                entry.pointee.ifa_flags & UInt32(IFF_LOOPBACK) == 0, entry.pointee.ifa_flags & UInt32(IFF_UP) != 0
            else { continue }
            var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if getnameinfo(address, socklen_t(MemoryLayout<sockaddr_in>.size), &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 {
                out.append(host.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
            }
        }
        return out
    }
}
