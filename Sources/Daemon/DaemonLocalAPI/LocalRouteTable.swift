import HandoffAPI

/// What answers one endpoint; the request has been authorized (`AuthorizedRequest`).
package typealias LocalHandler = @Sendable (AuthorizedRequest) async throws -> LocalAPIResponse

/// A feature's part of the local API: the endpoints of the one contract (`LocalAPIEndpoints`:
/// methods, paths, Allow, the client) that it answers, each with its handler. The router
/// dispatches from what the features register, so no switch lists every endpoint; adding one is
/// a row in the contract and a handler in its feature's `handlers`.
package protocol LocalRoutes: Sendable {
    /// The feature's name, as `LocalRouteTable.owners` reports it.
    var feature: String { get }
    var handlers: [LocalAPIEndpoints.Endpoint: LocalHandler] { get }
}

/// Every feature's handlers by endpoint, and who registered each.
struct LocalRouteTable: Sendable {
    private(set) var handlers: [LocalAPIEndpoints.Endpoint: LocalHandler] = [:]
    /// The features that registered each endpoint: exactly one each, in a daemon that starts.
    private(set) var owners: [LocalAPIEndpoints.Endpoint: [String]] = [:]

    init(_ features: [any LocalRoutes]) {
        for feature in features {
            for (endpoint, handler) in feature.handlers {
                owners[endpoint, default: []].append(feature.feature)
                if handlers[endpoint] == nil { handlers[endpoint] = handler }
            }
        }
    }

    /// What is wrong with the registrations: an endpoint of the contract that no feature
    /// answers, or one that two claim.
    var faults: [String] {
        LocalAPIEndpoints.Endpoint.allCases.compactMap { endpoint in
            let claimed = owners[endpoint] ?? []
            switch claimed.count {
            case 1: return nil
            case 0: return "\(endpoint) is answered by no feature"
            default: return "\(endpoint) is claimed by \(claimed.joined(separator: " and "))"
            }
        }
    }
}
