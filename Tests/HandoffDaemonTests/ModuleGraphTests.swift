import Foundation
import Testing

/// docs/architecture.md, "Module graph", checked against the sources: who imports the C modules,
/// and that each daemon module imports only the ones below it.
@Suite struct ModuleGraphTests {
    /// The daemon's modules, lowest first.
    static let daemonLine = ["DaemonCore", "DaemonAccounts", "DaemonLinks", "DaemonStreams", "DaemonContinue", "DaemonLocalAPI", "HandoffDaemon"]

    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources")

    /// Every module under Sources/ and the modules its files import.
    static func imports() throws -> [String: Set<String>] {
        var graph: [String: Set<String>] = [:]
        let fm = FileManager.default
        for module in try fm.contentsOfDirectory(atPath: sources.path) {
            let directory = sources.appendingPathComponent(module)
            guard let files = fm.enumerator(atPath: directory.path) else { continue }
            var imported: Set<String> = []
            for case let file as String in files where file.hasSuffix(".swift") {
                let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
                for line in text.split(separator: "\n") {
                    let words = line.split(separator: " ")
                    if let i = words.firstIndex(of: "import"), i + 1 < words.count, words[..<i].allSatisfy({ $0.hasPrefix("@") }) {
                        imported.insert(String(words[i + 1]))
                    }
                }
            }
            graph[module] = imported
        }
        return graph
    }

    @Test func eachDaemonModuleImportsOnlyThoseBelowIt() throws {
        let graph = try Self.imports()
        for (rank, module) in Self.daemonLine.enumerated() {
            let imported = try #require(graph[module], "no Sources/\(module)")
            let above = Set(Self.daemonLine[rank...]).subtracting([module])
            #expect(imported.isDisjoint(with: above), "\(module) imports \(imported.intersection(above).sorted())")
        }
    }

    @Test func theCLibrariesHaveTheImportersTheDocumentNames() throws {
        let graph = try Self.imports()
        func importers(_ c: String) -> Set<String> { Set(graph.filter { $0.value.contains(c) }.keys) }
        #expect(importers("CHandoffOpenSSL") == ["HandoffTLS"])
        #expect(importers("CHandoffDNSSD") == ["HandoffDiscovery"])
        #expect(importers("CHandoffLinux") == ["HandoffSystem"])
    }

    @Test func noDaemonModuleIsLargerThan2500Lines() throws {
        let fm = FileManager.default
        for module in Self.daemonLine {
            let directory = Self.sources.appendingPathComponent(module)
            var lines = 0
            for file in try fm.contentsOfDirectory(atPath: directory.path) where file.hasSuffix(".swift") {
                lines += try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).count
            }
            #expect(lines < 2500, "\(module): \(lines) lines")
        }
    }

    /// Services throw `DaemonError`; only the API edge makes the contract's errors.
    @Test func onlyTheLocalAPIModuleKnowsLocalAPIError() throws {
        let fm = FileManager.default
        var mentions: Set<String> = []
        for module in try fm.contentsOfDirectory(atPath: Self.sources.path) {
            let directory = Self.sources.appendingPathComponent(module)
            guard let files = fm.enumerator(atPath: directory.path) else { continue }
            for case let file as String in files where file.hasSuffix(".swift") {
                if try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8).contains("LocalAPIError") { mentions.insert(module) }
            }
        }
        #expect(mentions == ["DaemonLocalAPI"])
    }
}
