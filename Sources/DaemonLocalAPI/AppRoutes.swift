import DaemonApps
import DaemonCore
import HandoffAPI
import HandoffModel

/// Apps and their windows (docs/apps.md, docs/local-api.md "Apps and windows"): registering, and
/// each window's activity, focus and state-restoration activity. Every handler's first line
/// checks who is asking.
struct AppRoutes: Sendable {
    let desk: AppDesk
    let daemonUID: UInt32

    init(desk: AppDesk, daemonUID: UInt32) {
        self.desk = desk
        self.daemonUID = daemonUID
    }

    /// `POST /v1/apps`: the registration's events for as long as the app stays connected;
    /// when it goes (its connection closes, or handoffd stops), its windows' activities go.
    func register(_ request: LocalAPIRequest) async throws -> LocalAPIResponse {
        try request.peer.authorize(daemonUID: daemonUID)
        let ask = try request.decoded(AppRegistration.self)
        let desk = desk
        let (registration, events) = try await desk.register(ask)
        return .lines { writer in
            for await event in events {
                guard await writer.write(event) else { break }
            }
            await desk.unregister(registration)
        }
    }

    func put(_ request: LocalAPIRequest) async throws -> LocalAPIResponse {
        try request.peer.authorize(daemonUID: daemonUID)
        let (registration, window, part) = try Self.window(request)
        switch part {
        case .activity:
            let content = try request.decoded(PutCurrentActivityRequest.self).content
            let id = try await desk.setActivity(content, window: window, of: registration)
            return .ok(WindowResponse(window: window, activityID: id))
        case .restoration:
            let content = try request.decoded(PutCurrentActivityRequest.self).content
            try await desk.saveRestoration(content, window: window, of: registration)
            return .ok(WindowResponse(window: window))
        case .window, .focus:
            return Self.wrongMethod("PUT", part)
        }
    }

    func post(_ request: LocalAPIRequest) async throws -> LocalAPIResponse {
        try request.peer.authorize(daemonUID: daemonUID)
        if let (registration, continuationID) = LocalAPIRoute.parseContinuationAnswer(request.path) {
            let reply = try request.decoded(ContinuationAnswer.self)
            try await desk.answer(reply, continuationID: continuationID, from: registration)
            return .ok(reply)
        }
        let (registration, window, part) = try Self.window(request)
        guard part == .focus else { return Self.wrongMethod("POST", part) }
        try await desk.focus(window: window, of: registration)
        return .ok(WindowResponse(window: window))
    }

    func delete(_ request: LocalAPIRequest) async throws -> LocalAPIResponse {
        try request.peer.authorize(daemonUID: daemonUID)
        let (registration, window, part) = try Self.window(request)
        switch part {
        case .window: try await desk.close(window: window, of: registration)
        case .activity: try await desk.withdrawActivity(window: window, of: registration)
        case .restoration: try await desk.removeRestoration(window: window, of: registration)
        case .focus: return Self.wrongMethod("DELETE", part)
        }
        return .ok(WindowResponse(window: window))
    }

    private static func window(_ request: LocalAPIRequest) throws(LocalAPIError) -> (AppWindows.Registration, String, LocalAPIRoute.WindowPart) {
        guard let parsed = LocalAPIRoute.parseWindow(request.path) else {
            throw LocalAPIError(
                .notFound, "no endpoint \(request.head.method.rawValue) \(request.path): windows are /v1/apps/REGISTRATION/windows/WINDOW[/activity|/focus|/restoration]"
            )
        }
        return parsed
    }

    /// 405 with the methods this part of a window takes (`Allow`).
    private static func wrongMethod(_ method: String, _ part: LocalAPIRoute.WindowPart) -> LocalAPIResponse {
        let allowed: String =
            switch part {
            case .window: "DELETE"
            case .activity, .restoration: "PUT, DELETE"
            case .focus: "POST"
            }
        let what = part == .window ? "a window" : "a window's \(part.rawValue)"
        return .error(LocalAPIError(.methodNotAllowed, "\(method) is not allowed on \(what) (allowed: \(allowed))"), headers: ["allow": allowed])
    }
}
