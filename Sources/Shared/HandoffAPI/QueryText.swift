/// A value in a local-API query (`?persistentIdentifier=…`): percent-encoded by the client,
/// decoded by the daemon, byte for byte — as a path segment is (`PathSegment`), and `+` read as
/// a space, as queries have it.
public enum QueryText {
    public static func encode(_ text: String) -> String {
        PathSegment.escape(text)
    }

    /// The value, or nil if it is not percent-encoded UTF-8.
    public static func decode(_ text: Substring) -> String? {
        PathSegment.strictUnescape(Substring(text.replacing("+", with: "%20")))
    }

    /// The value of `name` in `query` (`a=1&b=2`), decoded.
    public static func value(_ name: String, in query: Substring) -> String? {
        for pair in query.split(separator: "&") where pair.hasPrefix(name + "=") {
            return decode(pair.dropFirst(name.count + 1))
        }
        return nil
    }
}
