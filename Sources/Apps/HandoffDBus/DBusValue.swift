#if canImport(Glibc)
import Glibc
#endif

/// One D-Bus value, typed as on the wire (the D-Bus specification's type system): what method
/// calls, replies and signals carry. Containers keep their element signature so that an empty
/// array still has a type.
///
/// `unixFD` holds a descriptor, and whoever holds the value owns it: one read from a message is a
/// duplicate that belongs to the reader; one given to `DBusConnection` in a call, reply or signal
/// becomes the connection's, which closes it once the message is built (so a reply can hand over
/// a stream without keeping a copy open).
/// Only the cases that hold a value directly are boxed: a byte array is not a box per byte.
public enum DBusValue: Sendable, Equatable {
    case byte(UInt8)
    case bool(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    case unixFD(Int32)
    /// `a…`: the element signature, then the elements (each of that signature).
    case array(element: String, [DBusValue])
    /// `(…)`.
    case structure([DBusValue])
    /// `{kv}`: only as the element of an array (`a{sv}`).
    indirect case dictEntry(DBusValue, DBusValue)
    indirect case variant(DBusValue)

    /// The value's complete type signature.
    public var signature: String {
        switch self {
        case .byte: "y"
        case .bool: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .array(let element, _): "a" + element
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        case .dictEntry(let key, let value): "{" + key.signature + value.signature + "}"
        case .variant: "v"
        }
    }

    /// Closes every descriptor in `values`: for values given to the connection, or received and
    /// not wanted.
    public static func closeDescriptors(in values: [DBusValue]) {
        for value in values {
            switch value {
            case .unixFD(let fd): _ = close(fd)
            case .array(_, let items), .structure(let items): closeDescriptors(in: items)
            case .dictEntry(let k, let v): closeDescriptors(in: [k, v])
            case .variant(let inner): closeDescriptors(in: [inner])
            default: break
            }
        }
    }

    /// Whether any descriptor is in `values`.
    static func holdDescriptors(_ values: [DBusValue]) -> Bool {
        values.contains { value in
            switch value {
            case .unixFD: true
            case .array(_, let items), .structure(let items): holdDescriptors(items)
            case .dictEntry(let k, let v): holdDescriptors([k, v])
            case .variant(let inner): holdDescriptors([inner])
            default: false
            }
        }
    }

    /// `a{sv}`, the usual dictionary of named, typed values.
    public static func vardict(_ entries: [String: DBusValue]) -> DBusValue {
        .array(element: "{sv}", entries.sorted { $0.key < $1.key }.map { .dictEntry(.string($0.key), .variant($0.value)) })
    }

    /// `as`.
    public static func strings(_ values: [String]) -> DBusValue {
        .array(element: "s", values.map { .string($0) })
    }

    public var stringValue: String? {
        switch self {
        case .string(let s), .objectPath(let s), .signature(let s): s
        case .variant(let inner): inner.stringValue
        default: nil
        }
    }

    public var boolValue: Bool? {
        switch self {
        case .bool(let b): b
        case .variant(let inner): inner.boolValue
        default: nil
        }
    }

    /// Any integer type, if it fits.
    public var integerValue: Int64? {
        switch self {
        case .byte(let v): Int64(v)
        case .int16(let v): Int64(v)
        case .uint16(let v): Int64(v)
        case .int32(let v): Int64(v)
        case .uint32(let v): Int64(v)
        case .int64(let v): v
        case .uint64(let v): Int64(exactly: v)
        case .variant(let inner): inner.integerValue
        default: nil
        }
    }

    /// The entries of an `a{s…}` dictionary (variants unwrapped one level); nil for anything else.
    /// A key given twice keeps its first value.
    public var dictionary: [String: DBusValue]? {
        guard case .array(let element, let items) = self, element.hasPrefix("{s") else { return nil }
        var result: [String: DBusValue] = [:]
        for item in items {
            guard case .dictEntry(.string(let key), let value) = item else { return nil }
            if result[key] == nil {
                if case .variant(let inner) = value { result[key] = inner } else { result[key] = value }
            }
        }
        return result
    }

    public var arrayItems: [DBusValue]? {
        switch self {
        case .array(_, let items): items
        case .variant(let inner): inner.arrayItems
        default: nil
        }
    }
}
