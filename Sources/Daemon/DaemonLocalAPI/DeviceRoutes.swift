import DaemonClipboard
import DaemonCore
import DaemonHistory
import HandoffAPI
import HandoffModel

/// This device itself: its status (`GET /v1/status`), its settings (`GET`/`PUT
/// /v1/settings`), what it saw (`GET /v1/history`, `POST /v1/history/delete`) and its clipboard
/// (`GET`/`POST /v1/clipboard`; docs/local-api.md). Every handler's first line checks who is asking.
package struct DeviceRoutes: Sendable {
    let deviceSwitch: DeviceSwitch
    let history: HistoryStore
    let deletions: SavedDeletions
    let clipboard: SharedClipboard
    /// What `status` shows, gathered by the composition root from every feature; with the
    /// claims of web domains (which reads every app's `.desktop` file) when asked.
    let gather: @Sendable (_ webDomains: Bool) async -> DaemonStatus

    package init(
        deviceSwitch: DeviceSwitch, history: HistoryStore, deletions: SavedDeletions, clipboard: SharedClipboard,
        status: @escaping @Sendable (_ webDomains: Bool) async -> DaemonStatus
    ) {
        self.deviceSwitch = deviceSwitch
        self.history = history
        self.deletions = deletions
        self.clipboard = clipboard
        self.gather = status
    }

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

    /// `GET /v1/status`; with `?webDomains=1`, also what apps claim (`doctor`).
    func status(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        return .ok(await gather(request.query.contains("webDomains=1")))
    }

    func settings(_ request: AuthorizedRequest) throws -> LocalAPIResponse {
        return .ok(deviceSwitch.settings)
    }

    func changeSettings(_ request: AuthorizedRequest) throws -> LocalAPIResponse {
        let change = try request.decoded(SettingsChange.self)
        return .ok(try deviceSwitch.change(change))
    }

    /// `GET /v1/clipboard`: the newest copy heard of and this device's own.
    func getClipboard(_ request: AuthorizedRequest) throws -> LocalAPIResponse {
        return .ok(clipboard.state)
    }

    /// `POST /v1/clipboard`: something was copied here (the desktop agent).
    func announceClipboard(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        let announcement = try request.decoded(ClipboardAnnouncement.self)
        return .ok(try await clipboard.announce(announcement))
    }

    /// `POST /v1/clipboard/holder`: the desktop agent holds this device's copies while it stays.
    func holdClipboard(_ request: AuthorizedRequest) -> LocalAPIResponse {
        let clipboard = clipboard
        return .lines { writer in await clipboard.hold { await writer.write($0) } }
    }
}
