import HandoffAPI
import HandoffClient
import Testing

/// Runs `body`, which must fail with the local API's `code` as the client reports it — in one line,
/// as handoffctl prints it. Returns the message, for tests that check what it says.
@discardableResult
public func expectFailure(
    _ code: APIErrorCode, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void
) async -> String {
    do {
        try await body()
        Issue.record("succeeded, expected \(code)", sourceLocation: sourceLocation)
    } catch let e as HandoffClientError {
        #expect(e.code == .api(code), "\(e)", sourceLocation: sourceLocation)
        #expect(!e.message.contains("\n"), "a message of more than one line: \(e.message)", sourceLocation: sourceLocation)
        return e.message
    } catch {
        Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
    }
    return ""
}

/// Returns once `condition` holds — something the daemon does in its own time (a connection
/// accepted, an app's departure seen) — checking every 10 ms; fails the test after `seconds`, a
/// guard generous enough for a loaded machine. For what happens, never for time to pass: a test
/// that needs time to pass moves a `ManualDaemonClock`.
public func waitUntil(
    _ what: String, within seconds: Int = 60, sourceLocation: SourceLocation = #_sourceLocation, _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(10))
    }
    Issue.record("\(what): not within \(seconds) s", sourceLocation: sourceLocation)
    throw CancellationError()
}
