import Testing

@testable import HandoffModel

@Suite(.timeLimit(.minutes(3))) struct TimestampTests {
    @Test func knownInstantsFormatAndParse() throws {
        let cases: [(String, Int64)] = [
            ("1970-01-01T00:00:00Z", 0),
            ("2026-11-22T10:00:00Z", 1_795_341_600_000_000),
            ("2000-02-29T23:59:59.5Z", 951_868_799_500_000),
            ("1969-12-31T23:59:59.999999Z", -1),
            ("0001-01-01T00:00:00Z", Timestamp.earliest.microsecondsSinceEpoch),
            ("9999-12-31T23:59:59.999999Z", Timestamp.latest.microsecondsSinceEpoch),
            ("2026-11-22T10:00:00.123Z", 1_795_341_600_123_000),
        ]
        for (text, micros) in cases {
            let t = try #require(Timestamp(rfc3339: text), "parse \(text)")
            #expect(t.microsecondsSinceEpoch == micros, "\(text)")
            #expect(t.rfc3339 == text)
        }
    }

    @Test func offsetsAndVariantsNormaliseToUTC() throws {
        #expect(Timestamp(rfc3339: "2026-11-22T11:00:00+01:00")?.rfc3339 == "2026-11-22T10:00:00Z")
        #expect(Timestamp(rfc3339: "2026-11-22T05:30:00-04:30")?.rfc3339 == "2026-11-22T10:00:00Z")
        #expect(Timestamp(rfc3339: "2026-11-22t10:00:00z")?.rfc3339 == "2026-11-22T10:00:00Z")
        #expect(Timestamp(rfc3339: "2026-11-22 10:00:00Z")?.rfc3339 == "2026-11-22T10:00:00Z")
        #expect(Timestamp(rfc3339: "2026-11-22T10:00:00.100000000Z")?.rfc3339 == "2026-11-22T10:00:00.1Z")
    }

    @Test(arguments: [
        "", "2026-11-22", "2026-11-22T10:00:00", "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z",
        "2026-11-31T00:00:00Z", "2026-11-22T24:00:00Z", "2026-11-22T10:60:00Z", "2026-11-22T10:00:60Z",
        "2026-11-22T10:00:00.Z", "2026-11-22T10:00:00.1234567Z", "2026-11-22T10:00:00+1:00",
        "2026-11-22T10:00:00Zjunk", "0000-12-31T23:59:59Z", "+2026-11-22T10:00:00Z", "2026-1-22T10:00:00Z",
    ])
    func rejectsInvalidText(_ text: String) {
        #expect(Timestamp(rfc3339: text) == nil)
    }

    @Test func randomInstantsRoundTrip() throws {
        var rng = SplitMix64(seed: 42)
        let span = UInt64(Timestamp.latest.microsecondsSinceEpoch - Timestamp.earliest.microsecondsSinceEpoch)
        for _ in 0..<20_000 {
            let t = Timestamp(microsecondsSinceEpoch: Timestamp.earliest.microsecondsSinceEpoch + Int64(rng.next() % span))
            #expect(Timestamp(rfc3339: t.rfc3339) == t)
        }
    }

    @Test func arithmeticSaturates() {
        #expect(Timestamp(microsecondsSinceEpoch: .max).adding(seconds: 10).microsecondsSinceEpoch == .max)
        #expect(Timestamp(microsecondsSinceEpoch: 0).adding(seconds: .max).microsecondsSinceEpoch == .max)
        #expect(Timestamp(microsecondsSinceEpoch: 5).microseconds(until: Timestamp(microsecondsSinceEpoch: 2)) == -3)
    }
}

/// A tiny deterministic generator so a failing case can be replayed from its seed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
