#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The binary encoding of an activity, version 1: what is stored on disk and sent between devices.
/// The format is specified in docs/activity-encoding.md; this file and that page change together.
///
/// The decoder is the first thing that touches bytes from another device, so it is strict and
/// bounded: every length is checked against what is left, nesting is limited, strings must be UTF-8,
/// and nothing is allocated in proportion to a claimed count.
public enum ActivityEncoding {
    public static let magic: [UInt8] = [0x48, 0x4F]  // "HO"
    public static let version: UInt8 = 1

    enum Field: UInt64 {
        case id = 1
        case type = 2
        case title = 3
        case userInfo = 4
        case requiredUserInfoKey = 5  // repeated, one key per occurrence, ascending byte order
        case webpageURL = 6
        case targetContentIdentifier = 7
        case persistentIdentifier = 8
        case expirationDate = 9
        case flags = 10
        case createdAt = 11
        case updatedAt = 12
        case originDevice = 13

        /// Fields whose payload has inner structure that must be consumed exactly.
        var isStructured: Bool {
            switch self {
            case .id, .userInfo, .expirationDate, .flags, .createdAt, .updatedAt: true
            default: false
            }
        }
    }

    enum Flag {
        static let supportsContinuationStreams: UInt64 = 1 << 0
        static let needsSave: UInt64 = 1 << 1
    }

    enum Tag: UInt8 {
        case null = 0, `false` = 1, `true` = 2, int = 3, double = 4, string = 5, data = 6, date = 7,
            url = 8, uuid = 9, array = 10, dictionary = 11
    }

    // MARK: Encoding

    public static func encode(_ activity: Activity) -> [UInt8] {
        var w = ByteWriter(capacity: 256)
        w.raw(magic)
        w.byte(version)
        let c = activity.content
        field(&w, .id) { $0.raw(uuidBytes(activity.id)) }
        field(&w, .type) { $0.raw(c.type.utf8) }
        if !c.title.isEmpty { field(&w, .title) { $0.raw(c.title.utf8) } }
        if !c.userInfo.isEmpty { field(&w, .userInfo) { encodeValue(.dictionary(c.userInfo), into: &$0) } }
        for key in c.requiredUserInfoKeys.sorted(by: ActivityContent.byteOrder) {
            field(&w, .requiredUserInfoKey) { $0.raw(key.utf8) }
        }
        if let v = c.webpageURL { field(&w, .webpageURL) { $0.raw(v.utf8) } }
        if let v = c.targetContentIdentifier { field(&w, .targetContentIdentifier) { $0.raw(v.utf8) } }
        if let v = c.persistentIdentifier { field(&w, .persistentIdentifier) { $0.raw(v.utf8) } }
        if let v = c.expirationDate { field(&w, .expirationDate) { $0.zigzag(v.microsecondsSinceEpoch) } }
        var flags: UInt64 = 0
        if c.supportsContinuationStreams { flags |= Flag.supportsContinuationStreams }
        if c.needsSave { flags |= Flag.needsSave }
        if flags != 0 { field(&w, .flags) { $0.varint(flags) } }
        field(&w, .createdAt) { $0.zigzag(activity.createdAt.microsecondsSinceEpoch) }
        field(&w, .updatedAt) { $0.zigzag(activity.updatedAt.microsecondsSinceEpoch) }
        if let v = activity.originDevice { field(&w, .originDevice) { $0.raw(v.utf8) } }
        return w.bytes
    }

    /// The size `encode` would produce, without building it twice in the common case.
    public static func encodedSize(of activity: Activity) -> Int {
        encode(activity).count
    }

    private static func field(_ w: inout ByteWriter, _ f: Field, _ body: (inout ByteWriter) -> Void) {
        var inner = ByteWriter()
        body(&inner)
        w.varint(f.rawValue)
        w.lengthPrefixed(inner.bytes)
    }

    static func encodeValue(_ value: ActivityValue, into w: inout ByteWriter) {
        switch value {
        case .null: w.byte(Tag.null.rawValue)
        case .bool(let b): w.byte(b ? Tag.true.rawValue : Tag.false.rawValue)
        case .int(let i):
            w.byte(Tag.int.rawValue)
            w.zigzag(i)
        case .double(let d):
            w.byte(Tag.double.rawValue)
            w.uint64BE(d.bitPattern)
        case .string(let s):
            w.byte(Tag.string.rawValue)
            w.lengthPrefixed(Array(s.utf8))
        case .data(let d):
            w.byte(Tag.data.rawValue)
            w.lengthPrefixed(d)
        case .date(let t):
            w.byte(Tag.date.rawValue)
            w.zigzag(t.microsecondsSinceEpoch)
        case .url(let u):
            w.byte(Tag.url.rawValue)
            w.lengthPrefixed(Array(u.utf8))
        case .uuid(let u):
            w.byte(Tag.uuid.rawValue)
            w.raw(uuidBytes(u))
        case .array(let items):
            w.byte(Tag.array.rawValue)
            w.varint(UInt64(items.count))
            for item in items { encodeValue(item, into: &w) }
        case .dictionary(let entries):
            w.byte(Tag.dictionary.rawValue)
            w.varint(UInt64(entries.count))
            for key in entries.keys.sorted(by: ActivityContent.byteOrder) {
                w.lengthPrefixed(Array(key.utf8))
                encodeValue(entries[key]!, into: &w)
            }
        }
    }

    // MARK: Decoding

    /// Decodes one activity. `maximumSize` bounds the input before any work is done. Semantic rules
    /// (reverse-DNS type, sizes, http(s) webpage URL…) are `Activity.validate`'s job; what this
    /// returns is structurally sound: valid UTF-8, representable dates, absolute URLs, bounded depth.
    public static func decode(_ bytes: [UInt8], maximumSize: Int = ActivityLimits.defaultMaximumEncodedSize)
        throws(ActivityError) -> Activity
    {
        guard bytes.count <= maximumSize else {
            throw ActivityError(.payloadTooLarge, "encoded activity is \(bytes.count) bytes; the limit is \(maximumSize)")
        }
        guard bytes.count >= 3, bytes[0] == magic[0], bytes[1] == magic[1] else {
            throw ActivityError(.malformedEncoding, "not a handoff activity encoding (bad magic)")
        }
        guard bytes[2] == version else {
            throw ActivityError(
                .unsupportedVersion,
                "the activity uses encoding version \(bytes[2]); this handoff reads version \(version) — update handoff on this device"
            )
        }
        var r = ByteReader(bytes)
        do {
            _ = try r.take(3)
            return try decodeFields(&r)
        } catch let e as ByteReaderError {
            throw ActivityError(.malformedEncoding, "malformed activity encoding at byte \(e.offset): \(e.reason)")
        } catch let e as ActivityError {
            throw e
        } catch {
            throw ActivityError(.malformedEncoding, "malformed activity encoding")
        }
    }

    private static func decodeFields(_ r: inout ByteReader) throws -> Activity {
        var id: UUID?
        var type: String?
        var createdAt: Timestamp?
        var updatedAt: Timestamp?
        var content = ActivityContent(type: "")
        var requiredKeys: [String] = []
        var originDevice: String?
        var lastField: UInt64 = 0

        while !r.isAtEnd {
            let number = try r.varint()
            let repeatable = number == Field.requiredUserInfoKey.rawValue
            guard number > lastField || (repeatable && number == lastField) else {
                throw malformed("field \(number) is out of order or repeated")
            }
            lastField = number
            let payload = try r.lengthPrefixed()
            guard let field = Field(rawValue: number) else { continue }  // a newer writer's field: skip it
            var p = ByteReader(Array(payload))
            switch field {
            case .id: id = try uuid(from: try p.take(16))
            case .type: type = try text(payload)
            case .title: content.title = try text(payload)
            case .userInfo:
                guard case .dictionary(let d) = try decodeValue(&p, depth: 0) else {
                    throw malformed("userInfo is not a dictionary")
                }
                content.userInfo = d
            case .requiredUserInfoKey:
                let key = try text(payload)
                if let last = requiredKeys.last, !ActivityContent.byteOrder(last, key) {
                    throw malformed("required keys are not in ascending order")
                }
                requiredKeys.append(key)
            case .webpageURL: content.webpageURL = try text(payload)
            case .targetContentIdentifier: content.targetContentIdentifier = try text(payload)
            case .persistentIdentifier: content.persistentIdentifier = try text(payload)
            case .expirationDate: content.expirationDate = try timestamp(&p)
            case .flags:
                let flags = try p.varint()
                content.supportsContinuationStreams = flags & Flag.supportsContinuationStreams != 0
                content.needsSave = flags & Flag.needsSave != 0
            case .createdAt: createdAt = try timestamp(&p)
            case .updatedAt: updatedAt = try timestamp(&p)
            case .originDevice: originDevice = try text(payload)
            }
            if field.isStructured, !p.isAtEnd {
                throw malformed("field \(number) has \(p.remaining) trailing bytes")
            }
        }
        guard let id, let type, let createdAt, let updatedAt else {
            throw malformed("a required field (id, type, createdAt, updatedAt) is missing")
        }
        content.type = type
        content.requiredUserInfoKeys = requiredKeys
        return Activity(id: id, content: content, createdAt: createdAt, updatedAt: updatedAt, originDevice: originDevice)
    }

    static func decodeValue(_ r: inout ByteReader, depth: Int) throws -> ActivityValue {
        let tagByte = try r.byte()
        guard let tag = Tag(rawValue: tagByte) else { throw malformed("unknown value type \(tagByte)") }
        switch tag {
        case .null: return .null
        case .false: return .bool(false)
        case .true: return .bool(true)
        case .int: return .int(try r.zigzag())
        case .double: return .double(Double(bitPattern: try r.uint64BE()))
        case .string: return .string(try text(try r.lengthPrefixed()))
        case .data: return .data(Data(try r.lengthPrefixed()))
        case .date: return .date(try timestamp(&r))
        case .url:
            let u = try text(try r.lengthPrefixed())
            guard URIRules.isAbsoluteURI(u) else { throw malformed("a url value is not an absolute URL") }
            return .url(u)
        case .uuid: return .uuid(try uuid(from: try r.take(16)))
        case .array:
            guard depth < ActivityValue.maximumNestingDepth else { throw malformed("values nest too deeply") }
            let count = try r.varint()
            guard count <= UInt64(r.remaining) else { throw malformed("array claims more items than bytes left") }
            var items: [ActivityValue] = []
            for _ in 0..<count { items.append(try decodeValue(&r, depth: depth + 1)) }
            return .array(items)
        case .dictionary:
            guard depth < ActivityValue.maximumNestingDepth else { throw malformed("values nest too deeply") }
            let count = try r.varint()
            guard count <= UInt64(r.remaining / 2) else {
                throw malformed("dictionary claims more entries than bytes left")
            }
            var entries: [String: ActivityValue] = [:]
            var previous: String?
            for _ in 0..<count {
                let key = try text(try r.lengthPrefixed())
                if let previous, !ActivityContent.byteOrder(previous, key) {
                    throw malformed("dictionary keys are not in ascending byte order")
                }
                previous = key
                let value = try decodeValue(&r, depth: depth + 1)
                // Distinct bytes can still be one Swift String (NFC vs NFD): that is a duplicate too.
                guard entries.updateValue(value, forKey: key) == nil else {
                    throw malformed("dictionary has two keys that are the same text")
                }
            }
            return .dictionary(entries)
        }
    }

    private static func text(_ bytes: ArraySlice<UInt8>) throws -> String {
        guard let s = String(validating: bytes, as: UTF8.self) else { throw malformed("text is not valid UTF-8") }
        return s
    }

    private static func timestamp(_ r: inout ByteReader) throws -> Timestamp {
        let t = Timestamp(microsecondsSinceEpoch: try r.zigzag())
        guard t.isRepresentable else { throw malformed("a date lies outside the years 0001–9999") }
        return t
    }

    private static func malformed(_ reason: String) -> ActivityError {
        ActivityError(.malformedEncoding, "malformed activity encoding: \(reason)")
    }
}

// MARK: - UUID bytes

func uuidBytes(_ u: UUID) -> [UInt8] {
    withUnsafeBytes(of: u.uuid) { Array($0) }
}

func uuid(from bytes: ArraySlice<UInt8>) throws -> UUID {
    guard bytes.count == 16 else { throw ActivityError(.malformedEncoding, "a UUID is not 16 bytes") }
    let b = Array(bytes)
    return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
}
