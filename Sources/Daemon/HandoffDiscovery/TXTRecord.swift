/// A DNS-SD TXT record: `key=value` strings of at most 255 bytes each (RFC 6763 §6).
public struct TXTRecord: Sendable, Equatable {
    public var entries: [(key: String, value: [UInt8])]

    public init(_ entries: [(key: String, value: [UInt8])] = []) {
        self.entries = entries
    }

    public subscript(key: String) -> [UInt8]? {
        entries.first { $0.key.lowercased() == key.lowercased() }?.value
    }

    public func string(_ key: String) -> String? {
        self[key].map { String(decoding: $0, as: UTF8.self) }
    }

    /// The wire form (rdata); nil if a string would exceed 255 bytes.
    public var rdata: [UInt8]? {
        var out: [UInt8] = []
        for (key, value) in entries {
            let item = Array(key.utf8) + [0x3D] + value
            guard item.count <= 255 else { return nil }
            out.append(UInt8(item.count))
            out += item
        }
        return out.isEmpty ? [0] : out
    }

    /// Parses rdata; malformed strings are skipped, as RFC 6763 asks.
    public init(rdata: [UInt8]) {
        var entries: [(String, [UInt8])] = []
        var i = 0
        while i < rdata.count {
            let length = Int(rdata[i])
            i += 1
            guard i + length <= rdata.count else { break }
            let item = rdata[i..<(i + length)]
            i += length
            guard let eq = item.firstIndex(of: 0x3D), eq > item.startIndex else { continue }
            entries.append((String(decoding: item[..<eq], as: UTF8.self), Array(item[(eq + 1)...])))
        }
        self.entries = entries.map { (key: $0.0, value: $0.1) }
    }

    public static func == (a: TXTRecord, b: TXTRecord) -> Bool {
        a.entries.count == b.entries.count && zip(a.entries, b.entries).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }
}
