import HandoffModel

/// The messages devices exchange inside an authenticated TLS connection (docs/peer-protocol.md).
///
/// Each travels in a frame `type:u8 length:u32be payload`. Payloads are built from the same
/// length-prefixed pieces as the activity encoding, decoded strictly: a malformed message ends
/// the connection.
public enum PeerMessage: Sendable, Equatable {
    /// First message of each side; the server sends it first, and in TLS 1.3 that is how the
    /// client learns it was accepted.
    case hello(PeerHello)
    /// The sender's signed account state (sent when the other side's version is older).
    case accountState(SignedAccountState)
    /// Joiner → inviter, inside a PSK-authenticated connection.
    case joinRequest(JoinRequest)
    case joinAccepted(JoinAccepted)
    case joinRefused(JoinRefusal)
    /// Something went wrong; the connection ends after it.
    case failure(PeerFailure)

    enum Kind: UInt8 {
        case hello = 1, accountState = 2, joinRequest = 3, joinAccepted = 4, joinRefused = 5, failure = 6
    }

    var kind: Kind {
        switch self {
        case .hello: .hello
        case .accountState: .accountState
        case .joinRequest: .joinRequest
        case .joinAccepted: .joinAccepted
        case .joinRefused: .joinRefused
        case .failure: .failure
        }
    }
}

public struct PeerHello: Sendable, Equatable {
    public static let currentProtocolVersion: UInt16 = 1
    public var protocolVersion: UInt16
    public var deviceID: DeviceID
    public var deviceName: String
    public var accountStateVersion: UInt64

    public init(protocolVersion: UInt16 = PeerHello.currentProtocolVersion, deviceID: DeviceID, deviceName: String, accountStateVersion: UInt64) {
        self.protocolVersion = protocolVersion
        self.deviceID = deviceID
        self.deviceName = deviceName
        self.accountStateVersion = accountStateVersion
    }
}

public struct JoinRequest: Sendable, Equatable {
    public var deviceName: String
    /// The joiner's raw Ed25519 public key; its certificate will be issued for it.
    public var publicKey: [UInt8]

    public init(deviceName: String, publicKey: [UInt8]) {
        self.deviceName = deviceName
        self.publicKey = publicKey
    }
}

public struct JoinAccepted: Sendable, Equatable {
    public var deviceCertificate: [UInt8]
    public var rootCertificate: [UInt8]
    public var accountState: SignedAccountState
    /// The account's shared secret (advert sealing and tags), sent only inside the PSK channel.
    public var accountSecret: [UInt8]

    public init(deviceCertificate: [UInt8], rootCertificate: [UInt8], accountState: SignedAccountState, accountSecret: [UInt8]) {
        self.deviceCertificate = deviceCertificate
        self.rootCertificate = rootCertificate
        self.accountState = accountState
        self.accountSecret = accountSecret
    }
}

public struct JoinRefusal: Sendable, Equatable {
    public enum Reason: UInt8, Sendable {
        case expired = 1
        case alreadyUsed = 2
        case invalidRequest = 3
        case internalError = 4
    }

    public var reason: Reason
    public var message: String

    public init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }
}

public struct PeerFailure: Sendable, Equatable {
    public enum Code: UInt16, Sendable {
        case protocolVersion = 1
        case unexpectedMessage = 2
        case revoked = 3
        case notAMember = 4
        case internalError = 5
        case unknown = 0xFFFF
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}

// MARK: - Payload encoding

public struct PeerMessageError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
}

extension PeerMessage {
    public func encodedPayload() -> (kind: UInt8, payload: [UInt8]) {
        var w = ByteWriter()
        switch self {
        case .hello(let h):
            w.uint16BE(h.protocolVersion)
            w.lengthPrefixed(Array(h.deviceID.text.utf8))
            w.lengthPrefixed(Array(h.deviceName.utf8))
            w.varint(h.accountStateVersion)
        case .accountState(let s):
            w.raw(s.encoded())
        case .joinRequest(let r):
            w.lengthPrefixed(Array(r.deviceName.utf8))
            w.lengthPrefixed(r.publicKey)
        case .joinAccepted(let a):
            w.lengthPrefixed(a.deviceCertificate)
            w.lengthPrefixed(a.rootCertificate)
            w.lengthPrefixed(a.accountState.encoded())
            w.lengthPrefixed(a.accountSecret)
        case .joinRefused(let r):
            w.byte(r.reason.rawValue)
            w.lengthPrefixed(Array(r.message.utf8))
        case .failure(let f):
            w.uint16BE(f.code.rawValue)
            w.lengthPrefixed(Array(f.message.utf8))
        }
        return (kind.rawValue, w.bytes)
    }

    public init(kind: UInt8, payload: [UInt8]) throws(PeerMessageError) {
        guard let k = Kind(rawValue: kind) else { throw PeerMessageError(description: "unknown message type \(kind)") }
        var r = ByteReader(payload)
        do {
            switch k {
            case .hello:
                let version = try r.uint16BE()
                guard let id = DeviceID(try r.utf8String()) else { throw PeerMessageError(description: "hello: bad device id") }
                self = .hello(PeerHello(protocolVersion: version, deviceID: id, deviceName: try r.utf8String(), accountStateVersion: try r.varint()))
            case .accountState:
                do {
                    self = .accountState(try SignedAccountState(decoding: payload))
                } catch {
                    throw PeerMessageError(description: "\(error)")
                }
                return
            case .joinRequest:
                self = .joinRequest(JoinRequest(deviceName: try r.utf8String(), publicKey: Array(try r.lengthPrefixed())))
            case .joinAccepted:
                let cert = Array(try r.lengthPrefixed())
                let root = Array(try r.lengthPrefixed())
                let stateBytes = Array(try r.lengthPrefixed())
                let secret = Array(try r.lengthPrefixed())
                let state: SignedAccountState
                do {
                    state = try SignedAccountState(decoding: stateBytes)
                } catch {
                    throw PeerMessageError(description: "\(error)")
                }
                self = .joinAccepted(JoinAccepted(deviceCertificate: cert, rootCertificate: root, accountState: state, accountSecret: secret))
            case .joinRefused:
                let raw = try r.byte()
                self = .joinRefused(JoinRefusal(JoinRefusal.Reason(rawValue: raw) ?? .internalError, try r.utf8String()))
            case .failure:
                let raw = try r.uint16BE()
                self = .failure(PeerFailure(PeerFailure.Code(rawValue: raw) ?? .unknown, try r.utf8String()))
            }
        } catch let e as PeerMessageError {
            throw e
        } catch {
            throw PeerMessageError(description: "malformed \(k) message: \(error)")
        }
        guard r.isAtEnd else { throw PeerMessageError(description: "\(k) message has trailing bytes") }
    }
}
