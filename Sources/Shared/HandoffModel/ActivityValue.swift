#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A typed `userInfo` value. Every case round-trips with its type through the binary encoding
/// (docs/activity-encoding.md) and the local API's JSON, which is why JSON's own types are not
/// enough: JSON cannot tell an int from a double, or bytes, dates, URLs and UUIDs from strings.
public indirect enum ActivityValue: Sendable {
    case string(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    case data(Data)
    case date(Timestamp)
    /// An absolute URI of any scheme (a `file:` URL is fine as data; only `webpageURL` is ever opened).
    case url(String)
    case uuid(UUID)
    case null
    case array([ActivityValue])
    case dictionary([String: ActivityValue])

    /// The name used on the command line (`page:int=3`), in JSON (`{"int":3}`) and in messages.
    public var typeName: ActivityValueType {
        switch self {
        case .string: .string
        case .int: .int
        case .double: .double
        case .bool: .bool
        case .data: .data
        case .date: .date
        case .url: .url
        case .uuid: .uuid
        case .null: .null
        case .array: .array
        case .dictionary: .dictionary
        }
    }
}

public enum ActivityValueType: String, Sendable, CaseIterable {
    case string, int, double, bool, data, date, url, uuid, null, array, dictionary
}

extension ActivityValue: Equatable {
    /// Doubles compare by bit pattern so that NaN round-trips "equal" and -0.0 is told from 0.0:
    /// equality here means "the same value came back", not arithmetic equality.
    public static func == (lhs: ActivityValue, rhs: ActivityValue) -> Bool {
        switch (lhs, rhs) {
        case (.string(let a), .string(let b)): a.utf8.elementsEqual(b.utf8)
        case (.int(let a), .int(let b)): a == b
        case (.double(let a), .double(let b)): a.bitPattern == b.bitPattern
        case (.bool(let a), .bool(let b)): a == b
        case (.data(let a), .data(let b)): a == b
        case (.date(let a), .date(let b)): a == b
        case (.url(let a), .url(let b)): a == b
        case (.uuid(let a), .uuid(let b)): a == b
        case (.null, .null): true
        case (.array(let a), .array(let b)): a == b
        case (.dictionary(let a), .dictionary(let b)): a == b
        default: false
        }
    }
}

extension ActivityValue {
    /// How deeply arrays and dictionaries may nest. Bounded so that no decoder, printer or validator
    /// can be driven into deep recursion by a hostile encoding.
    public static let maximumNestingDepth = 32

    /// The deepest container nesting in this value (a scalar is 0, `[1]` is 1).
    public var nestingDepth: Int {
        switch self {
        case .array(let items): 1 + (items.map(\.nestingDepth).max() ?? 0)
        case .dictionary(let entries): 1 + (entries.values.map(\.nestingDepth).max() ?? 0)
        default: 0
        }
    }
}
