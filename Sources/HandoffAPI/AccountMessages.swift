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

    public init(
        accountID: DeviceID, accountName: String, deviceID: DeviceID, deviceName: String, isAdmin: Bool,
        stateVersion: UInt64, deviceCount: Int, certificateExpires: Timestamp
    ) {
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
