import DaemonCore
import HandoffAPI
import HandoffModel

/// This device itself: its status (`GET /v1/status`) and its settings (`GET`/`PUT
/// /v1/settings`; docs/local-api.md).
package struct DeviceRoutes: LocalRoutes {
    let deviceSwitch: DeviceSwitch
    /// What `status` shows, gathered by the composition root from every feature; with the
    /// claims of web domains (which reads every app's `.desktop` file) when asked.
    let gather: @Sendable (_ webDomains: Bool) async -> DaemonStatus

    package init(deviceSwitch: DeviceSwitch, status: @escaping @Sendable (_ webDomains: Bool) async -> DaemonStatus) {
        self.deviceSwitch = deviceSwitch
        self.gather = status
    }

    package var feature: String { "device" }
    package var handlers: [LocalAPIEndpoints.Endpoint: LocalHandler] { [.status: status, .getSettings: settings, .putSettings: changeSettings] }

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
}
