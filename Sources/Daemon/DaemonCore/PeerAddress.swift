#if canImport(Glibc)
import Glibc
#endif
import HandoffAPI
import HandoffModel

/// Where to reach a device: `host:port`, `[v6]:port`, or `host` (the default port).
package struct PeerAddress: Sendable, Equatable, CustomStringConvertible {
    /// The port handoffd listens on for other devices unless configured otherwise.
    package static let defaultPeerPort = 47810

    package var host: String
    package var port: Int

    package init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    package init(parsing text: String, defaultPort: Int) throws(DaemonError) {
        let bad = DaemonError(.badPeerAddress, "\(displayQuoted(text)) is not HOST:PORT (e.g. 192.168.1.20:47810 or [fe80::1%eth0]:47810)")
        var host = text
        var port = defaultPort
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw bad }
            host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":"), let p = Int(rest.dropFirst()) else { throw bad }
                port = p
            }
        } else if let colon = text.lastIndex(of: ":"), text.firstIndex(of: ":") == colon {
            host = String(text[..<colon])
            guard let p = Int(text[text.index(after: colon)...]) else { throw bad }
            port = p
        }
        guard !host.isEmpty, (1...65535).contains(port), !host.contains(where: { $0 == " " || $0 == "/" }) else { throw bad }
        self.host = host
        self.port = port
    }

    package var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    package static func isIPAddress(_ text: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }
}
