import DaemonContinue
import DaemonDiscovery
import DaemonLinks
import HandoffAPI

/// What the other devices are doing, and continuing one. Every handler's first line checks who is
/// asking.
package struct PeerRoutes: Sendable {
    let directory: PeerDirectory
    let discovery: DiscoveryService
    let continueFlow: ContinueFlow
    let offers: OfferDesk

    package init(directory: PeerDirectory, discovery: DiscoveryService, continueFlow: ContinueFlow, offers: OfferDesk) {
        self.directory = directory
        self.discovery = discovery
        self.continueFlow = continueFlow
        self.offers = offers
    }

    func peers(_ request: LocalAPIRequest) async throws -> LocalAPIResponse {
        return .ok(PeersResponse(peers: await directory.all(), strangers: await directory.strangers, discovery: discovery.status))
    }

    func offers(_ request: LocalAPIRequest) async throws -> LocalAPIResponse {
        return .ok(await offers.current())
    }

    func continueActivity(_ request: LocalAPIRequest) async throws -> LocalAPIResponse {
        let ask = try request.decoded(ContinueRequest.self)
        return .ok(try await continueFlow.run(ask))
    }
}
