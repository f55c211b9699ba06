/// Which continuations a window takes (docs/apps.md, "Where a continuation goes"), as Apple's
/// scene `activationConditions`: the `targetContentIdentifier`s it can show
/// (`canActivateForTargetContentIdentifierPredicate`) and those it prefers to
/// (`prefersToActivateForTargetContentIdentifierPredicate`). Each pattern is an exact id, a prefix
/// ending in `*` (`item-*`), or `*` for anything. A window that prefers an id can take it too.
public struct ActivationConditions: Codable, Sendable, Equatable {
    public var can: [String]
    public var prefers: [String]

    public static let maximumPatterns = 32
    public static let maximumPatternBytes = 512
    /// All of a window's patterns together: what handoffd keeps for an app stays small.
    public static let maximumBytes = 4096

    public init(can: [String] = [], prefers: [String] = []) {
        self.can = can
        self.prefers = prefers
    }

    public func canActivate(for target: String) -> Bool {
        prefersToActivate(for: target) || can.contains { Self.pattern($0, matches: target) }
    }

    public func prefersToActivate(for target: String) -> Bool {
        prefers.contains { Self.pattern($0, matches: target) }
    }

    /// It takes anything (`*`): also a continuation without a target.
    public var takesAnything: Bool { can.contains("*") || prefers.contains("*") }

    enum CodingKeys: String, CodingKey { case can, prefers }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        can = try c.decodeIfPresent([String].self, forKey: .can) ?? []
        prefers = try c.decodeIfPresent([String].self, forKey: .prefers) ?? []
    }

    public static func pattern(_ pattern: String, matches target: String) -> Bool {
        guard pattern.hasSuffix("*") else { return pattern == target }
        return target.hasPrefix(pattern.dropLast())
    }

    /// What is wrong with it, if anything: too many patterns, or one empty or too long.
    public var problem: String? {
        for (name, list) in [("can", can), ("prefers", prefers)] {
            if list.count > Self.maximumPatterns { return "\(name) has \(list.count) patterns; at most \(Self.maximumPatterns)" }
            if let bad = list.first(where: { $0.isEmpty || $0.utf8.count > Self.maximumPatternBytes }) {
                return "a pattern of \(name) is 1 to \(Self.maximumPatternBytes) bytes (one is \(bad.utf8.count))"
            }
        }
        let bytes = (can + prefers).reduce(0) { $0 + $1.utf8.count }
        if bytes > Self.maximumBytes { return "the patterns are \(bytes) bytes together; at most \(Self.maximumBytes)" }
        return nil
    }
}
