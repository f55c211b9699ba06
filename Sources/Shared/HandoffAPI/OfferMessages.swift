#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffModel

/// `GET /v1/offers`: what this device can continue from the others right now — each reachable
/// device's current activity that something here takes (a running app, a handler or `.desktop`
/// app, or the browser for its web page). The desktop agent shows these as notifications
/// (docs/desktop.md).
public struct OffersResponse: Codable, Sendable, Equatable {
    public var offers: [Offer]

    public init(offers: [Offer]) { self.offers = offers }
}

public struct Offer: Codable, Sendable, Equatable {
    public var peer: LocalEvent.PeerRef
    public var activity: ActivitySummary
    /// What would take it if continued now.
    public var target: ContinueTarget
    /// Whether the user wants a notification for it (handoffd.toml `[notifications]`).
    public var notify: Bool

    public init(peer: LocalEvent.PeerRef, activity: ActivitySummary, target: ContinueTarget, notify: Bool) {
        self.peer = peer
        self.activity = activity
        self.target = target
        self.notify = notify
    }
}

/// The app that would continue an activity here, as a person would name it.
public struct ContinueTarget: Codable, Sendable, Equatable {
    /// `app` (running), `handler` (started: handoffd.toml or a `.desktop` file), `browser`.
    public var kind: DeliveryOutcome.Kind
    /// The app id, the `.desktop` file id, `config`, or the browser command.
    public var handler: String
    /// The app's name (`Name=` of its `.desktop` file when there is one).
    public var name: String
    /// Its icon (`Icon=`: a theme icon name or a path), if known.
    public var icon: String?
    /// `org.freedesktop.Application` can hand it to the running instance (`DBusActivatable=true`).
    public var dbusActivatable: Bool

    public init(kind: DeliveryOutcome.Kind, handler: String, name: String, icon: String? = nil, dbusActivatable: Bool = false) {
        self.kind = kind
        self.handler = handler
        self.name = name
        self.icon = icon
        self.dbusActivatable = dbusActivatable
    }
}
