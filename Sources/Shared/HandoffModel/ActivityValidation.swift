/// The rules of docs/activity-encoding.md, in one place: the CLI checks with them before sending (so a typo fails fast
/// and offline) and the daemon checks with them again (it trusts no client).
extension ActivityContent {
    /// Throws the first rule broken, checked in the order a user reads the fields.
    public func validate(now: Timestamp) throws(ActivityError) {
        try ActivityContent.validateType(type)
        try validateTitle()
        if let url = webpageURL, !URIRules.isWebURL(url) {
            throw ActivityError(
                .invalidWebpageURL,
                "webpage URL \(displayQuoted(url)) is not an http:// or https:// URL with a host; only web pages can be handed to a browser"
            )
        }
        try ActivityContent.validateValue(.dictionary(userInfo), path: "userInfo", depth: 0)
        for key in requiredUserInfoKeys where userInfo[key] == nil {
            throw ActivityError(
                .missingRequiredKey,
                "required userInfo key \(displayQuoted(key)) is missing; add it (e.g. --info \(key)=…) or drop it from the required keys"
            )
        }
        if let expiry = expirationDate, expiry <= now {
            throw ActivityError(.expired, "the expiration date \(expiry) is not in the future")
        }
    }

    /// Reverse-DNS: two or more dot-separated labels of letters, digits, `-` and `_`, the first
    /// starting with a letter. Deliberately plain ASCII so that it is safe in file names, logs and
    /// `.desktop` files.
    public static func validateType(_ type: String) throws(ActivityError) {
        let bytes = Array(type.utf8)
        guard !bytes.isEmpty else {
            throw ActivityError(.invalidType, "activity type is empty; use a reverse-DNS name such as com.example.editor.edit")
        }
        guard bytes.count <= ActivityLimits.maximumTypeBytes else {
            throw ActivityError(
                .invalidType,
                "activity type is \(bytes.count) bytes long; the limit is \(ActivityLimits.maximumTypeBytes)"
            )
        }
        let labels = bytes.split(separator: 0x2E, omittingEmptySubsequences: false)
        let wellFormed =
            labels.count >= 2
            && labels.allSatisfy { label in
                !label.isEmpty
                    && label.allSatisfy { c in
                        (c | 0x20 >= 0x61 && c | 0x20 <= 0x7A) || (c >= 0x30 && c <= 0x39) || c == 0x2D || c == 0x5F
                    }
            }
            && ((bytes[0] | 0x20) >= 0x61 && (bytes[0] | 0x20) <= 0x7A)
        guard wellFormed else {
            throw ActivityError(
                .invalidType,
                "activity type \(displayQuoted(type)) is not reverse-DNS; use dot-separated labels of letters, digits, - and _, such as com.example.editor.edit"
            )
        }
    }

    private func validateTitle() throws(ActivityError) {
        let count = title.utf8.count
        guard count <= ActivityLimits.maximumTitleBytes else {
            throw ActivityError(
                .invalidTitle,
                "title is \(count) bytes of UTF-8; the limit is \(ActivityLimits.maximumTitleBytes)"
            )
        }
        if title.unicodeScalars.contains(where: isControl) {
            throw ActivityError(.invalidTitle, "title contains control characters (such as a newline); use one line of text")
        }
    }

    private static func validateValue(_ value: ActivityValue, path: String, depth: Int) throws(ActivityError) {
        switch value {
        case .url(let url) where !URIRules.isAbsoluteURI(url):
            throw ActivityError(
                .invalidValue,
                "\(path) holds \(displayQuoted(url)), which is not an absolute URL (scheme:…, percent-encoded)"
            )
        case .date(let date) where !date.isRepresentable:
            throw ActivityError(.invalidValue, "\(path) holds a date outside the years 0001–9999")
        case .array(let items):
            try checkDepth(depth, path: path)
            for (index, item) in items.enumerated() {
                try validateValue(item, path: "\(path)[\(index)]", depth: depth + 1)
            }
        case .dictionary(let entries):
            try checkDepth(depth, path: path)
            for key in entries.keys.sorted(by: byteOrder) {
                guard !key.isEmpty else { throw ActivityError(.invalidValue, "\(path) has an empty key") }
                if key.unicodeScalars.contains(where: isControl) {
                    throw ActivityError(.invalidValue, "\(path) has a key with control characters: \(displayQuoted(key))")
                }
                try validateValue(entries[key]!, path: "\(path).\(key)", depth: depth + 1)
            }
        default:
            break
        }
    }

    private static func checkDepth(_ depth: Int, path: String) throws(ActivityError) {
        guard depth < ActivityValue.maximumNestingDepth else {
            throw ActivityError(
                .invalidValue,
                "\(path) nests arrays and dictionaries deeper than \(ActivityValue.maximumNestingDepth) levels"
            )
        }
    }
}

extension Activity {
    /// Validates the content and the encoded size against the hard cap; returns the encoded size so
    /// the caller can warn above `ActivityLimits.warningEncodedSize`.
    @discardableResult
    public func validate(now: Timestamp, limits: ActivityLimits) throws(ActivityError) -> Int {
        try content.validate(now: now)
        let size = ActivityEncoding.encodedSize(of: self)
        guard size <= limits.maximumEncodedSize else {
            throw ActivityError(
                .payloadTooLarge,
                "the activity encodes to \(size) bytes; the limit is \(limits.maximumEncodedSize). Move bulk data into a continuation stream"
            )
        }
        return size
    }
}

/// C0 and C1 control characters and DEL: they would let a title rewrite a terminal.
func isControl(_ scalar: Unicode.Scalar) -> Bool {
    scalar.value < 0x20 || (scalar.value >= 0x7F && scalar.value < 0xA0)
}

/// A string shown in a message, with anything unprintable escaped so the message stays one line.
public func displayQuoted(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars.prefix(200) {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case _ where isControl(scalar): out += "\\u{\(String(scalar.value, radix: 16))}"
        default: out.unicodeScalars.append(scalar)
        }
    }
    if text.unicodeScalars.count > 200 { out += "…" }
    return out + "\""
}
