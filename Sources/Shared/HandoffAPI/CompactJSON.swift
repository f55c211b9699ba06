/// JSON written without `JSONEncoder`, for the request `handoffctl continue` sends. Encoding it
/// through `JSONEncoder` made the Swift runtime instantiate the encoder's generic containers and
/// look up their conformances across the whole binary, at every start: a tenth of what the
/// command cost (docs/benchmarks.md, "Starting handoffctl"). What this writes decodes as the
/// `JSONEncoder` form does (QuickCommandTests checks that for every field and awkward strings).
public enum CompactJSON {
    /// `text` as a JSON string, quotes included.
    public static func string(_ text: String, into out: inout [UInt8]) {
        out.append(0x22)
        for byte in text.utf8 {
            switch byte {
            case 0x22: out.append(contentsOf: [0x5C, 0x22])  // \"
            case 0x5C: out.append(contentsOf: [0x5C, 0x5C])  // \\
            case 0x0A: out.append(contentsOf: [0x5C, 0x6E])  // \n
            case 0x0D: out.append(contentsOf: [0x5C, 0x72])  // \r
            case 0x09: out.append(contentsOf: [0x5C, 0x74])  // \t
            case ..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: [0x5C, 0x75, 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])  // \u00XX
            default: out.append(byte)
            }
        }
        out.append(0x22)
    }

    /// An object of string members, keys sorted.
    public static func object(_ members: [String: String], into out: inout [UInt8]) {
        out.append(0x7B)
        for (i, key) in members.keys.sorted().enumerated() {
            if i > 0 { out.append(0x2C) }
            string(key, into: &out)
            out.append(0x3A)
            string(members[key]!, into: &out)
        }
        out.append(0x7D)
    }
}

extension ContinueRequest {
    /// This request as compact JSON (`CompactJSON`).
    public var compactJSON: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        if let activityID {
            out.append(contentsOf: Array(#"{"activityID":"#.utf8))
            CompactJSON.string(activityID.uuidString, into: &out)
            out.append(0x2C)
        } else {
            out.append(0x7B)
        }
        out.append(contentsOf: Array(#""delivery":"#.utf8))
        CompactJSON.string(delivery.rawValue, into: &out)
        out.append(contentsOf: Array(#","environment":"#.utf8))
        CompactJSON.object(environment, into: &out)
        out.append(contentsOf: Array(#","peer":"#.utf8))
        CompactJSON.string(peer, into: &out)
        out.append(0x7D)
        return out
    }
}
