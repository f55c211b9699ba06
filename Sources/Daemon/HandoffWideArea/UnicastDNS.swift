import CHandoffLDNS
import HandoffDiscovery
import HandoffSystem

#if canImport(Glibc)
import Glibc
#endif

/// A DNS server to ask or update: an address (IPv4 or IPv6) and port, or the system's resolvers.
public struct DNSServer: Sendable, Equatable, CustomStringConvertible {
    public var address: String?
    public var port: UInt16

    public init(address: String?, port: UInt16 = 53) {
        self.address = address
        self.port = port
    }

    public static let system = DNSServer(address: nil)

    public var description: String {
        guard let address else { return "the system's DNS servers" }
        let host = address.contains(":") ? "[\(address)]" : address
        return port == 53 ? address : "\(host):\(port)"
    }
}

/// Queries and updates through ldns (CHandoffLDNS), one at a time on one thread of their own:
/// ldns blocks until the server answers or the timeout passes, and nothing else may wait for it.
/// Each call makes its resolver and frees it, so nothing of ldns outlives a call.
package enum UnicastDNS {
    /// Started on first use; it sleeps while there is nothing to ask.
    static let thread = DiskThread(name: "handoff-dns")

    enum RecordType: UInt16, Sendable {
        case a = 1
        case soa = 6
        case ptr = 12
        case txt = 16
        case aaaa = 28
        case srv = 33
        case any = 255
    }

    /// One record of an answer: its type and its rdata fields as ldns holds them (a name in wire
    /// form, a TXT string with its length byte, an address's bytes, a number's bytes).
    struct Record: Sendable, Equatable {
        var type: UInt16
        var fields: [[UInt8]]
    }

    struct Failure: Error, Equatable, CustomStringConvertible {
        var description: String
        /// The server answered (with an error): it is there.
        var answered = false
    }

    /// The answer records of `type` for `name`; none for a name that does not exist.
    static func query(_ name: String, _ type: RecordType, at server: DNSServer, timeout: Duration) async -> Result<[Record], Failure> {
        await thread.run { () -> Result<[Record], Failure> in
            guard let resolver = resolver(server, timeout: timeout) else { return .failure(Failure(description: "cannot use \(server) as a DNS server")) }
            defer { ldns_resolver_deep_free(resolver) }
            // TCP: ldns takes the first datagram that comes, whoever sent it; a forged listing could
            // hide every device, a forged address send a dial elsewhere.
            ldns_resolver_set_usevc(resolver, 1)
            guard let owner = ldns_dname_new_frm_str(name) else { return .failure(Failure(description: "\(name) is not a domain name")) }
            defer { ldns_rdf_deep_free(owner) }
            var answer: UnsafeMutablePointer<ldns_pkt>?
            let status = ldns_resolver_query_status(&answer, resolver, owner, ldns_rr_type(UInt32(type.rawValue)), LDNS_RR_CLASS_IN, UInt16(LDNS_RD))
            guard status == LDNS_STATUS_OK, let answer else { return .failure(Failure(description: describe(status, server: server))) }
            defer { ldns_pkt_free(answer) }
            let rcode = Int(ldns_pkt_get_rcode(answer).rawValue)
            guard rcode == 0 || rcode == 3 else { return .failure(Failure(description: "\(server) answered \(rcodeName(rcode)) for \(name)", answered: true)) }
            return .success(records(in: answer, type: type.rawValue))
        }
    }

    /// The answer section's records of `type`, each field as ldns holds it.
    private static func records(in answer: UnsafeMutablePointer<ldns_pkt>, type: UInt16) -> [Record] {
        var records: [Record] = []
        for index in 0..<handoff_ldns_answer_count(answer) {
            guard let rr = handoff_ldns_answer_rr(answer, index) else { continue }
            let rrType = UInt16(ldns_rr_get_type(rr).rawValue)
            guard rrType == type else { continue }  // CNAMEs and the like on the way
            var fields: [[UInt8]] = []
            for field in 0..<ldns_rr_rd_count(rr) {
                guard let rdf = ldns_rr_rdf(rr, field), let data = ldns_rdf_data(rdf) else { continue }
                fields.append(Array(UnsafeBufferPointer(start: data, count: ldns_rdf_size(rdf))))
            }
            records.append(Record(type: rrType, fields: fields))
        }
        return records
    }

    /// A DNS message as a server could send it, read as `query` reads its answer: for the fuzzer
    /// (fuzz/Harness), which has no server. Nil when ldns cannot read it.
    package static func records(inAnswer wire: [UInt8], type: UInt16) -> [[[UInt8]]]? {
        var packet: UnsafeMutablePointer<ldns_pkt>?
        guard ldns_wire2pkt(&packet, wire, wire.count) == LDNS_STATUS_OK, let packet else { return nil }
        defer { ldns_pkt_free(packet) }
        return records(in: packet, type: type).map(\.fields)
    }

    /// One change of an UPDATE (RFC 2136 §2.5), records in presentation form.
    enum Change: Sendable, Equatable {
        /// Delete an RRset (§2.5.2): by type, so that a server allowing a key only some types
        /// (BIND's and Knot's update policies) accepts it.
        case deleteRRset(owner: String, type: RecordType)
        /// Delete one RR (§2.5.4): `rdata` as in a zone file.
        case deleteRecord(owner: String, type: String, rdata: String)
        /// Add one RR (§2.5.1).
        case add(owner: String, ttl: Int, type: String, rdata: String)
    }

    enum UpdateOutcome: Sendable, Equatable {
        case done
        /// The server answered no: why, as a user should read it.
        case refused(String)
        /// No answer, or none that could be read.
        case failed(String)
    }

    /// Sends `changes` to `zone` at `server` as one UPDATE signed with `key`.
    static func update(zone: String, _ changes: [Change], at server: DNSServer, key: TSIGKey, timeout: Duration) async -> UpdateOutcome {
        await thread.run { () -> UpdateOutcome in
            guard let resolver = resolver(server, timeout: timeout) else { return .failed("cannot use \(server) as a DNS server") }
            defer { ldns_resolver_deep_free(resolver) }
            // Updates go over TCP too: a record set may not fit in a datagram (RFC 2136 §6.3
            // allows either).
            ldns_resolver_set_usevc(resolver, 1)
            guard let list = ldns_rr_list_new() else { return .failed("out of memory") }
            for change in changes {
                guard let rr = record(change) else {
                    ldns_rr_list_deep_free(list)
                    return .failed("cannot write \(change) as a DNS record")
                }
                ldns_rr_list_push_rr(list, rr)
            }
            let result = handoff_ldns_update(resolver, zone, list, key.keyName, key.algorithmName, key.secret)
            switch (result.rcode, result.tsig_error) {
            case (_, 17): return .refused("the server refused the key \(key.name)")
            case (_, 16): return .refused("the server did not accept the key \(key.name)'s signature (a different secret?)")
            case (_, 18): return .refused("the server's clock and this device's differ too much for the key \(key.name)")
            case (0, _):
                // An answer that says yes must carry our key's signature, or anyone could say so.
                guard result.status == LDNS_STATUS_OK else { return .failed("the server's answer was not signed with the key \(key.name)") }
                return .done
            case (5, _): return .refused("the server refused the update (is the key \(key.name) allowed to change \(zone)?)")
            case (9, _): return .refused("the server is not authoritative for \(zone), or refused the key \(key.name)")
            case (10, _): return .refused("\(zone) is not a zone on the server")
            case (-1, _): return .failed(describe(result.status, server: server))
            case (let rcode, _): return .refused("the server answered \(rcodeName(Int(rcode)))")
            }
        }
    }

    private static func record(_ change: Change) -> UnsafeMutablePointer<ldns_rr>? {
        switch change {
        case .deleteRRset(let owner, let type):
            return handoff_ldns_empty_rr(owner, type.rawValue, UInt16(LDNS_RR_CLASS_ANY.rawValue))
        case .deleteRecord(let owner, let type, let rdata):
            var rr: UnsafeMutablePointer<ldns_rr>?
            guard ldns_rr_new_frm_str(&rr, "\(owner) 0 IN \(type) \(rdata)", 0, nil, nil) == LDNS_STATUS_OK, let rr else { return nil }
            ldns_rr_set_class(rr, LDNS_RR_CLASS_NONE)
            return rr
        case .add(let owner, let ttl, let type, let rdata):
            var rr: UnsafeMutablePointer<ldns_rr>?
            guard ldns_rr_new_frm_str(&rr, "\(owner) \(ttl) IN \(type) \(rdata)", 0, nil, nil) == LDNS_STATUS_OK else { return nil }
            return rr
        }
    }

    private static func resolver(_ server: DNSServer, timeout: Duration) -> UnsafeMutablePointer<ldns_resolver>? {
        let milliseconds = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        return handoff_ldns_resolver(server.address, server.port, milliseconds)
    }

    private static func describe(_ status: ldns_status, server: DNSServer) -> String {
        switch status {
        // Over TCP, nothing listening (or no route) shows as ldns's general error.
        case LDNS_STATUS_NETWORK_ERR, LDNS_STATUS_RES_NO_NS, LDNS_STATUS_ERR, LDNS_STATUS_SOCKET_ERROR: "\(server) did not answer"
        case LDNS_STATUS_CRYPTO_TSIG_BOGUS: "the answer from \(server) was not signed with our key"
        default: "asking \(server) failed: \(String(cString: ldns_get_errorstr_by_id(status)))"
        }
    }

    static func rcodeName(_ rcode: Int) -> String {
        switch rcode {
        case 1: "FORMERR"
        case 2: "SERVFAIL"
        case 3: "NXDOMAIN"
        case 4: "NOTIMP"
        case 5: "REFUSED"
        case 6: "YXDOMAIN"
        case 7: "YXRRSET"
        case 8: "NXRRSET"
        case 9: "NOTAUTH"
        case 10: "NOTZONE"
        default: "rcode \(rcode)"
        }
    }

    // MARK: Reading fields

    /// A name in wire form as labels (each label's bytes); nil if malformed.
    package static func labels(_ wire: [UInt8]) -> [[UInt8]]? {
        var labels: [[UInt8]] = []
        var index = 0
        while index < wire.count {
            let length = Int(wire[index])
            if length == 0 { return labels }
            guard length < 64, index + 1 + length <= wire.count else { return nil }
            labels.append(Array(wire[(index + 1)...(index + length)]))
            index += 1 + length
        }
        return nil
    }

    /// A name in wire form as text (`a.b.c.`), lowercased; labels holding dots or other bytes
    /// outside letters, digits, `-` and `_` are not names of ours: nil.
    package static func hostName(_ wire: [UInt8]) -> String? {
        guard let labels = labels(wire) else { return nil }
        var text = ""
        for label in labels {
            guard label.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x7A).contains($0 | 0x20) || $0 == 0x2D || $0 == 0x5F }) else { return nil }
            text += String(decoding: label, as: UTF8.self).lowercased() + "."
        }
        return text.isEmpty ? "." : text
    }

    /// An A or AAAA record's address as text.
    package static func address(_ bytes: [UInt8]) -> String? {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        let ok = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &text, socklen_t(text.count)) != nil }
        return ok ? text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) } : nil
    }

    /// A 16-bit field (SRV's priority, weight, port).
    package static func number(_ bytes: [UInt8]) -> Int? {
        bytes.count == 2 ? Int(bytes[0]) << 8 | Int(bytes[1]) : nil
    }

    /// A label (an instance name: Avahi may have renamed ours `N #2`) for a zone-file line: bytes
    /// other than letters, digits, `-` and `_` as `\DDD`.
    static func label(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            if (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2D || byte == 0x5F {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let digits = String(byte)
                out += "\\" + String(repeating: "0", count: 3 - digits.count) + digits
            }
        }
        return out
    }

    /// TXT rdata as `\DDD`-escaped character-strings for a zone-file line.
    static func txtPresentation(_ rdata: [UInt8]) -> String {
        var strings: [String] = []
        var index = 0
        while index < rdata.count {
            let length = Int(rdata[index])
            let end = min(rdata.count, index + 1 + length)
            var text = "\""
            for byte in rdata[(index + 1)..<end] {
                if (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x3D || byte == 0x2D || byte == 0x5F {
                    text.unicodeScalars.append(Unicode.Scalar(byte))
                } else {
                    let digits = String(byte)
                    text += "\\" + String(repeating: "0", count: 3 - digits.count) + digits
                }
            }
            strings.append(text + "\"")
            index = end
        }
        return strings.joined(separator: " ")
    }
}
