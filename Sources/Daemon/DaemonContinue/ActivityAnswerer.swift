#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonCore
import HandoffAPI
import HandoffModel
import HandoffPeer

/// This device's side of another's `continue`, as sessions need it: what it announces about its
/// activity, the activity for a device that asks (saved first by its app when it needs saving),
/// and telling the app its activity was continued.
package struct ActivityAnswerer: Sendable {
    let registry: ActivityRegistry
    let presence: Presence
    let attachments: Attachments
    /// Tells the other features of each activity given (`.activityGiven`).
    let announce: Announce
    /// How long an app asked to save has (`ActivityAnswer.saveWindow`; tests on a loaded
    /// machine give more).
    let saveWindow: Duration

    package init(
        registry: ActivityRegistry, presence: Presence, attachments: Attachments, announce: @escaping Announce,
        saveWindow: Duration = ActivityAnswer.saveWindow
    ) {
        self.registry = registry
        self.presence = presence
        self.attachments = attachments
        self.announce = announce
        self.saveWindow = saveWindow
    }

    /// What a new session is told first.
    var notice: ActivityNotice { presence.notice }

    /// The answer to `peer`'s request for the current activity; the activity it carries may then
    /// be asked for streams.
    func answer(_ requestID: UInt32, seen: UUID?, to peer: LocalEvent.PeerRef) async -> PeerMessage {
        // Off, this device tells the others nothing (a session it dialled to continue from one
        // of them stays open meanwhile).
        guard presence.isSharing else {
            return .activityUnavailable(requestID: requestID, ActivityUnavailable(.none, message: "handoff is off on that device"))
        }
        let attachments = self.attachments
        let (answer, activity) = await ActivityAnswer.answerAndActivity(
            requestID, seen: seen, registry: registry, askToSave: { activity in attachments.willSave(activity.id, peer: peer) }, saveWindow: saveWindow
        )
        if let activity { announce(.activityGiven(to: peer.id, activityID: activity.id)) }
        return answer
    }

    /// `peer` took `activityID`: its app hears `wasContinued`.
    func continued(_ activityID: UUID, by peer: LocalEvent.PeerRef) {
        attachments.wasContinued(activityID, peer: peer)
    }
}

/// How a device answers "send me your current activity".
package enum ActivityAnswer {
    /// How long an app asked to save (needsSave) has before the last state is sent (docs/local-api.md, "The originating app: attach").
    package static let saveWindow: Duration = .seconds(1)

    /// The current activity, or why there is none to give. With `askToSave`, a needsSave activity
    /// is first saved by its app: when that asks one (it returns true), the answer waits for the
    /// update, at most `saveWindow`.
    static func answer(
        _ requestID: UInt32, seen: UUID?, registry: ActivityRegistry, askToSave: (@Sendable (Activity) -> Bool)? = nil, now: Timestamp? = nil
    ) async -> PeerMessage {
        await answerAndActivity(requestID, seen: seen, registry: registry, askToSave: askToSave, now: now).message
    }

    /// The answer, and the activity it carries (if it carries one).
    static func answerAndActivity(
        _ requestID: UInt32, seen: UUID?, registry: ActivityRegistry, askToSave: (@Sendable (Activity) -> Bool)? = nil,
        saveWindow: Duration = ActivityAnswer.saveWindow, now given: Timestamp? = nil
    ) async -> (message: PeerMessage, activity: Activity?) {
        var live = registry.liveActivityNow()
        if live == nil { live = await registry.currentActivity() }
        guard let current = live else {
            return (.activityUnavailable(requestID: requestID, ActivityUnavailable(.none, message: "there is no current activity")), nil)
        }
        // Expiry by the registry's clock, as the registry itself judges it.
        let now = given ?? registry.clock.now()
        if let refusal = refusal(requestID, for: current, seen: seen, now: now) { return (refusal, nil) }
        guard current.content.needsSave, let askToSave, askToSave(current) else {
            return (.activity(requestID: requestID, encoded: ActivityEncoding.encode(current)), current)
        }
        await registry.waitForChange(within: saveWindow)
        guard let saved = await registry.currentActivity() else {
            return (.activityUnavailable(requestID: requestID, ActivityUnavailable(.none, message: "the activity was withdrawn")), nil)
        }
        // Saving updates the activity; an app that started another one instead changed it.
        if let refusal = refusal(requestID, for: saved, seen: current.id, now: registry.clock.now()) { return (refusal, nil) }
        return (.activity(requestID: requestID, encoded: ActivityEncoding.encode(saved)), saved)
    }

    private static func refusal(_ requestID: UInt32, for current: Activity, seen: UUID?, now: Timestamp) -> PeerMessage? {
        if let seen, seen != current.id {
            return .activityUnavailable(
                requestID: requestID,
                ActivityUnavailable(.changed, currentID: current.id, message: "the current activity is now \(current.type) \(displayQuoted(current.title))")
            )
        }
        if current.isExpired(at: now) {
            return .activityUnavailable(requestID: requestID, ActivityUnavailable(.expired, currentID: current.id, message: "the activity expired"))
        }
        return nil
    }
}
