import CHandoffFuzz
import Foundation

/// One program for every fuzz target (`FuzzTargets`): `handoff-fuzz TARGET [libFuzzer options]
/// [CORPUS…]`. Built by `make fuzz` with `-sanitize=fuzzer,address -DFUZZING`, it is libFuzzer
/// (coverage-guided, AddressSanitizer); built plainly (as `swift build` does), it runs each file
/// of the corpus directories once — how `make test`'s suite replays the committed corpora, and how
/// a crash found by the fuzzer is reproduced in a debugger.
@main struct HandoffFuzz {
    static func main() {
        var arguments = CommandLine.arguments
        #if !FUZZING
        if arguments.count == 3, arguments[1] == "seeds" {
            do {
                try Seeds.write(to: arguments[2])
            } catch {
                FileHandle.standardError.write(Data("handoff-fuzz: cannot write the seeds: \(error)\n".utf8))
                exit(1)
            }
            return
        }
        #endif
        guard arguments.count >= 2, let target = FuzzTargets.all[arguments[1]] else {
            let names = FuzzTargets.all.keys.sorted().joined(separator: ", ")
            FileHandle.standardError.write(Data("usage: handoff-fuzz TARGET [options] [CORPUS…]; targets: \(names)\n".utf8))
            exit(2)
        }
        FuzzTargets.selected = target
        arguments.remove(at: 1)
        #if FUZZING
        var argc = Int32(arguments.count)
        var cStrings = arguments.map { strdup($0) } + [nil]
        let status = cStrings.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var argv = buffer.baseAddress
            return LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOneInput(data, size) }
        }
        exit(status)
        #else
        var runs = 0
        for path in arguments.dropFirst() where !path.hasPrefix("-") {
            let files = (try? FileManager.default.contentsOfDirectory(atPath: path).map { path + "/" + $0 }) ?? [path]
            for file in files.sorted() {
                guard let data = FileManager.default.contents(atPath: file) else { continue }
                target(Array(data))
                runs += 1
            }
        }
        print("\(runs) inputs, no crash")
        #endif
    }
}

#if FUZZING
/// libFuzzer's per-input entry point: the target `main` chose.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    FuzzTargets.selected(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
#endif
