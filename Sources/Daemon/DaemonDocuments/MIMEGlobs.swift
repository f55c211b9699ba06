#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A file's MIME type from its name, as the desktop finds it: shared-mime-info's `globs2` files
/// (`weight:type:pattern[:flags]` lines; the freedesktop Shared MIME-info Database
/// specification). The highest weight wins, then the longest pattern; a pattern is matched
/// without regard to case unless its flags say `cs`. For a document whose opener did not record
/// its type; the file's content is never looked at.
package final class MIMEGlobs: Sendable {
    struct Glob: Sendable {
        let weight: Int
        let type: String
        let pattern: String
        let caseSensitive: Bool
    }

    /// Where the database is read from, on first use (never at start-up: most runs of handoffd
    /// never type a document).
    private let dataDirectories: [String]
    /// Best first; nil until read.
    private let loaded: Mutex<[Glob]?>

    package static let fallback = "application/octet-stream"

    /// The `globs2` files of `dataDirectories` (`$XDG_DATA_HOME` first, then `$XDG_DATA_DIRS`),
    /// merged: a type's patterns add up across directories, except that `__NOGLOBS__` in one
    /// drops the type's patterns from those after it. Read when a name is first typed.
    package init(dataDirectories: [String]) {
        self.dataDirectories = dataDirectories
        loaded = Mutex(nil)
    }

    init(_ globs: [Glob]) {
        dataDirectories = []
        loaded = Mutex(Self.ordered(globs))
    }

    /// The globs, read on first use.
    var globs: [Glob] {
        loaded.withLock { globs in
            if let globs { return globs }
            let read = Self.ordered(Self.read(dataDirectories))
            globs = read
            return read
        }
    }

    static func read(_ dataDirectories: [String]) -> [Glob] {
        var cleared: Set<String> = []
        var globs: [Glob] = []
        for directory in dataDirectories {
            guard let text = try? String(contentsOfFile: directory + "/mime/globs2", encoding: .utf8) else { continue }
            let parsed = Self.parse(text)
            globs += parsed.filter { !cleared.contains($0.type) && $0.pattern != "__noglobs__" && $0.pattern != "__NOGLOBS__" }
            cleared.formUnion(parsed.filter { $0.pattern == "__noglobs__" || $0.pattern == "__NOGLOBS__" }.map(\.type))
        }
        return globs
    }

    static func ordered(_ globs: [Glob]) -> [Glob] {
        globs.sorted { ($0.weight, $0.pattern.utf8.count) > ($1.weight, $1.pattern.utf8.count) }
    }

    static func parse(_ text: String) -> [Glob] {
        text.split(separator: "\n").compactMap { line in
            guard !line.hasPrefix("#") else { return nil }
            let fields = line.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false)
            guard fields.count >= 3, let weight = Int(fields[0]), !fields[2].isEmpty else { return nil }
            let flags = fields.count == 4 ? fields[3].split(separator: ",") : []
            let caseSensitive = flags.contains("cs")
            // Kept lowercase unless case matters: each name is lowercased once to match.
            let pattern = caseSensitive ? String(fields[2]) : fields[2].lowercased()
            return Glob(weight: weight, type: String(fields[1]), pattern: pattern, caseSensitive: caseSensitive)
        }
    }

    /// The type of a file called `name`, or nil when no pattern matches.
    package func type(ofName name: String) -> String? {
        let lower = name.lowercased()
        return globs.first { glob in
            fnmatch(glob.pattern, glob.caseSensitive ? name : lower, 0) == 0
        }?.type
    }
}
