#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// The JSON form of activities, used by the local API and printed verbatim by `handoffctl --json`.
// Each typed value is an object with exactly one key naming its type: {"int":3}, {"data":"aGk="},
// {"date":"2026-11-22T10:00:00Z"} — see docs/activity-encoding.md, "JSON form".

struct DynamicKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ s: String) { stringValue = s }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

extension Timestamp: Codable {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let t = Timestamp(rfc3339: text) else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: "\(displayQuoted(text)) is not an RFC 3339 date such as 2026-11-22T10:00:00Z"
                )
            )
        }
        self = t
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(rfc3339)
    }
}

extension ActivityValue: Codable {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: DynamicKey.self)
        guard c.allKeys.count == 1, let key = c.allKeys.first else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription:
                        "a typed value is an object with exactly one key naming its type, such as {\"int\": 3}"
                )
            )
        }
        guard let type = ActivityValueType(rawValue: key.stringValue) else {
            let known = ActivityValueType.allCases.map(\.rawValue).joined(separator: ", ")
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath + [key],
                    debugDescription: "unknown value type \(displayQuoted(key.stringValue)); expected one of \(known)"
                )
            )
        }
        func bad(_ why: String) -> DecodingError {
            .dataCorrupted(.init(codingPath: decoder.codingPath + [key], debugDescription: why))
        }
        switch type {
        case .string: self = .string(try c.decode(String.self, forKey: key))
        case .int: self = .int(try c.decode(Int64.self, forKey: key))
        case .double:
            if let text = try? c.decode(String.self, forKey: key) {
                switch text {
                case "nan": self = .double(.nan)
                case "inf": self = .double(.infinity)
                case "-inf": self = .double(-.infinity)
                default: throw bad("a double is a JSON number, or one of \"nan\", \"inf\", \"-inf\"")
                }
            } else {
                self = .double(try c.decode(Double.self, forKey: key))
            }
        case .bool: self = .bool(try c.decode(Bool.self, forKey: key))
        case .data:
            let text = try c.decode(String.self, forKey: key)
            guard let data = Data(base64Encoded: text) else { throw bad("data is not standard base64") }
            self = .data(data)
        case .date: self = .date(try c.decode(Timestamp.self, forKey: key))
        case .url: self = .url(try c.decode(String.self, forKey: key))
        case .uuid:
            let text = try c.decode(String.self, forKey: key)
            guard let u = UUID(uuidString: text) else { throw bad("\(displayQuoted(text)) is not a UUID") }
            self = .uuid(u)
        case .null:
            guard try c.decodeNil(forKey: key) else { throw bad("a null value is written {\"null\": null}") }
            self = .null
        case .array: self = .array(try c.decode([ActivityValue].self, forKey: key))
        case .dictionary: self = .dictionary(try c.decode([String: ActivityValue].self, forKey: key))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: DynamicKey.self)
        let key = DynamicKey(typeName.rawValue)
        switch self {
        case .string(let s): try c.encode(s, forKey: key)
        case .int(let i): try c.encode(i, forKey: key)
        case .double(let d):
            if d.isNaN {
                try c.encode("nan", forKey: key)
            } else if d.isInfinite {
                try c.encode(d > 0 ? "inf" : "-inf", forKey: key)
            } else {
                try c.encode(d, forKey: key)
            }
        case .bool(let b): try c.encode(b, forKey: key)
        case .data(let d): try c.encode(d.base64EncodedString(), forKey: key)
        case .date(let t): try c.encode(t, forKey: key)
        case .url(let u): try c.encode(u, forKey: key)
        case .uuid(let u): try c.encode(u.lowercasedString, forKey: key)
        case .null: try c.encodeNil(forKey: key)
        case .array(let a): try c.encode(a, forKey: key)
        case .dictionary(let d): try c.encode(d, forKey: key)
        }
    }
}

extension ActivityContent: Codable {
    enum CodingKeys: String, CodingKey {
        case type, title, userInfo, requiredUserInfoKeys, webpageURL, targetContentIdentifier,
            persistentIdentifier, expirationDate, supportsContinuationStreams, needsSave
    }

    /// Absent optional fields take their defaults; unknown keys are ignored so that an older daemon
    /// keeps working with a newer client.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            type: try c.decode(String.self, forKey: .type),
            title: try c.decodeIfPresent(String.self, forKey: .title) ?? "",
            userInfo: try c.decodeIfPresent([String: ActivityValue].self, forKey: .userInfo) ?? [:],
            requiredUserInfoKeys: try c.decodeIfPresent([String].self, forKey: .requiredUserInfoKeys) ?? [],
            webpageURL: try c.decodeIfPresent(String.self, forKey: .webpageURL),
            targetContentIdentifier: try c.decodeIfPresent(String.self, forKey: .targetContentIdentifier),
            persistentIdentifier: try c.decodeIfPresent(String.self, forKey: .persistentIdentifier),
            expirationDate: try c.decodeIfPresent(Timestamp.self, forKey: .expirationDate),
            supportsContinuationStreams: try c.decodeIfPresent(Bool.self, forKey: .supportsContinuationStreams) ?? false,
            needsSave: try c.decodeIfPresent(Bool.self, forKey: .needsSave) ?? false
        )
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(type, forKey: .type)
        try c.encode(title, forKey: .title)
        try c.encode(userInfo, forKey: .userInfo)
        try c.encode(requiredUserInfoKeys, forKey: .requiredUserInfoKeys)
        try c.encodeIfPresent(webpageURL, forKey: .webpageURL)
        try c.encodeIfPresent(targetContentIdentifier, forKey: .targetContentIdentifier)
        try c.encodeIfPresent(persistentIdentifier, forKey: .persistentIdentifier)
        try c.encodeIfPresent(expirationDate, forKey: .expirationDate)
        try c.encode(supportsContinuationStreams, forKey: .supportsContinuationStreams)
        try c.encode(needsSave, forKey: .needsSave)
    }
}

extension Activity: Codable {
    enum CodingKeys: String, CodingKey {
        case id, createdAt, updatedAt, originDevice
    }

    /// One flat object: the daemon-assigned fields beside the content's.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            id: try c.decode(UUID.self, forKey: .id),
            content: try ActivityContent(from: decoder),
            createdAt: try c.decode(Timestamp.self, forKey: .createdAt),
            updatedAt: try c.decode(Timestamp.self, forKey: .updatedAt),
            originDevice: try c.decodeIfPresent(String.self, forKey: .originDevice)
        )
    }

    public func encode(to encoder: any Encoder) throws {
        try content.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id.lowercasedString, forKey: .id)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(updatedAt, forKey: .updatedAt)
        try c.encodeIfPresent(originDevice, forKey: .originDevice)
    }
}
