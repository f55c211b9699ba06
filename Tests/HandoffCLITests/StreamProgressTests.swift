import Testing

@testable import handoffctl

/// The progress line of a stream on a terminal.
@Suite struct StreamProgressTests {
    @Test(arguments: [
        (Int64(999), "999 B"), (1000, "1.00 kB"), (1234, "1.23 kB"), (45_678_000, "45.7 MB"), (1_073_741_824, "1.07 GB"), (999_499_999, "999 MB"),
    ])
    func sizesHaveThreeSignificantDigits(bytes: Int64, text: String) {
        #expect(StreamProgress.size(bytes) == text)
    }

    @Test func theLineSaysHowFarHowFastAndHowLong() {
        #expect(StreamProgress.line(bytes: 400_000_000, of: 1_000_000_000, elapsed: .seconds(2)) == "400 MB of 1.00 GB, 200 MB/s, 0:03 left")
        #expect(StreamProgress.line(bytes: 400_000_000, of: nil, elapsed: .seconds(2)) == "400 MB, 200 MB/s")
        #expect(StreamProgress.line(bytes: 1_000_000, of: 61_000_000, elapsed: .seconds(1)) == "1.00 MB of 61.0 MB, 1.00 MB/s, 1:00 left")
        #expect(StreamProgress.line(bytes: 5, of: 5, elapsed: .seconds(1)) == "5 B of 5 B, 5 B/s")
    }

    /// The total is the other device's word: the largest, with the slowest and the fastest rates,
    /// gives a line, not a trap.
    @Test func anyTotalFromTheOtherDeviceGivesALine() {
        let huge = StreamProgress.line(bytes: 1, of: Int64.max, elapsed: .seconds(10))
        #expect(huge.hasSuffix(", 5999:59 left"), "\(huge)")
        _ = StreamProgress.line(bytes: Int64.max - 1, of: Int64.max, elapsed: .nanoseconds(1))
        _ = StreamProgress.line(bytes: 0, of: -1, elapsed: .zero)
    }
}
