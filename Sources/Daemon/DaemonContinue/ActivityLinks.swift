#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonAccounts
import DaemonCore
import DaemonHistory
import HandoffAPI
import HandoffModel

/// Links to activities (docs/apps.md, "Links"): `handoffctl link` makes one, `handoffctl open`
/// (and the `handoff:` URI handler, and apps) reopens what it names — from the device it was
/// current on while it is still current there (its latest state, with streams), else as this
/// device's history kept it, else its web page.
package struct ActivityLinks: Sendable {
    let accounts: AccountStore
    let registry: ActivityRegistry
    let history: HistoryStore
    let fetch: ActivityFetch
    let continueFlow: ContinueFlow

    package init(accounts: AccountStore, registry: ActivityRegistry, history: HistoryStore, fetch: ActivityFetch, continueFlow: ContinueFlow) {
        self.accounts = accounts
        self.registry = registry
        self.history = history
        self.fetch = fetch
        self.continueFlow = continueFlow
    }

    /// A link to this device's current activity, another device's, or one in the history.
    package func make(_ request: LinkRequest) async throws(DaemonError) -> LinkResponse {
        let named = [request.peer != nil, request.historyEntry != nil, request.persistentIdentifier != nil].filter { $0 }.count
        guard named <= 1 else { throw DaemonError(ActivityError(.invalidValue, "name at most one of peer, historyEntry and persistentIdentifier")) }
        if let position = request.historyEntry, position < 1 {
            throw DaemonError(ActivityError(.invalidValue, "historyEntry counts from 1 (the newest entry)"))
        }
        let account = try await accounts.requireMembership()
        let me = account.deviceID
        let activity: Activity
        let device: LocalEvent.PeerRef?
        if let peer = request.peer {
            // Fetched now, and kept: the link then opens here while that device is away.
            let fetched = try await fetch.run(peer, state: account.state, me: me) { _, _ async in }
            (activity, device) = (fetched.activity, fetched.peer)
            await history.record(activity, device: device, own: false, at: .now())
        } else if let position = request.historyEntry {
            let list = await history.list()
            guard list.enabled else { throw DaemonError(.notSaved, "history is off on this device ([history] enabled = false in handoffd.toml)") }
            let entries = list.entries
            guard position <= entries.count else {
                throw DaemonError(.notSaved, "the history has \(entries.count) entries; \(position) is not one of them (handoffctl history lists them)")
            }
            (activity, device) = (entries[position - 1].activity, entries[position - 1].own ? nil : entries[position - 1].device)
        } else if let persistentIdentifier = request.persistentIdentifier {
            guard let entry = await history.newest(persistentIdentifier: persistentIdentifier) else {
                throw DaemonError(.notSaved, "the history has no activity with that persistentIdentifier")
            }
            (activity, device) = (entry.activity, entry.own ? nil : entry.device)
        } else {
            guard let current = await registry.currentActivity() else {
                throw DaemonError(.noCurrentActivity, "this device has no current activity to link to")
            }
            (activity, device) = (current, nil)
        }
        let made = try await accounts.link(to: activity, on: device?.id ?? me)
        return LinkResponse(link: made.link, target: made.target, activity: activity, device: device)
    }

    /// Reopens what `request.link` names here.
    package func open(_ request: OpenLinkRequest) async throws(DaemonError) -> OpenLinkResponse {
        let target = try await accounts.openLink(request.link)
        let me = try await accounts.requireMembership().deviceID
        let here = await accounts.peerRef(me)
        let why: String
        if target.device == me {
            if let current = await registry.currentActivity(), target.names(current) {
                let continued = try await continueFlow.reopen(current, from: here, delivery: request.delivery, environment: request.environment)
                return OpenLinkResponse(source: .device, reason: nil, target: target, continued: continued)
            }
            why = "it is no longer current on this device"
        } else {
            // Asked by id only when nothing else names it: the device then answers without
            // sending (and its app hears no willSave) if it moved on.
            let ask = ContinueRequest(
                peer: target.device.text, delivery: request.delivery, environment: request.environment,
                activityID: target.persistentIdentifier == nil ? target.activityID : nil
            )
            switch try await continueFlow.run(ask, link: target) {
            case .continued(let continued):
                return OpenLinkResponse(source: .device, reason: nil, target: target, continued: continued)
            case .unavailable(let reason):
                why = reason
            }
        }
        if let kept = await history.newest(naming: target) {
            let from = kept.own ? here : kept.device ?? here
            let continued = try await continueFlow.reopen(kept.activity, from: from, delivery: request.delivery, environment: request.environment)
            return OpenLinkResponse(source: .history, reason: why, target: target, continued: continued)
        }
        if let page = target.webpageURL {
            // A page, not the linked activity: an id of its own.
            let activity = Activity(content: ActivityContent(type: ActivityContent.browsingWebType, title: "", webpageURL: page), createdAt: .now())
            let from = target.device == me ? here : await accounts.peerRef(target.device)
            let continued = try await continueFlow.reopen(activity, from: from, delivery: request.delivery, environment: request.environment)
            return OpenLinkResponse(source: .webpage, reason: why, target: target, continued: continued)
        }
        throw DaemonError(.notSaved, "the linked activity is not to be had: \(why), and this device's history does not have it")
    }
}
