import HandoffModel
import Testing
@testable import DaemonDiscovery

/// When a seen device without a session is dialled (`DialPlan`), by tables of what happened and
/// what the plan answered: at once when first seen or seen anew, backing off only while nothing
/// new is heard, and a stale wait never dials.
@Suite struct DialPlanTests {
    static let peer = DeviceID(digest: Array(repeating: 0x11, count: 32))

    enum Step: Sendable {
        case want(fresh: Bool)
        /// The wait of the n-th dial answer (counting from 1) ended.
        case due(Int)
        case failed
        case connected
        case skipped
    }

    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let steps: [Step]
        /// What each step answered: "dial after Xs" for a dial, "due"/"stale" for `due`, "-" otherwise.
        let answers: [String]
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "first sighting dials at once", steps: [.want(fresh: true)], answers: ["dial after 0s"]),
        Row(name: "its wait ends: dial", steps: [.want(fresh: true), .due(1)], answers: ["dial after 0s", "due"]),
        Row(
            name: "a failed dial backs off 1 s, then 2 s",
            steps: [.want(fresh: true), .due(1), .failed, .want(fresh: false), .due(2), .failed, .want(fresh: false)],
            answers: ["dial after 0s", "due", "-", "dial after 1s", "due", "-", "dial after 2s"]
        ),
        Row(
            name: "the same advert again does not add a dial while one waits",
            steps: [.want(fresh: true), .due(1), .failed, .want(fresh: false), .want(fresh: false)],
            answers: ["dial after 0s", "due", "-", "dial after 1s", "-"]
        ),
        Row(
            name: "a new advert during a backoff dials at once; the old wait is stale",
            steps: [.want(fresh: true), .due(1), .failed, .want(fresh: false), .want(fresh: true), .due(2), .due(3)],
            answers: ["dial after 0s", "due", "-", "dial after 1s", "dial after 0s", "stale", "due"]
        ),
        Row(
            name: "a new advert during a dial that then fails: dial again at once",
            steps: [.want(fresh: true), .due(1), .want(fresh: true), .failed, .want(fresh: false)],
            answers: ["dial after 0s", "due", "-", "-", "dial after 0s"]
        ),
        Row(
            name: "a session that came another way makes a waiting dial stale",
            steps: [.want(fresh: true), .due(1), .failed, .want(fresh: false), .connected, .due(2)],
            answers: ["dial after 0s", "due", "-", "dial after 1s", "-", "stale"]
        ),
        Row(
            name: "after a session, the backoff starts again from nothing",
            steps: [.want(fresh: true), .due(1), .failed, .want(fresh: false), .due(2), .connected, .want(fresh: false)],
            answers: ["dial after 0s", "due", "-", "dial after 1s", "due", "-", "dial after 0s"]
        ),
        Row(
            name: "a dial that fails after a session came another way arms no backoff",
            steps: [.want(fresh: true), .due(1), .connected, .failed, .want(fresh: false)],
            answers: ["dial after 0s", "due", "-", "-", "dial after 0s"]
        ),
        Row(
            name: "a wait armed before a session came and went never dials for a later one",
            steps: [.want(fresh: true), .connected, .want(fresh: true), .due(1), .due(2)],
            answers: ["dial after 0s", "-", "dial after 0s", "stale", "due"]
        ),
        Row(
            name: "a skipped dial (no longer seen) keeps the backoff",
            steps: [.want(fresh: true), .due(1), .failed, .want(fresh: false), .due(2), .skipped, .want(fresh: false)],
            answers: ["dial after 0s", "due", "-", "dial after 1s", "due", "-", "dial after 1s"]
        ),
    ]

    @Test(arguments: rows)
    func plan(_ row: Row) {
        var plan = DialPlan()
        var tickets: [Int] = []
        var answers: [String] = []
        for step in row.steps {
            switch step {
            case .want(let fresh):
                switch plan.want(Self.peer, fresh: fresh) {
                case .none: answers.append("-")
                case .dial(let after, let ticket):
                    tickets.append(ticket)
                    answers.append("dial after \(after.components.seconds)s")
                }
            case .due(let n):
                answers.append(plan.due(Self.peer, ticket: tickets[n - 1]) ? "due" : "stale")
            case .failed:
                plan.failed(Self.peer)
                answers.append("-")
            case .connected:
                plan.connected(Self.peer)
                answers.append("-")
            case .skipped:
                plan.skipped(Self.peer)
                answers.append("-")
            }
        }
        #expect(answers == row.answers)
    }

    @Test func theBackoffStopsGrowingAtAMinute() {
        var plan = DialPlan()
        var last: Duration = .zero
        for _ in 0..<10 {
            guard case .dial(let after, let ticket) = plan.want(Self.peer, fresh: false) else {
                Issue.record("no dial")
                return
            }
            last = after
            _ = plan.due(Self.peer, ticket: ticket)
            plan.failed(Self.peer)
        }
        #expect(last == .seconds(60))
    }
}
