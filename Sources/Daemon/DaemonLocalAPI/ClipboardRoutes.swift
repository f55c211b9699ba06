import DaemonClipboard
import HandoffAPI

/// The shared clipboard (`GET`/`POST /v1/clipboard`, `POST /v1/clipboard/holder`;
/// docs/clipboard.md); a paste is a stream (`StreamRoutes`).
package struct ClipboardRoutes: LocalRoutes {
    let clipboard: SharedClipboard

    package init(clipboard: SharedClipboard) {
        self.clipboard = clipboard
    }

    package var feature: String { "clipboard" }
    package var handlers: [LocalAPIEndpoints.Endpoint: LocalHandler] {
        [.getClipboard: getClipboard, .announceClipboard: announceClipboard, .holdClipboard: holdClipboard]
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
