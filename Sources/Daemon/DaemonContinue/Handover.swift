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

/// Where a continuation goes on this device (docs/apps.md, "Where a continuation goes"): the
/// running app that takes it (`AppRegistry`), else a program started for it (`Launcher`: a handler,
/// a `.desktop` app, the browser).
package struct Handover: Sendable {
    let apps: AppRegistry
    let launcher: Launcher
    let documents: DocumentReceiver

    package init(apps: AppRegistry, launcher: Launcher, documents: DocumentReceiver) {
        self.apps = apps
        self.launcher = launcher
        self.documents = documents
    }

    /// The user asked to continue an activity of `type`: the running app that would take it
    /// hears `willContinue` now, before the activity arrives — with the window that takes it
    /// when its target is known already.
    func willContinue(continuationID: UUID, type: String, target: String?, targetKnown: Bool, from peer: LocalEvent.PeerRef) async {
        await apps.willContinue(continuationID: continuationID, type: type, target: target, targetKnown: targetKnown, from: peer)
    }

    /// The continuation failed: a running app told `willContinue` hears why.
    func failed(continuationID: UUID, _ error: DaemonError) async {
        await apps.failed(continuationID: continuationID, code: APIErrorCode(error.code), reason: error.message)
    }

    /// What would take an activity of `type` if it were continued now.
    func target(for type: String, hasWebpage: Bool) async -> ContinueTarget? {
        if let appID = await apps.receivingApp(for: type) { return launcher.runningApp(appID) }
        return launcher.target(for: type, hasWebpage: hasWebpage)
    }

    /// The running app that continues its type; else the program here for its type; else, for a
    /// document, the same document here or the copy that comes, opened by the app for its MIME
    /// type; else, for an https page of a site an app claims, that app (running first) with the
    /// page as `org.handoff.browsing-web`; else its page to the browser (docs/apps.md).
    func deliver(
        _ activity: Activity, continuationID: UUID, from peer: LocalEvent.PeerRef, session: [String: String]
    ) async throws(DaemonError) -> DeliveryOutcome {
        if let taken = try await apps.deliver(activity, continuationID: continuationID, from: peer) { return taken }
        let handler = launcher.handler(for: activity.type)
        if handler == nil, activity.type == DocumentActivity.type {
            let found = try await documents.fetch(activity, continuationID: continuationID, from: peer)
            return try await launcher.open(document: found.path, mimeType: found.mimeType, session: session)
        }
        if handler == nil, let host = activity.content.webpageURL.flatMap(WebDomainClaim.claimableHost) {
            let page = Self.browsingWeb(activity)
            if let taken = try await apps.deliver(page, continuationID: continuationID, from: peer, claimed: (host, launcher.webDomainsOff)) { return taken }
            if let claimant = launcher.webClaimant(host: host) {
                return try await launcher.deliver(
                    page, with: claimant.handler, page: page.content.webpageURL, continuationID: continuationID, from: peer, session: session
                )
            }
        }
        return try await launcher.deliver(activity, with: handler, continuationID: continuationID, from: peer, session: session)
    }

    /// A page as the app that claims its site gets it: its title and address, under Apple's
    /// browsing-web type, and nothing of the app that showed it (`userInfo` is that app's).
    static func browsingWeb(_ activity: Activity) -> Activity {
        var content = ActivityContent(type: ActivityContent.browsingWebType, title: activity.content.title, webpageURL: activity.content.webpageURL)
        content.expirationDate = activity.content.expirationDate
        return Activity(id: activity.id, content: content, createdAt: activity.createdAt, updatedAt: activity.updatedAt, originDevice: activity.originDevice)
    }
}
