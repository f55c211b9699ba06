#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffModel

// MARK: - Payload encoding

extension PeerMessage {
    /// Notices reuse the advert encoding, whose device id field is meaningless inside a session
    /// (the TLS certificate says who is talking).
    static let placeholderID = DeviceID(digest: [UInt8](repeating: 0, count: 32))

    /// What tells another device of `notice`: the notice, then its activity's target when known.
    public static func telling(_ notice: ActivityNotice) -> [PeerMessage] {
        guard let activity = notice.activity, activity.targetKnown else { return [.activityNotice(notice)] }
        return [.activityNotice(notice), .activityTarget(sequence: notice.sequence, target: activity.targetContentIdentifier)]
    }

    /// The most deletions one message (and so one device's list of them) carries.
    public static let maximumSavedDeletions = 128
    /// A DNS-SD instance name is one DNS label: at most 63 bytes.
    public static let maximumInstanceNameBytes = 63

    /// A signed account state and its account secret, each length-prefixed.
    static func signedState(_ r: inout ByteReader) throws -> (SignedAccountState, [UInt8]) {
        let stateBytes = Array(try r.lengthPrefixed())
        let secret = Array(try r.lengthPrefixed())
        do {
            return (try SignedAccountState(decoding: stateBytes), secret)
        } catch {
            throw PeerMessageError(description: "\(error)")
        }
    }

    static func uuid(_ r: inout ByteReader) throws -> UUID { try r.uuid() }
}

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
            if let clock = h.clock {
                w.uint64BE(UInt64(bitPattern: clock.microsecondsSinceEpoch))
                if let rotations = h.keyRotations { w.varint(rotations) }
            }
        case .accountState(let s, let secret):
            w.lengthPrefixed(s.encoded())
            w.lengthPrefixed(secret)
        case .getAccountState(let id), .leaving(let id):
            w.uint32BE(id)
        case .removed(let notice):
            w.raw(notice.encoded())
        case .renameRequest(let id, let name):
            w.uint32BE(id)
            w.lengthPrefixed(Array(name.utf8))
        case .accountStateReply(let id, let s, let secret):
            w.uint32BE(id)
            w.lengthPrefixed(s.encoded())
            w.lengthPrefixed(secret)
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
        case .activityNotice(let n):
            // The advert's encoding carries exactly this; the device id there is the sender's own.
            w.varint(n.sequence)
            w.lengthPrefixed(Advert(deviceID: PeerMessage.placeholderID, sequence: n.sequence, activity: n.activity).encoded())
        case .getActivity(let id, let seen):
            w.uint32BE(id)
            if let seen {
                w.byte(1)
                w.raw(withUnsafeBytes(of: seen.uuid) { Array($0) })
            } else {
                w.byte(0)
            }
        case .activity(let id, let encoded):
            w.uint32BE(id)
            w.lengthPrefixed(encoded)
        case .activityUnavailable(let id, let u):
            w.uint32BE(id)
            w.byte(u.reason.rawValue)
            if let current = u.currentID {
                w.byte(1)
                w.raw(withUnsafeBytes(of: current.uuid) { Array($0) })
            } else {
                w.byte(0)
            }
            w.lengthPrefixed(Array(u.message.utf8))
        case .activityContinued(let id), .openStream(let id):
            w.raw(withUnsafeBytes(of: id.uuid) { Array($0) })
        case .streamAccepted(let id, let length):
            w.raw(withUnsafeBytes(of: id.uuid) { Array($0) })
            if let length { w.uint64BE(UInt64(bitPattern: length)) }
        case .streamRefused(let refusal):
            w.byte(refusal.reason.rawValue)
            w.lengthPrefixed(Array(refusal.message.utf8))
        case .savedDeletions(let deletions):
            w.varint(UInt64(deletions.count))
            for deletion in deletions { deletion.encode(into: &w) }
        case .activityTarget(let sequence, let target):
            w.varint(sequence)
            if let target {
                w.byte(1)
                w.lengthPrefixed(Array(target.utf8))
            } else {
                w.byte(0)
            }
        case .clipboardNotice(let notice):
            notice.encode(into: &w)
        case .openClipboardStream(let id, let type):
            w.uuid(id)
            w.lengthPrefixed(Array(type.utf8))
        case .keyOffer(let id, let expiresAt):
            w.uuid(id)
            w.zigzag(expiresAt.microsecondsSinceEpoch)
        case .keyAccept(let request, let id):
            w.uint32BE(request)
            w.uuid(id)
        case .keyHandover(let request, let key, let state, let secret):
            w.uint32BE(request)
            w.lengthPrefixed(key)
            w.lengthPrefixed(state.encoded())
            w.lengthPrefixed(secret)
        case .keyRefused(let request, let message):
            w.uint32BE(request)
            w.lengthPrefixed(Array(message.utf8))
        case .keyStored(let id):
            w.uuid(id)
        case .renewCertificate(let request, let key):
            w.uint32BE(request)
            w.lengthPrefixed(key)
        case .certificateRenewed(let request, let certificate):
            w.uint32BE(request)
            w.lengthPrefixed(certificate)
        case .advertName(let name, let port):
            w.lengthPrefixed(Array(name.utf8))
            w.uint16BE(port)
        case .unknown:
            break
        }
        return (kindByte, w.bytes)
    }

    public init(kind: UInt8, payload: [UInt8]) throws(PeerMessageError) {
        guard let k = Kind(rawValue: kind) else {
            self = .unknown(kind: kind)
            return
        }
        var r = ByteReader(payload)
        do {
            switch k {
            case .hello:
                let version = try r.uint16BE()
                guard let id = DeviceID(try r.utf8String()) else { throw PeerMessageError(description: "hello: bad device id") }
                let name = try r.utf8String()
                let stateVersion = try r.varint()
                let clock = r.isAtEnd ? nil : Timestamp(microsecondsSinceEpoch: Int64(bitPattern: try r.uint64BE()))
                let rotations = r.isAtEnd ? nil : try r.varint()
                self = .hello(
                    PeerHello(protocolVersion: version, deviceID: id, deviceName: name, accountStateVersion: stateVersion, clock: clock, keyRotations: rotations)
                )
            case .accountState:
                let (state, secret) = try PeerMessage.signedState(&r)
                self = .accountState(state, accountSecret: secret)
            case .getAccountState:
                self = .getAccountState(requestID: try r.uint32BE())
            case .leaving:
                self = .leaving(requestID: try r.uint32BE())
            case .renameRequest:
                self = .renameRequest(requestID: try r.uint32BE(), name: try r.utf8String())
            case .removed:
                do {
                    self = .removed(try RemovalNotice(decoding: Array(try r.take(r.remaining))))
                } catch let e as AccountState.DecodeError {
                    throw PeerMessageError(description: "\(e)")
                }
            case .accountStateReply:
                let id = try r.uint32BE()
                let (state, secret) = try PeerMessage.signedState(&r)
                self = .accountStateReply(requestID: id, state, accountSecret: secret)
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
                self = .joinRefused(JoinRefusal(JoinRefusalReason(rawValue: raw) ?? .internalError, try r.utf8String()))
            case .failure:
                let raw = try r.uint16BE()
                self = .failure(PeerFailure(PeerFailure.Code(rawValue: raw) ?? .unknown, try r.utf8String()))
            case .activityNotice:
                let sequence = try r.varint()
                guard let advert = Advert(decoding: Array(try r.lengthPrefixed())), advert.sequence == sequence else {
                    throw PeerMessageError(description: "malformed activity notice")
                }
                self = .activityNotice(ActivityNotice(sequence: sequence, activity: advert.activity))
            case .getActivity:
                let id = try r.uint32BE()
                self = .getActivity(requestID: id, seenID: try r.byte() == 1 ? try PeerMessage.uuid(&r) : nil)
            case .activity:
                self = .activity(requestID: try r.uint32BE(), encoded: Array(try r.lengthPrefixed()))
            case .activityUnavailable:
                let id = try r.uint32BE()
                guard let reason = ActivityUnavailable.Reason(rawValue: try r.byte()) else {
                    throw PeerMessageError(description: "unknown unavailability reason")
                }
                let current = try r.byte() == 1 ? try PeerMessage.uuid(&r) : nil
                self = .activityUnavailable(requestID: id, ActivityUnavailable(reason, currentID: current, message: try r.utf8String()))
            case .activityContinued:
                self = .activityContinued(activityID: try PeerMessage.uuid(&r))
            case .openStream:
                self = .openStream(activityID: try PeerMessage.uuid(&r))
            case .streamAccepted:
                let id = try PeerMessage.uuid(&r)
                self = .streamAccepted(streamID: id, length: r.isAtEnd ? nil : Int64(bitPattern: try r.uint64BE()))
            case .streamRefused:
                let raw = try r.byte()
                self = .streamRefused(StreamRefusal(StreamRefusalReason(rawValue: raw) ?? .internalError, try r.utf8String()))
            case .savedDeletions:
                let count = try r.varint()
                guard count <= UInt64(PeerMessage.maximumSavedDeletions) else {
                    throw PeerMessageError(description: "more than \(PeerMessage.maximumSavedDeletions) deletions")
                }
                var deletions: [SavedActivityDeletion] = []
                for _ in 0..<count {
                    do {
                        deletions.append(try SavedActivityDeletion(decoding: &r))
                    } catch {
                        throw PeerMessageError(description: error.description)
                    }
                }
                self = .savedDeletions(deletions)
            case .activityTarget:
                let sequence = try r.varint()
                let target = try r.byte() == 1 ? try r.utf8String() : nil
                guard (target?.utf8.count ?? 0) <= ActivitySummary.maximumTargetBytes else { throw PeerMessageError(description: "an activity target over 512 bytes") }
                self = .activityTarget(sequence: sequence, target: target)
            case .clipboardNotice:
                do {
                    self = .clipboardNotice(try ClipboardNotice(decoding: &r))
                } catch {
                    throw PeerMessageError(description: error.description)
                }
            case .openClipboardStream:
                let id = try PeerMessage.uuid(&r)
                let type = try r.utf8String()
                guard ClipboardNotice.isPastable(type) else { throw PeerMessageError(description: "a clipboard form not carried") }
                self = .openClipboardStream(copyID: id, type: type)
            case .keyOffer:
                self = .keyOffer(offerID: try r.uuid(), expiresAt: Timestamp(microsecondsSinceEpoch: try r.zigzag()))
            case .keyAccept:
                self = .keyAccept(requestID: try r.uint32BE(), offerID: try r.uuid())
            case .keyHandover:
                let request = try r.uint32BE()
                let key = Array(try r.lengthPrefixed())
                guard key.count == 32 else { throw PeerMessageError(description: "an account key that is not 32 bytes") }
                let (state, secret) = try PeerMessage.signedState(&r)
                self = .keyHandover(requestID: request, rootKey: key, state: state, accountSecret: secret)
            case .keyRefused:
                self = .keyRefused(requestID: try r.uint32BE(), message: try r.utf8String())
            case .keyStored:
                self = .keyStored(offerID: try r.uuid())
            case .renewCertificate:
                let request = try r.uint32BE()
                let key = Array(try r.lengthPrefixed())
                guard key.count == 32 else { throw PeerMessageError(description: "a public key that is not 32 bytes") }
                self = .renewCertificate(requestID: request, publicKey: key)
            case .certificateRenewed:
                let request = try r.uint32BE()
                let certificate = Array(try r.lengthPrefixed())
                guard certificate.count <= 16 * 1024 else { throw PeerMessageError(description: "a certificate over 16 KiB") }
                self = .certificateRenewed(requestID: request, certificate: certificate)
            case .advertName:
                let name = try r.utf8String()
                let port = try r.uint16BE()
                guard (1...PeerMessage.maximumInstanceNameBytes).contains(name.utf8.count), port > 0 else {
                    throw PeerMessageError(description: "an advert name of no or over 63 bytes, or port 0")
                }
                self = .advertName(instanceName: name, port: port)
            }
        } catch let e as PeerMessageError {
            throw e
        } catch {
            throw PeerMessageError(description: "malformed \(k) message: \(error)")
        }
        guard r.isAtEnd else { throw PeerMessageError(description: "\(k) message has trailing bytes") }
    }
}
