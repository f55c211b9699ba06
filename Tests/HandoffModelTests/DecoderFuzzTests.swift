import FoundationEssentials
import Testing

@testable import HandoffModel

/// Random and mutated encodings thrown at the decoder. It must never trap, and whatever it accepts
/// must re-encode to something it decodes to the same activity.
///
/// `make test` runs 100 000 cases; `make fuzz` runs millions (HANDOFF_FUZZ_CASES) in a release build
/// and then the libFuzzer target. A failure prints the seed and case number to replay it.
@Suite(.timeLimit(.minutes(3))) struct DecoderFuzzTests {
    static let cases: Int = {
        if let s = ProcessInfo.processInfo.environment["HANDOFF_FUZZ_CASES"], let n = Int(s) { return n }
        return 100_000
    }()
    static let seed: UInt64 = {
        if let s = ProcessInfo.processInfo.environment["HANDOFF_FUZZ_SEED"], let n = UInt64(s) { return n }
        return 0x48414E44_4F464621
    }()

    @Test func decoderSurvivesRandomAndMutatedInput() throws {
        var rng = SplitMix64(seed: Self.seed)
        let seeds = Self.seedCorpus()
        var accepted = 0
        for n in 0..<Self.cases {
            let input: [UInt8]
            switch n % 4 {
            case 0: input = Self.randomBytes(&rng)
            default: input = Self.mutate(seeds[Int(rng.next() % UInt64(seeds.count))], &rng)
            }
            guard let activity = try? ActivityEncoding.decode(input) else { continue }
            accepted += 1
            let again = ActivityEncoding.encode(activity)
            let reread = try #require(
                try? ActivityEncoding.decode(again, maximumSize: .max),
                "seed \(Self.seed) case \(n): accepted input does not re-decode"
            )
            #expect(reread == activity, "seed \(Self.seed) case \(n)")
            // Everything accepted must also be printable as JSON (the local API shows it verbatim).
            _ = try JSONEncoder().encode(activity)
        }
        // Mutations of valid encodings must sometimes survive, or the fuzzer is only testing the magic.
        #expect(accepted > Self.cases / 100, "only \(accepted) of \(Self.cases) inputs decoded")
    }

    static func seedCorpus() -> [[UInt8]] {
        let small = Fixtures.activity(ActivityContent(type: "a.b", userInfo: ["k": .int(1)]))
        let nested = Fixtures.activity(
            ActivityContent(
                type: "com.example.nest",
                userInfo: ["n": .array([.dictionary(["x": .array([.null, .bool(true)])]), .double(2)])]
            )
        )
        return [ActivityEncoding.encode(Fixtures.full), ActivityEncoding.encode(small), ActivityEncoding.encode(nested)]
    }

    static func randomBytes(_ rng: inout SplitMix64) -> [UInt8] {
        let count = Int(rng.next() % 96)
        var bytes: [UInt8] = [0x48, 0x4F, 0x01]
        for _ in 0..<count { bytes.append(UInt8(truncatingIfNeeded: rng.next())) }
        return bytes
    }

    static func mutate(_ original: [UInt8], _ rng: inout SplitMix64) -> [UInt8] {
        var bytes = original
        let edits = 1 + Int(rng.next() % 4)
        for _ in 0..<edits where !bytes.isEmpty {
            let at = Int(rng.next() % UInt64(bytes.count))
            switch rng.next() % 6 {
            case 0: bytes[at] = UInt8(truncatingIfNeeded: rng.next())
            case 1: bytes[at] ^= 1 << UInt8(rng.next() % 8)
            case 2: bytes.remove(at: at)
            case 3: bytes.insert(UInt8(truncatingIfNeeded: rng.next()), at: at)
            case 4: bytes.removeSubrange(at..<min(bytes.count, at + Int(rng.next() % 16)))
            default:
                let interesting: [UInt8] = [0x00, 0x01, 0x7F, 0x80, 0xFF, 0x0A, 0x0B]
                bytes[at] = interesting[Int(rng.next() % UInt64(interesting.count))]
            }
        }
        return bytes
    }
}
