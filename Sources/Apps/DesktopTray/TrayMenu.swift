#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffModel

/// What the agent knows that the status icon shows (docs/desktop.md, "The status icon"): what
/// handoffd says, and what the agent itself has under way.
package struct TrayFacts: Equatable, Sendable {
    package enum Daemon: Equatable, Sendable {
        /// Not asked yet.
        case starting
        case notRunning
        case running
    }

    /// An invite this agent made ("Add a device…"), while it is open.
    package struct Invite: Equatable, Sendable {
        package var code: String
        package var expiresAt: Timestamp

        package init(code: String, expiresAt: Timestamp) {
            self.code = code
            self.expiresAt = expiresAt
        }
    }

    package var daemon = Daemon.starting
    package var account: AccountInfo?
    package var handoffOn = true
    /// This device shares its clipboard with the account's (`[clipboard] enabled`).
    package var clipboardOn = true
    package var peers: [PeerInfo] = []
    package var offers: [Offer] = []
    package var invite: Invite?
    /// Devices nearby inviting (counted by handoffd while this device has no account).
    package var invitingNearby = 0
    /// The join dialog is open, or a join is under way.
    package var joining = false

    package init() {}
}

/// The status icon's menu, tooltip and look, as a value made from `TrayFacts` (table-tested);
/// `StatusIcon` serves it over D-Bus. Each item has a `Key` that says what it is and stays the
/// same while the menu is rebuilt, so a click names what the user saw.
package struct TrayMenu: Equatable, Sendable {
    package enum Key: Hashable, Sendable {
        /// A line that only informs (handoffd not running, no account…), by position.
        case message(Int)
        /// A device of the account, and what it is doing.
        case device(DeviceID)
        /// Continue this device's activity (exactly this one).
        case continueFrom(DeviceID, activityID: UUID)
        /// Why this device's activity cannot be continued here now.
        case cannotContinue(DeviceID)
        case addDevice
        case inviteCode
        case cancelInvite
        /// Take the account key another device offers this one (docs/security.md, "Handing the
        /// key over").
        case acceptKey
        case join
        /// The device's switch, and what choosing it does (as the user saw it).
        case handoffSwitch(turnOn: Bool)
        /// The clipboard's switch (docs/clipboard.md), likewise.
        case clipboardSwitch(turnOn: Bool)
        case separator(Int)
    }

    package struct Item: Equatable, Sendable {
        package var key: Key
        /// Plain text, as the user reads it.
        package var label: String
        package var enabled: Bool
        /// A theme icon name (the app that would continue).
        package var icon: String?
        /// A switch: on or off. Nil for any other item.
        package var checked: Bool?

        package init(_ key: Key, _ label: String, enabled: Bool = false, icon: String? = nil, checked: Bool? = nil) {
            self.key = key
            self.label = label
            self.enabled = enabled
            self.icon = icon
            self.checked = checked
        }

        package var isSeparator: Bool {
            if case .separator = key { return true }
            return false
        }
    }

    package var items: [Item]
    /// The tooltip: a title and one line.
    package var title: String
    package var detail: String
    /// Coloured (handoff on and running) or grey.
    package var active: Bool

    /// `clock`: a time of day as the user reads it (the local time, `14:05`).
    package init(_ facts: TrayFacts, clock: (Timestamp) -> String) {
        title = "Handoff"
        var items: [Item] = []
        var messages = 0
        func message(_ text: String) {
            items.append(Item(.message(messages), text))
            messages += 1
        }
        var separators = 0
        func separator() {
            guard let last = items.last, !last.isSeparator else { return }
            items.append(Item(.separator(separators), ""))
            separators += 1
        }

        switch facts.daemon {
        case .starting, .notRunning:
            message(facts.daemon == .starting ? "Asking handoffd…" : "handoffd is not running")
            if facts.daemon == .notRunning { message("Start it: systemctl --user start handoffd") }
            self.items = items
            detail = facts.daemon == .starting ? "Starting" : "handoffd is not running"
            active = false
            return
        case .running:
            break
        }

        guard let account = facts.account else {
            message("This device is in no handoff account yet")
            separator()
            let inviting =
                facts.invitingNearby == 0
                ? "" : facts.invitingNearby == 1 ? " (a device nearby is inviting)" : " (\(facts.invitingNearby) devices nearby are inviting)"
            items.append(Item(.join, facts.joining ? "Joining…" : "Join another device’s account…" + inviting, enabled: !facts.joining))
            items.append(Item(.addDevice, "Start an account here and add a device…", enabled: facts.handoffOn && !facts.joining))
            separator()
            items.append(Item(.handoffSwitch(turnOn: !facts.handoffOn), "Handoff on this device", enabled: true, checked: facts.handoffOn))
            self.items = items
            detail = "No account yet"
            active = facts.handoffOn
            return
        }

        if let removal = account.removal {
            message("This device was \(removal.sentence)")
            message("To join again: handoffctl account leave, then account join CODE")
            self.items = items
            detail = "Removed from \(account.accountName)"
            active = false
            return
        }

        let offers = Dictionary(facts.offers.map { ($0.peer.id, $0) }, uniquingKeysWith: { first, _ in first })
        let peers = facts.peers.sorted { ($0.reachable ? 0 : 1, $0.name) < ($1.reachable ? 0 : 1, $1.name) }
        if peers.isEmpty { message("No other device yet: add one below") }
        for peer in peers {
            guard let activity = peer.activity else {
                items.append(Item(.device(peer.id), "\(peer.name) — \(peer.reachable ? "nothing to continue" : "not reachable")"))
                continue
            }
            items.append(Item(.device(peer.id), "\(peer.name) — “\(activity.title)”"))
            if let offer = offers[peer.id], offer.activity.id == activity.id {
                items.append(Item(.continueFrom(peer.id, activityID: activity.id), "Continue in \(offer.target.name)", enabled: true, icon: offer.target.icon))
            } else {
                let why = peer.reachable ? "No app here opens it" : facts.handoffOn ? "Not reachable now" : "Not reachable: handoff is off on this device"
                items.append(Item(.cannotContinue(peer.id), why))
            }
        }
        separator()
        if account.recoveryCodeMadeAt == nil {
            // docs/security.md, "Losing the key holder".
            message(account.isAdmin ? "No recovery code: losing this device loses the account" : "No recovery code: losing the key holder loses the account")
            message(account.isAdmin ? "Make one: handoffctl account recovery-code" : "Make one there: handoffctl account recovery-code")
        }
        if let offer = account.keyOffer {
            items.append(Item(.acceptKey, "Take the account key from \(offer.deviceName) (until \(clock(offer.expiresAt)))", enabled: true))
        }
        if let invite = facts.invite {
            items.append(Item(.inviteCode, "Code for the new device: \(invite.code) (until \(clock(invite.expiresAt)))"))
            items.append(Item(.cancelInvite, "Cancel the invite", enabled: true))
        } else if !account.isAdmin {
            items.append(Item(.addDevice, "Add a device… (on the device holding the account key)"))
        } else if !facts.handoffOn {
            items.append(Item(.addDevice, "Add a device… (turn handoff on first)"))
        } else {
            items.append(Item(.addDevice, "Add a device…", enabled: true))
        }
        separator()
        items.append(Item(.handoffSwitch(turnOn: !facts.handoffOn), "Handoff on this device", enabled: true, checked: facts.handoffOn))
        items.append(Item(.clipboardSwitch(turnOn: !facts.clipboardOn), "Share the clipboard with your devices", enabled: true, checked: facts.clipboardOn))
        self.items = items

        let reachable = peers.filter(\.reachable).count
        if !facts.handoffOn {
            detail = "Off on this device"
        } else if let offer = facts.offers.first {
            detail = "Continue “\(offer.activity.title)” from \(offer.peer.name)"
        } else {
            detail = reachable == 1 ? "1 device reachable" : "\(reachable) devices reachable"
        }
        active = facts.handoffOn
    }
}
