import Foundation
import Testing

/// docs/architecture.md, "Module graph", checked against the sources: who imports the C modules,
/// and that each daemon module imports only the ones below it.
@Suite struct ModuleGraphTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let sources = root.appendingPathComponent("Sources")
    static let manifest = (try? String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)) ?? ""

    /// The daemon's modules, lowest first: `daemonLine` in Package.swift, where it is written once.
    /// A manifest this cannot read stops every test that walks the line (never a vacuous pass).
    static let daemonLine: [String] = {
        let line = manifest.firstMatch(of: /let daemonLine(?:: \[String\])? = \[([^\]]*)\]/).map { $0.1.matches(of: /"(\w+)"/).map { String($0.1) } } ?? []
        precondition(line.count >= 9, "ModuleGraphTests cannot read daemonLine from Package.swift")
        return line
    }()

    /// Sources/ by floor, lowest first, as `floors` in Package.swift has them: each target's
    /// folder is Sources/<floor>/<target>. A manifest this cannot read stops every test.
    static let floors: [(floor: String, targets: [String])] = {
        let table = manifest.firstMatch(of: /let floors[^=]*= \[((?:[^\[\]]|\[[^\]]*\])*)\]/).map { String($0.1) } ?? ""
        let rows = table.matches(of: /"(\w+)": \[([^\]]*)\]/).map { (floor: String($0.1), targets: $0.2.matches(of: /"([\w-]+)"/).map { String($0.1) }) }
        precondition(rows.count >= 4, "ModuleGraphTests cannot read floors from Package.swift")
        return rows
    }()

    /// Every module under Sources/, lowest floor first.
    static var modules: [String] { floors.flatMap(\.targets) }

    /// A module's folder.
    static func directory(_ module: String) -> URL {
        let floor = floors.first { $0.targets.contains(module) }?.floor ?? "no floor for \(module)"
        return sources.appendingPathComponent(floor).appendingPathComponent(module)
    }

    /// What Package.swift declares for `target`: its target names, and the products' modules.
    static func declared(_ target: String) -> Set<String>? {
        // `daemonModule("X", imports: [...])` or `.executableTarget(name: "X", dependencies: [...])`.
        let escaped = NSRegularExpression.escapedPattern(for: target)
        guard let regex = try? Regex("(?:daemonModule\\(\\s*\"\(escaped)\",\\s*imports:|name: \"\(escaped)\",\\s*dependencies:)\\s*\\[((?:[^\\[\\]]|\\[[^\\]]*\\])*)\\]"),
            let match = manifest.firstMatch(of: regex), let list = match.output[1].substring
        else { return nil }
        let variables = ["nioCore": "NIOCore", "nioPosix": "NIOPosix", "logging": "Logging", "lifecycle": "ServiceLifecycle"]
        var names: Set<String> = []
        let cleaned = String(list).replacing(/package: "[^"]*"/, with: "")
        for m in cleaned.matches(of: /\.product\(name: "(\w+)"|"(\w+)"|\b(nioCore|nioPosix|logging|lifecycle)\b/) {
            if let product = m.1 { names.insert(String(product)) } else if let target = m.2 { names.insert(String(target)) } else if let v = m.3 { names.insert(variables[String(v)]!) }
        }
        return names
    }

    /// Every module under Sources/ and the modules its files import.
    static func imports() throws -> [String: Set<String>] {
        var graph: [String: Set<String>] = [:]
        let fm = FileManager.default
        for module in modules {
            let directory = directory(module)
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

    /// Each daemon module, and handoffd, declares exactly what it imports: the build's import
    /// check then refuses a module reaching further down than Package.swift shows.
    @Test func eachDaemonModuleDeclaresWhatItImports() throws {
        #expect(Self.daemonLine.first == "DaemonCore" && Self.daemonLine.last == "HandoffDaemon", "daemonLine read from Package.swift: \(Self.daemonLine)")
        let graph = try Self.imports()
        let system: Set<String> = ["Foundation", "FoundationEssentials", "Glibc", "Synchronization", "Dispatch", "_Concurrency"]
        for module in Self.daemonLine + ["handoffd"] {
            let imported = try #require(graph[module]).subtracting(system)
            let declared = try #require(Self.declared(module), "Package.swift declares nothing for \(module)")
            #expect(declared.subtracting(["CHandoffReadGuard"]) == imported, "\(module): declared but not imported \(declared.subtracting(imported).sorted()), imported but not declared \(imported.subtracting(declared).sorted())")
        }
    }

    /// A daemon failure becomes the local API's code by the code it was made from, which the
    /// compiler checks — never by matching names at run time (a typo would be a 500): the only
    /// `APIErrorCode(rawValue:)` left decodes what a daemon sent.
    @Test func apiCodesAreNeverMatchedByName() throws {
        var found: [String] = []
        for module in Self.modules {
            let directory = Self.directory(module)
            guard let files = FileManager.default.enumerator(atPath: directory.path) else { continue }
            for case let file as String in files where file.hasSuffix(".swift") {
                let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
                found += Array(repeating: "\(module)/\(file)", count: text.components(separatedBy: "APIErrorCode(rawValue:").count - 1)
            }
        }
        #expect(found == ["HandoffAPI/APIError.swift"], "\(found)")
    }

    /// A 405's `Allow` header comes from `LocalAPIEndpoints`' table alone: only the router sets it.
    @Test func oneSourceOfAllow() throws {
        var setters: [String] = []
        for module in Self.daemonLine {
            let directory = Self.directory(module)
            for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) where file.hasSuffix(".swift") {
                let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
                if text.contains("\"allow\":") { setters.append("\(module)/\(file)") }
            }
        }
        #expect(setters == ["DaemonLocalAPI/LocalAPIRouter.swift"], "\(setters)")
    }

    /// The user's side spells no route: every method and path a client sends comes from
    /// `LocalAPIEndpoints` and `LocalAPIRoute` (HandoffAPI), through `LocalAPICall` (HandoffClient).
    @Test func theClientsSpellNoRoute() throws {
        let clients = (Self.floors.first { $0.floor == "Apps" }?.targets ?? []) + ["handoffctl", "handoff-desktop", "handoff-browser-host"]
        #expect(clients.count >= 8)
        var spelled: [String] = []
        for module in clients {
            let directory = Self.directory(module)
            let files = (FileManager.default.enumerator(atPath: directory.path)?.allObjects as? [String] ?? []).filter { $0.hasSuffix(".swift") }
            #expect(!files.isEmpty, "no Swift files in \(directory.path)")
            for file in files {
                let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
                if text.firstMatch(of: /"(GET|PUT|POST|DELETE|PATCH)"|"\/v1\//) != nil { spelled.append("\(module)/\(file)") }
            }
        }
        #expect(spelled.isEmpty, "\(spelled)")
    }

    /// Who may use the local API is checked once per way in: the router (a `AuthorizedRequest`
    /// exists only once checked), a stream upgrade, the file socket (which decides at accept not
    /// to read a stranger's request, and answers it the same way later).
    @Test func authorizationHappensOncePerWayIn() throws {
        let directory = Self.directory("DaemonLocalAPI")
        var calls: [String: Int] = [:]
        for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) where file.hasSuffix(".swift") {
            let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            let n = text.components(separatedBy: ".authorize(daemonUID:").count - 1
            if n > 0 { calls[file] = n }
        }
        #expect(calls == ["LocalAPIRouter.swift": 1, "StreamRoutes.swift": 1, "FileSocketServer.swift": 2], "\(calls)")
    }

    /// `Sources/` holds the floors of Package.swift and nothing else, each floor its targets.
    @Test func sourcesAreTheFloorsOfThePackage() throws {
        let fm = FileManager.default
        let folders = try fm.contentsOfDirectory(atPath: Self.sources.path).filter { !$0.hasPrefix(".") }
        #expect(Set(folders) == Set(Self.floors.map(\.floor)), "\(folders)")
        for (floor, targets) in Self.floors {
            let inside = try fm.contentsOfDirectory(atPath: Self.sources.appendingPathComponent(floor).path).filter { !$0.hasPrefix(".") }
            #expect(Set(inside) == Set(targets), "Sources/\(floor): \(inside.sorted())")
        }
    }

    /// A target takes only from its own floor or those below; the user's side never from the daemon.
    @Test func eachTargetLooksOnlyDown() throws {
        let level = Dictionary(uniqueKeysWithValues: Self.floors.enumerated().flatMap { i, row in row.targets.map { ($0, i) } })
        var upward: [String] = []
        for module in Self.modules {
            for dependency in Self.declared(module) ?? [] {
                guard let theirs = level[dependency], let mine = level[module] else { continue }
                if theirs > mine { upward.append("\(module) → \(dependency)") }
            }
        }
        #expect(upward.isEmpty, "\(upward)")
        let daemon = Set(Self.floors.first { $0.floor == "Daemon" }?.targets ?? [])
        let apps = Self.floors.first { $0.floor == "Apps" }?.targets ?? []
        #expect(!daemon.isEmpty && !apps.isEmpty)
        for app in apps {
            #expect((Self.declared(app) ?? []).isDisjoint(with: daemon), "\(app) takes from the daemon")
        }
    }

    /// The floors as docs/architecture.md draws them: every target, top floor first, with what it
    /// takes from the package (in floor order) and, after `·`, from other packages.
    static func drawing() -> String {
        var lines: [String] = []
        for (floor, targets) in Self.floors.reversed() {
            lines.append(floor + " " + String(repeating: "─", count: 60 - floor.count))
            for target in targets {
                let declared = Self.declared(target) ?? []
                var words = Self.modules.filter { declared.contains($0) }
                let outside = declared.subtracting(Self.modules).sorted()
                if !outside.isEmpty { words += ["·"] + outside }
                var line = "  " + target.padding(toLength: 22, withPad: " ", startingAt: 0)
                for word in words {
                    if line.count + word.count + 1 > 100 {
                        lines.append(line)
                        line = String(repeating: " ", count: 24)
                    } else if !line.hasSuffix("  ") {
                        line += " "
                    }
                    line += word
                }
                lines.append(line)
            }
        }
        return lines.map { $0.replacing(/\s+$/, with: "") }.joined(separator: "\n")
    }

    /// docs/architecture.md's drawing of the floors is Package.swift's, and its table of what
    /// each module holds names every target once.
    @Test func theDocumentDrawsThePackage() throws {
        let url = Self.root.appendingPathComponent("docs/architecture.md")
        let text = try String(contentsOf: url, encoding: .utf8)
        let block = try #require(text.firstMatch(of: /<!-- floors: drawn from Package.swift by ModuleGraphTests -->\n```text\n([\s\S]*?)```\n<!-- end of floors -->/))
        let drawn = String(block.1).trimmingCharacters(in: .newlines)
        if ProcessInfo.processInfo.environment["UPDATE_SNAPSHOTS"] == "1", drawn != Self.drawing() {
            var updated = text
            updated.replaceSubrange(block.1.startIndex..<block.1.endIndex, with: Self.drawing() + "\n")
            try updated.write(to: url, atomically: true, encoding: .utf8)
        } else {
            #expect(drawn == Self.drawing(), "docs/architecture.md's floors differ from Package.swift (UPDATE_SNAPSHOTS=1 redraws them)")
        }
        let holds = try #require(text.firstMatch(of: /\| module \| holds \|\n([\s\S]*?)\n\n/))
        let table = String(holds.1).matches(of: /\n\| `([\w-]+)` \| [^\n]*/).map { String($0.1) }
        #expect(table.sorted() == Self.modules.sorted(), "the table of modules: \(table)")
    }

    /// Every target Package.swift declares — those beside Sources/ too: tests, examples, the
    /// fuzz harness — is named in docs/architecture.md (issue 54 found three that were not).
    @Test func theDocumentNamesEveryTargetOfThePackage() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        let declared =
            Self.manifest.matches(of: /\.(?:target|systemLibrary|executableTarget|testTarget|plugin|binaryTarget|macro)\(\s*name:\s*"([\w-]+)"/).map { String($0.1) }
            + Self.manifest.matches(of: /daemonModule\(\s*"(\w+)"/).map { String($0.1) }
        #expect(Set(Self.modules).isSubset(of: declared) && declared.count > Self.modules.count, "cannot read the targets from Package.swift: \(declared)")
        for target in declared {
            #expect(text.contains("`\(target)`"), "docs/architecture.md does not name \(target)")
        }
    }

    /// docs/architecture.md names the daemon's modules in the order Package.swift gives.
    @Test func theDocumentNamesTheModuleLineOfThePackage() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        let line = try #require(text.firstMatch(of: /`DaemonCore` ←[^.]*?`HandoffDaemon`/))
        let named = String(line.0).matches(of: /`(\w+)`/).map { String($0.1) }
        #expect(named == Self.daemonLine)
    }

    @Test func theCLibrariesHaveTheImportersTheDocumentNames() throws {
        let graph = try Self.imports()
        func importers(_ c: String) -> Set<String> { Set(graph.filter { $0.value.contains(c) }.keys) }
        #expect(importers("CHandoffOpenSSL") == ["HandoffTLS"])
        #expect(importers("CHandoffDNSSD") == ["HandoffDiscovery"])
        #expect(importers("CHandoffLDNS") == ["HandoffWideArea"])
        #expect(importers("CHandoffXCB") == ["SessionClipboard"] && importers("CHandoffWayland") == ["SessionClipboard"])
        #expect(importers("CHandoffLinux") == ["HandoffSystem"])
        #expect(importers("CHandoffSDBus") == ["HandoffDBus"])
        #expect(importers("CHandoffReadGuard").isEmpty, "linked into handoffd with --wrap=read, called by no one by name")
    }

    /// No Swift file under Sources/ is over 600 lines unless docs/architecture.md says why, in a
    /// line of its "Files over 600 lines" list (issue 55): a file that grew past it holds more
    /// than one thing.
    @Test func noSourceFileIsOver600LinesUnlessTheDocumentSaysWhy() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        let list = try #require(text.firstMatch(of: /### Files over 600 lines\n\n([\s\S]*?)\n\n/)).1
        let excused = Set(String(list).matches(of: /- `(Sources\/[^`]+\.swift)`: \S/).map { String($0.1) })
        let fm = FileManager.default
        var long: [String] = []
        for path in fm.enumerator(atPath: Self.sources.path)?.compactMap({ $0 as? String }) ?? [] where path.hasSuffix(".swift") {
            let lines = try String(contentsOf: Self.sources.appendingPathComponent(path), encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).count
            if lines > 600, !excused.contains("Sources/" + path) { long.append("\(path): \(lines) lines") }
        }
        #expect(long.isEmpty, "\(long)")
    }

    /// No module of the daemon's or the apps' floors is over 2500 lines (issue 55): one that grew
    /// past it holds more than one room.
    @Test func noModuleOfTheDaemonOrTheAppsIsLargerThan2500Lines() throws {
        let fm = FileManager.default
        let modules = Self.floors.filter { ["Daemon", "Apps"].contains($0.floor) }.flatMap(\.targets)
        #expect(modules.contains("HandoffDaemon") && modules.contains("DesktopAgent"), "floors read from Package.swift: \(Self.floors)")
        for module in modules {
            let directory = Self.directory(module)
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
        for module in Self.modules {
            let directory = Self.directory(module)
            guard let files = fm.enumerator(atPath: directory.path) else { continue }
            for case let file as String in files where file.hasSuffix(".swift") {
                if try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8).contains("LocalAPIError") { mentions.insert(module) }
            }
        }
        #expect(mentions == ["DaemonLocalAPI"])
    }

    /// An idle daemon sleeps: a pending `Task.sleep` wakes libdispatch's timer thread every second
    /// on this platform (docs/platform.md, "Waiting without waking"), so what the daemon runs
    /// waits with `QuietSleep` (or its clock) instead. handoffctl, which does not idle, may.
    @Test func theDaemonNeverWaitsWithTaskSleep() throws {
        let fm = FileManager.default
        var offenders: [String] = []
        for module in Self.modules where module != "handoffctl" {
            let directory = Self.directory(module)
            guard let files = fm.enumerator(atPath: directory.path) else { continue }
            for case let file as String in files where file.hasSuffix(".swift") {
                let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
                for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
                where line.contains("Task.sleep(") && !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                    offenders.append("\(module)/\(file):\(n + 1)")
                }
            }
        }
        #expect(offenders.isEmpty, "\(offenders)")
    }

    /// Every task has a home (docs/platform.md, "Waiting without waking"): a program chooses
    /// where its tasks run with a public API (`ProgramExecutor`, task-executor preference), never
    /// through the runtime's private hooks; and an unstructured task — which does not inherit
    /// the preference, and would start libdispatch's pool — is made with the program's executor.
    @Test func everyTaskRunsWhereTheProgramSays() throws {
        let fm = FileManager.default
        var offenders: [String] = []
        guard let files = fm.enumerator(atPath: Self.sources.path) else { throw CocoaError(.fileNoSuchFile) }
        var seen = 0
        for case let file as String in files where [".swift", ".c", ".h"].contains(where: file.hasSuffix) {
            seen += 1
            let text = try String(contentsOf: Self.sources.appendingPathComponent(file), encoding: .utf8)
            for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.trimmingCharacters(in: .whitespaces)
                guard !code.hasPrefix("//") else { continue }
                if code.contains("swift_task_") || code.contains("completeWithTask") || code.contains("Task.detached")
                    || code.firstMatch(of: /\bTask\s*(?:<[^>]*>)?\s*\{/) != nil
                    || code.firstMatch(of: /\bTask\s*(?:<[^>]*>)?\((?!executorPreference: ProgramExecutor\.current\))/) != nil
                {
                    offenders.append("\(file):\(n + 1)")
                }
            }
        }
        #expect(seen > 100, "read \(seen) files")
        #expect(offenders.isEmpty, "\(offenders)")
    }

    /// "At most five collaborators" (docs/architecture.md): what an initializer of a
    /// daemon module takes that is a service — an actor, class or protocol of the daemon, a struct
    /// that holds one, a discovery backend or a channel — or a closure it calls back. Values
    /// (limits, paths, addresses) and the logger are not collaborators.
    @Test func noTypeTakesMoreThanFiveCollaborators() throws {
        var texts: [String: String] = [:]
        for module in Self.daemonLine {
            let directory = Self.directory(module)
            for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) where file.hasSuffix(".swift") {
                texts["\(module)/\(file)"] = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            }
        }
        let all = texts.values.joined(separator: "\n")
        var services: Set<String> = ["DiscoveryBackend", "Channel"]
        for match in all.matches(of: /(?m)^\s*(?:package |public |private |fileprivate )?(?:final )?(?:actor|class|protocol) (\w+)/) {
            services.insert(String(match.1))
        }
        // A struct holding a service is one (ContinueFlow, the routes…): repeat until nothing is added.
        let structs = all.matches(of: /(?m)^(?:package |public |private )?struct (\w+)[^{]*\{((?:\n    .*|\n)*)/).map { (String($0.1), String($0.2)) }
        var grew = true
        while grew {
            grew = false
            for (name, body) in structs where !services.contains(name) {
                let held = body.matches(of: /(?m)^    (?:package |private )?let \w+: (?:any )?(\w+)/).map { String($0.1) }
                if held.contains(where: services.contains) {
                    services.insert(name)
                    grew = true
                }
            }
        }
        #expect(services.isSuperset(of: ["MemberSessions", "AccountStore", "ContinueFlow", "ActivityAnswerer", "StreamRoutes", "OriginatingStreams"]))
        for (file, text) in texts {
            for match in text.matches(of: /init\(((?:[^()]|\([^()]*\))*)\)/) {
                var depth = 0
                var parameters: [String] = [""]
                for c in match.1 {
                    if "([<".contains(c) { depth += 1 }
                    if ")]>".contains(c) { depth -= 1 }
                    if c == ",", depth == 0 { parameters.append("") } else { parameters[parameters.count - 1].append(c) }
                }
                let collaborators = parameters.filter { parameter in
                    guard let colon = parameter.firstIndex(of: ":") else { return false }
                    let type = parameter[parameter.index(after: colon)...].split(separator: "=").first ?? ""
                    let words = type.split(whereSeparator: { !$0.isLetter && !$0.isNumber && $0 != "@" })
                    return type.contains("@escaping") || words.first(where: { $0 != "any" && $0 != "some" }).map { services.contains(String($0)) } == true
                }
                #expect(collaborators.count <= 5, "\(file): init takes \(collaborators.count) collaborators")
            }
        }
    }

    /// Comments cite documents in the repository only.
    @Test func commentsCiteDocumentsInTheRepository() throws {
        let root = Self.sources.deletingLastPathComponent()
        let fm = FileManager.default
        var missing: Set<String> = []
        for directory in ["Sources", "Tests"] {
            guard let files = fm.enumerator(atPath: root.appendingPathComponent(directory).path) else { continue }
            for case let file as String in files where file.hasSuffix(".swift") || file.hasSuffix(".h") || file.hasSuffix(".c") {
                let text = try String(contentsOf: root.appendingPathComponent(directory).appendingPathComponent(file), encoding: .utf8)
                for match in text.matches(of: /(?:docs\/)?[A-Za-z0-9_-]+\.md\b/) {
                    let cited = String(match.0)
                    let path = cited.hasPrefix("docs/") || cited == "README.md" ? cited : "docs/" + cited
                    if !fm.fileExists(atPath: root.appendingPathComponent(path).path) { missing.insert("\(directory)/\(file): \(cited)") }
                }
                if text.contains("SPEC" + " §") { missing.insert("\(directory)/\(file): SPEC") }
            }
        }
        #expect(missing.isEmpty, "\(missing.sorted())")
    }
}
