import DaemonApps
import DaemonCore
import HandoffAPI
import HandoffModel

/// Apps and their windows (docs/apps.md, docs/local-api.md "Apps and windows"): registering, and
/// each window's activity, focus, state-restoration activity and activation conditions.
package struct AppRoutes: LocalRoutes {
    let apps: AppRegistry

    package init(apps: AppRegistry) {
        self.apps = apps
    }

    package var feature: String { "apps" }
    package var handlers: [LocalAPIEndpoints.Endpoint: LocalHandler] {
        [.registerApp: register, .putWindow: put, .postWindow: post, .deleteWindow: delete, .answerContinuation: answer]
    }

    /// `POST /v1/apps`: the registration's events for as long as the app stays connected;
    /// when it goes (its connection closes, or handoffd stops), its windows' activities go.
    func register(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        let ask = try request.decoded(AppRegistration.self)
        let apps = apps
        let (registration, events) = try await apps.register(ask)
        return .lines { writer in
            for await event in events {
                guard await writer.write(event) else { break }
            }
            await apps.unregister(registration)
        }
    }

    // Which methods each part of a window takes is `LocalAPIEndpoints`' table, like every
    // other route's: a part here is one the router matched for the method.

    /// `PUT` a window's activity or state-restoration activity.
    func put(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        let (registration, window, part) = try Self.window(request)
        switch part {
        case .activity:
            let content = try request.decoded(PutCurrentActivityRequest.self).content
            try ActivityRoutes.refuseDocument(content)
            let set = try await apps.setActivity(content, window: window, of: registration)
            return .ok(WindowResponse(window: window, activityID: set.id, warnings: set.warnings))
        case .restoration:
            let content = try request.decoded(PutCurrentActivityRequest.self).content
            try await apps.saveRestoration(content, window: window, of: registration)
            return .ok(WindowResponse(window: window))
        case .conditions:
            try await apps.setConditions(try request.decoded(ActivationConditions.self), window: window, of: registration)
            return .ok(WindowResponse(window: window))
        case .window, .focus:
            throw Self.unrouted("PUT", part)
        }
    }

    /// `POST` a window's focus.
    func post(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        let (registration, window, part) = try Self.window(request)
        guard part == .focus else { throw Self.unrouted("POST", part) }
        try await apps.focus(window: window, of: registration)
        return .ok(WindowResponse(window: window))
    }

    /// `POST` an app's answer to a continuation.
    func answer(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        guard let (registration, continuationID) = LocalAPIRoute.parseContinuationAnswer(request.path) else {
            throw LocalAPIError(.notFound, "no endpoint POST \(request.path): answers are /v1/apps/REGISTRATION/continuations/ID")
        }
        let reply = try request.decoded(ContinuationAnswer.self)
        try await apps.answer(reply, continuationID: continuationID, from: registration)
        return .ok(reply)
    }

    /// `DELETE` a window, its activity or its state-restoration activity.
    func delete(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        let (registration, window, part) = try Self.window(request)
        switch part {
        case .window: try await apps.close(window: window, of: registration, keepingRestoration: request.query.contains("keepRestoration=1"))
        case .activity: try await apps.withdrawActivity(window: window, of: registration)
        case .restoration: try await apps.removeRestoration(window: window, of: registration)
        case .conditions: try await apps.setConditions(nil, window: window, of: registration)
        case .focus: throw Self.unrouted("DELETE", part)
        }
        return .ok(WindowResponse(window: window))
    }

    /// A part the endpoint table has no row for reached its handler: a mistake in the table.
    private static func unrouted(_ method: String, _ part: LocalAPIRoute.WindowPart) -> LocalAPIError {
        LocalAPIError(.internalError, "\(method) on a window's \(part == .window ? "self" : part.rawValue) reached its handler; LocalAPIEndpoints has no such route")
    }

    private static func window(_ request: AuthorizedRequest) throws(LocalAPIError) -> (AppWindows.Registration, String, LocalAPIRoute.WindowPart) {
        guard let parsed = LocalAPIRoute.parseWindow(request.path) else {
            throw LocalAPIError(
                .notFound, "no endpoint \(request.head.method.rawValue) \(request.path): windows are /v1/apps/REGISTRATION/windows/WINDOW[/activity|/focus|/restoration|/conditions]"
            )
        }
        return parsed
    }
}
