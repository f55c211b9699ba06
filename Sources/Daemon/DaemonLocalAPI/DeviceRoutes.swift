import DaemonCore
import HandoffAPI

/// This device itself: its status (`GET /v1/status`) and its settings (`GET`/`PUT
/// /v1/settings`, docs/local-api.md). Every handler's first line checks who is asking.
package struct DeviceRoutes: Sendable {
    let deviceSwitch: DeviceSwitch
    /// What `status` shows, gathered by the composition root from every feature.
    let gather: @Sendable () async -> DaemonStatus

    package init(deviceSwitch: DeviceSwitch, status: @escaping @Sendable () async -> DaemonStatus) {
        self.deviceSwitch = deviceSwitch
        self.gather = status
    }

    func status(_ request: LocalAPIRequest) async throws -> LocalAPIResponse {
        return .ok(await gather())
    }

    func settings(_ request: LocalAPIRequest) throws -> LocalAPIResponse {
        return .ok(deviceSwitch.settings)
    }

    func changeSettings(_ request: LocalAPIRequest) throws -> LocalAPIResponse {
        let change = try request.decoded(SettingsChange.self)
        return .ok(try deviceSwitch.change(change))
    }
}
