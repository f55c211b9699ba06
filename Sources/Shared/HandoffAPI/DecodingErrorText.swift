#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// DecodingError's own descriptions are long and mention Swift types; a client wants the JSON path.
public enum DecodingErrorText {
    public static func describe(_ error: DecodingError) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            let p = keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return p.isEmpty ? "the top level" : String(p.dropFirst(p.hasPrefix(".") ? 1 : 0))
        }
        switch error {
        case .keyNotFound(let key, let ctx): return "\(path(ctx.codingPath + [key])) is missing"
        case .typeMismatch(_, let ctx): return "\(path(ctx.codingPath)) has the wrong JSON type"
        case .valueNotFound(_, let ctx): return "\(path(ctx.codingPath)) is null"
        case .dataCorrupted(let ctx):
            if ctx.codingPath.isEmpty { return "not valid JSON" }
            return "\(path(ctx.codingPath)): \(ctx.debugDescription)"
        @unknown default: return "\(error)"
        }
    }
}
