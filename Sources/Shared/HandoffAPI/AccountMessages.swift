#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffModel

/// `GET /v1/account`, and the answer to create and join. No key material, ever.
public struct AccountInfo: Codable, Sendable, Equatable {
    public var accountID: DeviceID
    public var accountName: String
    public var deviceID: DeviceID
    public var deviceName: String
    /// Whether this device holds the account's root key, and so may invite and remove devices.
    public var isAdmin: Bool
    public var stateVersion: UInt64
    public var deviceCount: Int
    public var certificateExpires: Timestamp
    /// Set once this device was removed from the account (or left it): it can do nothing with it
    /// any more but leave (`account leave`) and join again.
    public var removal: RemovalInfo?
    /// When the last recovery code was made (none: the account key is only where it is).
    public var recoveryCodeMadeAt: Timestamp?
    /// The device the account state names as holding the account key (none in states made
    /// before it was kept).
    public var keyHolder: DeviceID?
    /// The key holder offers this device the account key (`account transfer-key` there), until
    /// accepted here (`account accept-key`) or expired.
    public var keyOffer: KeyOfferInfo?
    /// (On the key holder) the device it offered the key to, until that device took it or the
    /// offer expired or was withdrawn.
    public var keyOfferedTo: KeyOfferInfo?
    /// How many times the account key was rotated (`account rotate-key`); 0 before any.
    public var keyRotations: Int?
    /// This device's certificate is from a retired account key: the key holder renews it when
    /// the two next talk.
    public var certificateFromRetiredKey: Bool?
    /// (On the key holder) the key went to this device, which has not said yet that it stored
    /// it: this device signs nothing until that is settled.
    public var keyHandedTo: DeviceID?

    public init(
        accountID: DeviceID, accountName: String, deviceID: DeviceID, deviceName: String, isAdmin: Bool,
        stateVersion: UInt64, deviceCount: Int, certificateExpires: Timestamp, removal: RemovalInfo? = nil, recoveryCodeMadeAt: Timestamp? = nil,
        keyHolder: DeviceID? = nil, keyOffer: KeyOfferInfo? = nil, keyOfferedTo: KeyOfferInfo? = nil
    ) {
        self.keyOffer = keyOffer
        self.keyOfferedTo = keyOfferedTo
        self.removal = removal
        self.recoveryCodeMadeAt = recoveryCodeMadeAt
        self.keyHolder = keyHolder
        self.accountID = accountID
        self.accountName = accountName
        self.deviceID = deviceID
        self.deviceName = deviceName
        self.isAdmin = isAdmin
        self.stateVersion = stateVersion
        self.deviceCount = deviceCount
        self.certificateExpires = certificateExpires
    }
}

/// How this device was removed from its account.
public struct RemovalInfo: Codable, Sendable, Equatable {
    public var accountName: String
    /// The device that removed it (nil when not recorded, by older versions).
    public var byName: String?
    public var byID: DeviceID?
    public var at: Timestamp
    public var reason: RemovalNotice.Reason

    public init(accountName: String, byName: String?, byID: DeviceID?, at: Timestamp, reason: RemovalNotice.Reason) {
        self.accountName = accountName
        self.byName = byName
        self.byID = byID
        self.at = at
        self.reason = reason
    }

    /// "removed from “Ana's devices” by desk at 2026-11-23T10:00:00Z", for messages.
    public var sentence: String {
        let account = displayQuoted(accountName)
        switch reason {
        case .left: return "left \(account) at \(at.rfc3339)"
        case .removed: return "removed from \(account)\(byName.map { " by \($0)" } ?? "") at \(at.rfc3339)"
        }
    }

    /// What to do about it.
    public var advice: String {
        let inviter = byName.map { " (from handoffctl account invite on \($0))" } ?? ""
        return "to use handoff here again: handoffctl account leave, then handoffctl account join CODE\(inviter)"
    }
}

/// `POST /v1/account/recovery-code`'s answer: the code, shown once (docs/security.md, "Losing the
/// key holder").
public struct RecoveryCodeResponse: Codable, Sendable, Equatable {
    public var code: String
    public var account: AccountInfo

    public init(code: String, account: AccountInfo) {
        self.code = code
        self.account = account
    }
}

/// `POST /v1/account/recover`: the recovery code, as typed.
public struct RecoverRequest: Codable, Sendable, Equatable {
    public var code: String

    public init(code: String) {
        self.code = code
    }
}

/// An offer of the account key between two devices: on the key holder, the device it is offered
/// to; on that device, the key holder offering it.
public struct KeyOfferInfo: Codable, Sendable, Equatable {
    public var deviceID: DeviceID
    public var deviceName: String
    public var expiresAt: Timestamp

    public init(deviceID: DeviceID, deviceName: String, expiresAt: Timestamp) {
        self.deviceID = deviceID
        self.deviceName = deviceName
        self.expiresAt = expiresAt
    }
}

/// `POST /v1/account/transfer-key`: hand the account key to another device of the account.
public struct KeyTransferRequest: Codable, Sendable, Equatable {
    /// The device (name or id start).
    public var device: String
    /// Instead: give up a hand-over whose receipt never came (the device is gone), so that this
    /// device signs again (docs/security.md, "Handing the key over").
    public var cancel: Bool?

    public init(device: String, cancel: Bool? = nil) {
        self.device = device
        self.cancel = cancel
    }

    enum CodingKeys: String, CodingKey { case device, cancel }

    /// `{"cancel": true}` names no device.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(device: try c.decodeIfPresent(String.self, forKey: .device) ?? "", cancel: try c.decodeIfPresent(Bool.self, forKey: .cancel))
    }
}

/// The NDJSON lines of `POST /v1/account/transfer-key`: the offer as sent, then the account once
/// the other device holds the key; or that the offer expired unaccepted; or that the key went to
/// that device (`unconfirmed`), which did not say it stored it — this device then signs nothing
/// until that is settled (docs/security.md, "Handing the key over").
public struct KeyTransferUpdate: Codable, Sendable, Equatable {
    public var offered: KeyOfferInfo?
    public var transferred: AccountInfo?
    public var expired: Bool?
    public var unconfirmed: DeviceID?
    /// The answer to `cancel`: the account, signing again.
    public var cancelled: AccountInfo?

    public init(
        offered: KeyOfferInfo? = nil, transferred: AccountInfo? = nil, expired: Bool? = nil, unconfirmed: DeviceID? = nil, cancelled: AccountInfo? = nil
    ) {
        self.cancelled = cancelled
        self.offered = offered
        self.transferred = transferred
        self.expired = expired
        self.unconfirmed = unconfirmed
    }
}

/// `POST /v1/account/leave`: forget the account on this device, and tell the others.
public struct LeaveRequest: Codable, Sendable, Equatable {
    /// Leave even though this device holds the account key and others remain (they keep an
    /// account that nobody can add devices to or remove them from).
    public var force: Bool

    public init(force: Bool = false) {
        self.force = force
    }
}

public struct LeaveResponse: Codable, Sendable, Equatable {
    public var accountName: String
    /// The devices that were told (had a session when it left).
    public var told: [String]
    /// Whether the device holding the account key removed this one (it was told and did).
    public var removedByKeyHolder: Bool
    /// The device had been removed from the account already: nobody needed telling.
    public var wasRemoved: Bool

    public init(accountName: String, told: [String], removedByKeyHolder: Bool, wasRemoved: Bool = false) {
        self.accountName = accountName
        self.told = told
        self.removedByKeyHolder = removedByKeyHolder
        self.wasRemoved = wasRemoved
    }
}

/// `POST /v1/devices/rename`: a device's name in the account.
public struct RenameDeviceRequest: Codable, Sendable, Equatable {
    /// The device (name or id start); nil is this one. Only the device holding the account key
    /// renames others.
    public var device: String?
    public var name: String

    public init(device: String? = nil, name: String) {
        self.device = device
        self.name = name
    }
}

/// `POST /v1/account`.
public struct CreateAccountRequest: Codable, Sendable, Equatable {
    public var name: String?
    public var deviceName: String?

    public init(name: String? = nil, deviceName: String? = nil) {
        self.name = name
        self.deviceName = deviceName
    }
}

/// `POST /v1/account/join`.
public struct JoinAccountRequest: Codable, Sendable, Equatable {
    /// As the user typed it; the daemon parses it (and says which character is wrong).
    public var code: String
    /// `host:port` of the inviting device.
    public var peer: String?
    public var deviceName: String?

    public init(code: String, peer: String? = nil, deviceName: String? = nil) {
        self.code = code
        self.peer = peer
        self.deviceName = deviceName
    }
}

/// One line of the `POST /v1/account/invites` NDJSON answer: first `invite`, then exactly one of
/// `joined` or `expired`.
public struct InviteUpdate: Codable, Sendable, Equatable {
    public struct Invite: Codable, Sendable, Equatable {
        public var code: String
        public var expiresAt: Timestamp
        public var port: Int

        public init(code: String, expiresAt: Timestamp, port: Int) {
            self.code = code
            self.expiresAt = expiresAt
            self.port = port
        }
    }

    public var invite: Invite?
    public var joined: DeviceInfo?
    public var expired: Bool?

    public init(invite: Invite? = nil, joined: DeviceInfo? = nil, expired: Bool? = nil) {
        self.invite = invite
        self.joined = joined
        self.expired = expired
    }
}

public struct DeviceInfo: Codable, Sendable, Equatable {
    public var id: DeviceID
    public var name: String
    public var addedAt: Timestamp
    public var isThisDevice: Bool

    public init(id: DeviceID, name: String, addedAt: Timestamp, isThisDevice: Bool) {
        self.id = id
        self.name = name
        self.addedAt = addedAt
        self.isThisDevice = isThisDevice
    }
}

/// A removed device, as the signed account state records it.
public typealias RevokedDeviceInfo = AccountState.Revocation

/// `GET /v1/devices`.
public struct DevicesResponse: Codable, Sendable, Equatable {
    public var stateVersion: UInt64
    public var devices: [DeviceInfo]
    public var revoked: [RevokedDeviceInfo]

    public init(stateVersion: UInt64, devices: [DeviceInfo], revoked: [RevokedDeviceInfo]) {
        self.stateVersion = stateVersion
        self.devices = devices
        self.revoked = revoked
    }
}

/// `POST /v1/account/sync`: talk to one device now and exchange account states.
public struct SyncRequest: Codable, Sendable, Equatable {
    public var peer: String

    public init(peer: String) {
        self.peer = peer
    }
}

public struct SyncResponse: Codable, Sendable, Equatable {
    public var peerID: DeviceID
    public var peerName: String
    /// Our account state version after the exchange.
    public var stateVersion: UInt64
    /// Whether we learned a newer account state from the peer.
    public var updated: Bool

    public init(peerID: DeviceID, peerName: String, stateVersion: UInt64, updated: Bool) {
        self.peerID = peerID
        self.peerName = peerName
        self.stateVersion = stateVersion
        self.updated = updated
    }
}
