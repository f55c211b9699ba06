import DaemonCore
import HandoffAPI

/// This device itself: its status (`GET /v1/status`) and its settings (`GET`/`PUT
/// /v1/settings`, docs/local-api.md). Every handler's first line checks who is asking.
package struct DeviceRoutes: Sendable {
    let deviceSwitch: DeviceSwitch
    /// What `status` shows, gathered by the composition root from every feature.
    let gather: @Sendable () async -> DaemonStatus
    let daemonUID: UInt32

    package init(deviceSwitch: DeviceSwitch, status: @escaping @Sendable () async -> DaemonStatus, daemonUID: UInt32) {
        self.deviceSwitch = deviceSwitch
        self.gather = status
        self.daemonUID = daemonUID
    }

    func status(_ request: LocalAPIRequest) async throws -> LocalAPIResponse {
        try request.peer.authorize(daemonUID: daemonUID)
        return .ok(await gather())
    }

    func settings(_ request: LocalAPIRequest) throws -> LocalAPIResponse {
        try request.peer.authorize(daemonUID: daemonUID)
        return .ok(deviceSwitch.settings)
    }

    func changeSettings(_ request: LocalAPIRequest) throws -> LocalAPIResponse {
        try request.peer.authorize(daemonUID: daemonUID)
        let change = try request.decoded(SettingsChange.self)
        return .ok(try deviceSwitch.change(change))
    }
}
