import DaemonContinue
import DaemonDiscovery
import DaemonSessions
import HandoffAPI

/// What the other devices are doing, continuing one, and links to activities (docs/apps.md,
/// "Links").
package struct PeerRoutes: LocalRoutes {
    let directory: PeerDirectory
    let discovery: DiscoveryService
    let continueFlow: ContinueFlow
    let offers: OfferFinder
    let links: ActivityLinks

    package init(directory: PeerDirectory, discovery: DiscoveryService, continueFlow: ContinueFlow, offers: OfferFinder, links: ActivityLinks) {
        self.directory = directory
        self.discovery = discovery
        self.continueFlow = continueFlow
        self.offers = offers
        self.links = links
    }

    package var feature: String { "continue" }
    package var handlers: [LocalAPIEndpoints.Endpoint: LocalHandler] {
        [.peers: peers, .offers: offers, .continue: continueActivity, .makeLink: makeLink, .openLink: openLink]
    }

    func peers(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        return .ok(PeersResponse(peers: await directory.all(), strangers: await directory.strangers, discovery: discovery.status))
    }

    func offers(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        return .ok(await offers.current())
    }

    func continueActivity(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        let ask = try request.decoded(ContinueRequest.self)
        let continued = try await continueFlow.run(ask)
        return .ok(continued.response, then: continued.tellOrigin)
    }

    /// `POST /v1/links`: a link to an activity.
    func makeLink(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        let ask = try request.decoded(LinkRequest.self)
        return .ok(try await links.make(ask))
    }

    /// `POST /v1/links/open`: reopens what a link names.
    func openLink(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        let ask = try request.decoded(OpenLinkRequest.self)
        return .ok(try await links.open(ask))
    }
}
