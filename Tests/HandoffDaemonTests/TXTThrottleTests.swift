import Testing
@testable import HandoffDiscovery

/// `TXTThrottle` by a table: nothing before the register callback, then at most one TXT a second,
/// always the latest (docs/platform.md, "TXT changes, sent").
@Suite struct TXTThrottleTests {
    enum Step: Sendable {
        case registered(at: Int)
        case want(String, at: Int)
        case wake(at: Int)
    }

    /// What a step said, with times in ms after t0: "send B", "wake 1000", or "" for nothing.
    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let steps: [Step]
        let said: [String]
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "nothing before the register callback", steps: [.want("B", at: 0), .wake(at: 5000)], said: ["", ""]),
        Row(name: "what was wanted before registering follows it a second later",
            steps: [.want("B", at: 0), .registered(at: 100), .wake(at: 1100)], said: ["", "wake 1100", "send B"]),
        Row(name: "a change after a quiet second goes at once", steps: [.registered(at: 0), .want("B", at: 1500)], said: ["", "send B"]),
        Row(name: "changes within the second wait for its end, and only the latest goes",
            steps: [.registered(at: 0), .want("B", at: 1500), .want("C", at: 1600), .want("D", at: 1700), .wake(at: 2500)],
            said: ["", "send B", "wake 2500", "wake 2500", "send D"]),
        Row(name: "an early wake waits again", steps: [.registered(at: 0), .want("B", at: 200), .wake(at: 600), .wake(at: 1000)],
            said: ["", "wake 1000", "wake 1000", "send B"]),
        Row(name: "going back to what is published cancels the pending change",
            steps: [.registered(at: 0), .want("B", at: 200), .want("A", at: 300), .wake(at: 1000)], said: ["", "wake 1000", "", ""]),
        Row(name: "wanting what is published sends nothing", steps: [.registered(at: 0), .want("A", at: 5000)], said: ["", ""]),
    ]

    @Test(arguments: rows) func updates(row: Row) {
        let t0 = ContinuousClock.now
        func at(_ ms: Int) -> ContinuousClock.Instant { t0 + .milliseconds(ms) }
        func said(_ actions: [TXTThrottle.Action]) -> String {
            actions.map { action in
                switch action {
                case .send(let txt): "send \(String(decoding: txt, as: UTF8.self))"
                case .wake(let instant): "wake \((instant - t0).components.seconds * 1000 + (instant - t0).components.attoseconds / 1_000_000_000_000_000)"
                }
            }.joined(separator: ", ")
        }
        var throttle = TXTThrottle(initial: Array("A".utf8))
        let got = row.steps.map { step -> String in
            switch step {
            case .registered(let ms): said(throttle.didRegister(now: at(ms)))
            case .want(let txt, let ms): said(throttle.want(Array(txt.utf8), now: at(ms)))
            case .wake(let ms): said(throttle.wake(now: at(ms)))
            }
        }
        #expect(got == row.said)
    }
}
