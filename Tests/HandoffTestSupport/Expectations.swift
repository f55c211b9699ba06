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
