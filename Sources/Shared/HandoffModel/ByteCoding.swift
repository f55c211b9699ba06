#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Little building blocks shared by every binary format we define (the activity encoding, the
/// sealed advert, peer frames): an append-only writer and a bounds-checked reader that never
/// traps on hostile input.
public struct ByteWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    public mutating func byte(_ b: UInt8) { bytes.append(b) }
    public mutating func raw(_ data: some Sequence<UInt8>) { bytes.append(contentsOf: data) }

    /// Unsigned LEB128, minimal length.
    public mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    public mutating func zigzag(_ value: Int64) {
        varint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    public mutating func uint64BE(_ value: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    public mutating func uint16BE(_ value: UInt16) {
        bytes.append(UInt8(value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value))
    }

    public mutating func uint32BE(_ value: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    /// A varint length followed by the bytes.
    public mutating func lengthPrefixed(_ data: some Collection<UInt8>) {
        varint(UInt64(data.count))
        bytes.append(contentsOf: data)
    }

    /// Number of bytes `varint(value)` writes.
    public static func varintSize(_ value: UInt64) -> Int {
        var v = value
        var n = 1
        while v >= 0x80 {
            v >>= 7
            n += 1
        }
        return n
    }
}

/// Why a reader stopped; turned into a user-facing error by the format that uses it.
public struct ByteReaderError: Error, Sendable, Equatable {
    public var reason: String
    public var offset: Int
}

public struct ByteReader: Sendable {
    public let bytes: [UInt8]
    public private(set) var offset: Int
    public let end: Int

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
        self.offset = 0
        self.end = bytes.count
    }

    public var remaining: Int { end - offset }
    public var isAtEnd: Bool { offset >= end }

    func fail(_ reason: String) -> ByteReaderError { ByteReaderError(reason: reason, offset: offset) }

    public mutating func byte() throws(ByteReaderError) -> UInt8 {
        guard offset < end else { throw fail("unexpected end of data") }
        defer { offset += 1 }
        return bytes[offset]
    }

    public mutating func take(_ count: Int) throws(ByteReaderError) -> ArraySlice<UInt8> {
        guard count >= 0, count <= remaining else { throw fail("length \(count) runs past the end of the data") }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    /// Unsigned LEB128; refuses encodings longer than needed so every value has one encoding.
    public mutating func varint() throws(ByteReaderError) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        for index in 0..<10 {
            let b = try byte()
            if index == 9, b > 1 { throw fail("varint overflows 64 bits") }
            result |= UInt64(b & 0x7F) << shift
            if b & 0x80 == 0 {
                if index > 0, b == 0 { throw fail("varint is not minimally encoded") }
                return result
            }
            shift += 7
        }
        throw fail("varint overflows 64 bits")
    }

    public mutating func zigzag() throws(ByteReaderError) -> Int64 {
        let v = try varint()
        return Int64(bitPattern: (v >> 1) ^ (0 &- (v & 1)))
    }

    /// A varint length that must fit in what is left.
    public mutating func length() throws(ByteReaderError) -> Int {
        let n = try varint()
        guard n <= UInt64(remaining) else { throw fail("length \(n) runs past the end of the data") }
        return Int(n)
    }

    public mutating func lengthPrefixed() throws(ByteReaderError) -> ArraySlice<UInt8> {
        try take(try length())
    }

    public mutating func uint64BE() throws(ByteReaderError) -> UInt64 {
        var v: UInt64 = 0
        for b in try take(8) { v = v << 8 | UInt64(b) }
        return v
    }

    public mutating func uint32BE() throws(ByteReaderError) -> UInt32 {
        var v: UInt32 = 0
        for b in try take(4) { v = v << 8 | UInt32(b) }
        return v
    }

    public mutating func uint16BE() throws(ByteReaderError) -> UInt16 {
        let s = try take(2)
        return UInt16(s[s.startIndex]) << 8 | UInt16(s[s.startIndex + 1])
    }

    public mutating func utf8String() throws(ByteReaderError) -> String {
        let slice = try lengthPrefixed()
        guard let s = String(validating: slice, as: UTF8.self) else { throw fail("text is not valid UTF-8") }
        return s
    }
}

extension Sequence<UInt8> {
    /// The bytes as lowercase hexadecimal digits, two per byte (digests, file names).
    public var lowercaseHex: String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0xF)]] }, as: UTF8.self)
    }
}

extension ByteWriter {
    /// A UUID's 16 bytes, as RFC 9562 orders them.
    public mutating func uuid(_ id: UUID) { raw(withUnsafeBytes(of: id.uuid) { Array($0) }) }
}

extension ByteReader {
    public mutating func uuid() throws(ByteReaderError) -> UUID {
        let b = Array(try take(16))
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }
}

/// A value from another device that breaks its format or its bounds: refused before it is kept.
public struct MalformedInput: Error, Sendable, CustomStringConvertible {
    public let description: String

    public init(description: String) {
        self.description = description
    }
}
