import DaemonCore
import DaemonHistory
import HandoffAPI
import HandoffModel

/// What this device saw (`GET /v1/history`) and saved activities deleted on every device of the
/// account (`POST /v1/history/delete`; docs/local-api.md).
package struct HistoryRoutes: LocalRoutes {
    let history: HistoryStore
    let deletions: SavedDeletions

    package init(history: HistoryStore, deletions: SavedDeletions) {
        self.history = history
        self.deletions = deletions
    }

    package var feature: String { "history" }
    package var handlers: [LocalAPIEndpoints.Endpoint: LocalHandler] { [.history: history(_:), .deleteSaved: deleteSaved] }

    /// `GET /v1/history`: the recent activities this device saw, newest first; with
    /// `?persistentIdentifier=`, those of that content only.
    func history(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        var list = await history.list()
        let given = request.query.split(separator: "&").contains { $0.hasPrefix("persistentIdentifier=") }
        if given {
            guard let id = QueryText.value("persistentIdentifier", in: request.query) else {
                throw LocalAPIError(.badRequest, "persistentIdentifier is not percent-encoded UTF-8")
            }
            guard id.utf8.count <= SavedActivityDeletion.maximumIdentifierBytes else {
                throw LocalAPIError(.invalidValue, "a persistentIdentifier asked for is at most \(SavedActivityDeletion.maximumIdentifierBytes) bytes")
            }
            list.entries.removeAll { $0.activity.content.persistentIdentifier != id }
        }
        return .ok(list)
    }

    /// `POST /v1/history/delete`: saved activities deleted on every device of the account.
    func deleteSaved(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        let ask = try request.decoded(DeleteSavedRequest.self)
        return .ok(try await deletions.delete(ask))
    }
}
