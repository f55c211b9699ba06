import DaemonCore
import ServiceLifecycle

/// `MemberSessions` runs its background work (dials, sessions it started) inside the daemon's
/// service group, and ends it all on shutdown.
package struct MemberSessionsService: Service {
    let sessions: MemberSessions
    let staticPeers: [PeerAddress]
    /// Static peers are dialled only while handoff is on here.
    let deviceSwitch: DeviceSwitch

    package init(sessions: MemberSessions, staticPeers: [PeerAddress], deviceSwitch: DeviceSwitch) {
        self.sessions = sessions
        self.staticPeers = staticPeers
        self.deviceSwitch = deviceSwitch
    }

    package func run() async throws {
        let deviceSwitch = self.deviceSwitch
        for peer in staticPeers { sessions.maintainStatic(peer) { await deviceSwitch.waitUntilOn() } }
        await sessions.dialRemembered()
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                // This device's advert changed (it started, or renamed): the open sessions hear it.
                group.addTask {
                    for await own in sessions.directory.ownAdverts {
                        if let port = UInt16(exactly: own.port) { _ = await sessions.broadcast(.advertName(instanceName: own.instanceName, port: port)) }
                    }
                }
                for await job in sessions.jobStream {
                    group.addTask { await job() }
                }
            }
        }
    }
}
