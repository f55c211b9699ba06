#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonApps
import DaemonCore
import DaemonDocuments
import HandoffAPI
import HandoffModel
import HandoffSystem

/// The current activity, attaching to it, and the event stream (apps' windows, whose focus
/// makes the current activity, are `AppRoutes`).
package struct ActivityRoutes: LocalRoutes {
    let registry: ActivityRegistry
    let events: EventHub
    let attachments: Attachments
    let documents: DocumentShelf

    package init(registry: ActivityRegistry, events: EventHub, attachments: Attachments, documents: DocumentShelf) {
        self.registry = registry
        self.events = events
        self.attachments = attachments
        self.documents = documents
    }

    package var feature: String { "activities" }
    package var handlers: [LocalAPIEndpoints.Endpoint: LocalHandler] {
        [.getCurrent: getCurrent, .putCurrent: putCurrent, .putDocument: putDocument, .deleteCurrent: deleteCurrent, .attach: attach, .events: events(_:)]
    }

    func getCurrent(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        return .ok(try await registry.currentResponse())
    }

    func putCurrent(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        let put = try request.decoded(PutCurrentActivityRequest.self)
        try Self.refuseDocument(put.content)
        return .ok(try await registry.becomeCurrent(put))
    }

    /// handoffd sends a document's file to whoever continues it: it describes the file itself,
    /// from the file (`putDocument`), and no app or window may make one.
    static func refuseDocument(_ content: ActivityContent) throws(DaemonError) {
        guard content.type != DocumentActivity.type else {
            throw DaemonError(
                ActivityError(
                    .invalidType,
                    "a \(DocumentActivity.type) activity is made from its file: PUT \(LocalAPIRoute.currentDocument) (handoffctl become-current --document FILE)"
                )
            )
        }
    }

    /// `PUT /v1/activity/current/document`: a file becomes the current activity.
    func putDocument(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        return .ok(try await documents.offer(try request.decoded(DocumentRequest.self)))
    }

    /// `DELETE /v1/activity/current`; with `?id=ID`, only if that one is still current (else
    /// nothing is withdrawn: `{}`).
    func deleteCurrent(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        if let text = request.query.split(separator: "&").first(where: { $0.hasPrefix("id=") })?.dropFirst(3) {
            guard let id = UUID(uuidString: String(text)) else { throw DaemonError(.badRequest, "id=\(text) is not an activity id") }
            return .ok(ResignResponse(resigned: try await registry.resignCurrent(ifID: id)))
        }
        return .ok(ResignResponse(resigned: try await registry.resignCurrent()))
    }

    func events(_ request: AuthorizedRequest) throws -> LocalAPIResponse {
        return .ndjson(events.subscribe())
    }

    func attach(_ request: AuthorizedRequest) async throws -> LocalAPIResponse {
        let ask = try request.decoded(AttachRequest.self)
        let registry = registry
        guard await registry.currentActivity()?.id == ask.activityID else {
            throw DaemonError(.activityChanged, "activity \(ask.activityID.lowercasedString) is not the current one; attach to what become-current returned")
        }
        let events = attachments.attach(ask) { departure in
            Task(executorPreference: ProgramExecutor.current) {
                switch departure {
                case .resign(let id):
                    guard await registry.currentActivity()?.id == id else { return }
                    _ = try? await registry.resignCurrent()
                case .streamsGone(let id):
                    await registry.stopOfferingStreams(id)
                }
            }
        }
        // It may have been replaced between the check and the attachment.
        if let now = await registry.currentActivity()?.id, now != ask.activityID {
            attachments.currentChanged(to: now, reason: "replaced")
        }
        return .ndjson(events)
    }
}
