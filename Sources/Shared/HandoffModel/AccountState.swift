/// Who belongs to an account: its devices and the devices it revoked. Signed by the account's root
/// key and versioned: devices exchange it whenever they talk and keep the highest valid version,
/// so a revocation reaches every device that meets any device that knows it (docs/security.md).
///
/// Encoding (version 1), like the activity encoding: `"HA" 0x01` then fields
/// `number:varint length:varint payload` in ascending order, unknown numbers skipped.
///   1 accountID (UTF-8)   2 name (UTF-8)   3 version (varint)   4 issuedAt (zigzag µs)
///   5 device (repeated):  [id, name, addedAt] as length-prefixed id, length-prefixed name, zigzag
///   6 revoked (repeated): [id, name, revokedAt], same layout, then optionally (later versions;
///     earlier readers skip the rest of a field): by id, by name, reason byte, the removal
///     notice's signature (`RemovalNotice`), each length-prefixed but the reason
///   7 key holder: length-prefixed id (absent: the device that created the account)
///   8 recovery: length-prefixed envelope (`RecoveryEnvelope`), madeAt (zigzag µs),
///     length-prefixed id of the device that made it
public struct AccountState: Sendable, Equatable {
    public struct Device: Sendable, Equatable, Codable {
        public var id: DeviceID
        public var name: String
        public var addedAt: Timestamp

        public init(id: DeviceID, name: String, addedAt: Timestamp) {
            self.id = id
            self.name = name
            self.addedAt = addedAt
        }
    }

    public struct Revocation: Sendable, Equatable, Codable {
        public var id: DeviceID
        public var name: String
        public var revokedAt: Timestamp
        /// The device that removed it (the one holding the account key), or the device itself
        /// when it left. Absent from revocations recorded before they were kept.
        public var byID: DeviceID?
        public var byName: String?
        public var reason: RemovalNotice.Reason
        /// The root key's signature over the removal notice (`RemovalNotice`), which any member
        /// hands the removed device; not part of the JSON form.
        public var noticeSignature: [UInt8]?

        public init(
            id: DeviceID, name: String, revokedAt: Timestamp, byID: DeviceID? = nil, byName: String? = nil, reason: RemovalNotice.Reason = .removed,
            noticeSignature: [UInt8]? = nil
        ) {
            self.id = id
            self.name = name
            self.revokedAt = revokedAt
            self.byID = byID
            self.byName = byName
            self.reason = reason
            self.noticeSignature = noticeSignature
        }

        enum CodingKeys: String, CodingKey { case id, name, revokedAt, byID, byName, reason }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            self.init(
                id: try c.decode(DeviceID.self, forKey: .id), name: try c.decode(String.self, forKey: .name),
                revokedAt: try c.decode(Timestamp.self, forKey: .revokedAt), byID: try c.decodeIfPresent(DeviceID.self, forKey: .byID),
                byName: try c.decodeIfPresent(String.self, forKey: .byName), reason: try c.decodeIfPresent(RemovalNotice.Reason.self, forKey: .reason) ?? .removed
            )
        }
    }

    /// The root key sealed with a recovery code, which any member can open with the code
    /// (docs/security.md, "Losing the key holder").
    public struct Recovery: Sendable, Equatable {
        /// `RecoveryEnvelope`'s encoding.
        public var envelope: [UInt8]
        public var madeAt: Timestamp
        public var madeBy: DeviceID

        public init(envelope: [UInt8], madeAt: Timestamp, madeBy: DeviceID) {
            self.envelope = envelope
            self.madeAt = madeAt
            self.madeBy = madeBy
        }

        /// An envelope is 82 bytes; room for a later format, no more.
        static let maximumEnvelope = 1024
    }

    public var accountID: DeviceID
    public var name: String
    public var version: UInt64
    public var issuedAt: Timestamp
    public private(set) var devices: [Device]
    public private(set) var revoked: [Revocation]
    /// The device holding the root key, as the key last signed it; nil in states made before it
    /// was kept (then the device that created the account holds it).
    public private(set) var keyHolder: DeviceID?
    public private(set) var recovery: Recovery?

    public init(
        accountID: DeviceID, name: String, version: UInt64, issuedAt: Timestamp, devices: [Device], revoked: [Revocation], keyHolder: DeviceID? = nil,
        recovery: Recovery? = nil
    ) {
        self.accountID = accountID
        self.name = name
        self.version = version
        self.issuedAt = issuedAt
        self.devices = devices.sorted { $0.id < $1.id }
        self.revoked = revoked.sorted { $0.id < $1.id }
        self.keyHolder = keyHolder
        self.recovery = recovery
    }

    /// No state is read with this version or a higher one (each change adds one).
    public static let maximumVersion: UInt64 = 1 << 53

    public func isRevoked(_ id: DeviceID) -> Bool { revoked.contains { $0.id == id } }
    public func device(_ id: DeviceID) -> Device? { devices.first { $0.id == id } }

    /// The next version, issued at `now`, with `change` made.
    private func next(at now: Timestamp, _ change: (inout AccountState) -> Void) -> AccountState {
        var next = self
        change(&next)
        next.version += 1
        next.issuedAt = now
        return next
    }

    /// The next version, with `device` added.
    public func adding(_ device: Device, at now: Timestamp) -> AccountState {
        next(at: now) {
            $0.devices.removeAll { $0.id == device.id }
            $0.devices.append(device)
            $0.devices.sort { $0.id < $1.id }
        }
    }

    /// The next version, with `id` moved from the devices to the revocations, removed by `by`
    /// (or leaving, when `by` is itself). Revocations are never undone: a device that was removed
    /// stays refused. The notice it will be shown (`notice(for:)`) still needs its signature
    /// (`signingNotice`).
    public func revoking(_ id: DeviceID, at now: Timestamp, by: Device? = nil) -> AccountState {
        let name = devices.first { $0.id == id }?.name ?? ""
        return next(at: now) { next in
            next.devices.removeAll { $0.id == id }
            if !next.revoked.contains(where: { $0.id == id }) {
                next.revoked.append(
                    Revocation(id: id, name: name, revokedAt: now, byID: by?.id, byName: by?.name, reason: by?.id == id ? .left : .removed)
                )
                next.revoked.sort { $0.id < $1.id }
            }
        }
    }

    /// The same state with `id`'s removal notice signed.
    public func signingNotice(for id: DeviceID, signature: [UInt8]) -> AccountState {
        var next = self
        if let i = next.revoked.firstIndex(where: { $0.id == id }) { next.revoked[i].noticeSignature = signature }
        return next
    }

    /// The next version, with device `id` called `name`.
    public func renaming(_ id: DeviceID, to name: String, at now: Timestamp) -> AccountState {
        guard let i = devices.firstIndex(where: { $0.id == id }) else { return self }
        return next(at: now) { $0.devices[i].name = name }
    }

    /// The next version, with `recovery` as the root key's envelope.
    public func recoverable(with recovery: Recovery, at now: Timestamp) -> AccountState {
        next(at: now) { $0.recovery = recovery }
    }

    /// The next version after `holder` rotated the root key: the recovery envelope goes (it
    /// seals the retired key; a new code seals the new one).
    public func rekeyed(by holder: DeviceID, at now: Timestamp) -> AccountState {
        next(at: now) {
            $0.recovery = nil
            $0.keyHolder = holder
        }
    }

    /// The next version, with `holder` holding the root key.
    public func held(by holder: DeviceID, at now: Timestamp) -> AccountState {
        next(at: now) { $0.keyHolder = holder }
    }

    /// What a removed device is shown of its removal (without the signature until signed).
    public func notice(for id: DeviceID) -> RemovalNotice? {
        guard let r = revoked.first(where: { $0.id == id }) else { return nil }
        return RemovalNotice(
            accountID: accountID, accountName: name, deviceID: r.id, deviceName: r.name, removedAt: r.revokedAt,
            byID: r.byID, byName: r.byName, reason: r.reason, signature: r.noticeSignature ?? []
        )
    }

    // MARK: Encoding

    static let magic: [UInt8] = [0x48, 0x41]  // "HA"
    static let formatVersion: UInt8 = 1

    public func encoded() -> [UInt8] {
        var w = ByteWriter()
        w.raw(AccountState.magic)
        w.byte(AccountState.formatVersion)
        func field(_ n: UInt64, _ body: (inout ByteWriter) -> Void) {
            var inner = ByteWriter()
            body(&inner)
            w.varint(n)
            w.lengthPrefixed(inner.bytes)
        }
        field(1) { $0.raw(accountID.text.utf8) }
        field(2) { $0.raw(name.utf8) }
        field(3) { $0.varint(version) }
        field(4) { $0.zigzag(issuedAt.microsecondsSinceEpoch) }
        for d in devices {
            field(5) {
                $0.lengthPrefixed(Array(d.id.text.utf8))
                $0.lengthPrefixed(Array(d.name.utf8))
                $0.zigzag(d.addedAt.microsecondsSinceEpoch)
            }
        }
        for r in revoked {
            field(6) {
                $0.lengthPrefixed(Array(r.id.text.utf8))
                $0.lengthPrefixed(Array(r.name.utf8))
                $0.zigzag(r.revokedAt.microsecondsSinceEpoch)
                if let by = r.byID {
                    $0.lengthPrefixed(Array(by.text.utf8))
                    $0.lengthPrefixed(Array((r.byName ?? "").utf8))
                    $0.byte(r.reason.rawValue)
                    $0.lengthPrefixed(r.noticeSignature ?? [])
                }
            }
        }
        if let keyHolder { field(7) { $0.lengthPrefixed(Array(keyHolder.text.utf8)) } }
        if let recovery {
            field(8) {
                $0.lengthPrefixed(recovery.envelope)
                $0.zigzag(recovery.madeAt.microsecondsSinceEpoch)
                $0.lengthPrefixed(Array(recovery.madeBy.text.utf8))
            }
        }
        return w.bytes
    }

    public struct DecodeError: Error, Equatable, CustomStringConvertible {
        public var description: String
    }

    public init(decoding bytes: [UInt8]) throws(DecodeError) {
        func bad(_ why: String) -> DecodeError { DecodeError(description: "malformed account state: \(why)") }
        guard bytes.count >= 3, bytes[0] == AccountState.magic[0], bytes[1] == AccountState.magic[1] else {
            throw bad("bad magic")
        }
        guard bytes[2] == AccountState.formatVersion else {
            throw DecodeError(description: "account state format \(bytes[2]) is newer than this handoff understands; update handoff")
        }
        var r = ByteReader(bytes)
        var accountID: DeviceID?
        var name: String?
        var version: UInt64?
        var issuedAt: Timestamp?
        var devices: [Device] = []
        var revoked: [Revocation] = []
        var keyHolder: DeviceID?
        var recovery: Recovery?
        do {
            _ = try r.take(3)
            var last: UInt64 = 0
            while !r.isAtEnd {
                let n = try r.varint()
                guard n > last || (n == last && (n == 5 || n == 6)) else { throw bad("field \(n) out of order") }
                last = n
                var p = ByteReader(Array(try r.lengthPrefixed()))
                func id() throws -> DeviceID {
                    guard let id = DeviceID(try p.utf8String()) else { throw bad("invalid device id") }
                    return id
                }
                switch n {
                case 1:
                    guard let id = DeviceID(String(decoding: p.bytes, as: UTF8.self)) else { throw bad("invalid account id") }
                    accountID = id
                case 2:
                    guard let s = String(validating: p.bytes, as: UTF8.self) else { throw bad("name is not UTF-8") }
                    name = s
                case 3:
                    // Far beyond any account's changes; a bound that keeps `next` from overflowing.
                    let v = try p.varint()
                    guard v < AccountState.maximumVersion else { throw bad("version out of range") }
                    version = v
                case 4: issuedAt = Timestamp(microsecondsSinceEpoch: try p.zigzag())
                case 5: devices.append(Device(id: try id(), name: try p.utf8String(), addedAt: Timestamp(microsecondsSinceEpoch: try p.zigzag())))
                case 6:
                    var r = Revocation(id: try id(), name: try p.utf8String(), revokedAt: Timestamp(microsecondsSinceEpoch: try p.zigzag()))
                    if !p.isAtEnd {
                        r.byID = try id()
                        r.byName = try p.utf8String()
                        r.reason = RemovalNotice.Reason(rawValue: try p.byte()) ?? .removed
                        let signature = Array(try p.lengthPrefixed())
                        r.noticeSignature = signature.isEmpty ? nil : signature
                    }
                    revoked.append(r)
                case 7:
                    guard let holder = DeviceID(try p.utf8String()) else { throw bad("invalid key holder") }
                    keyHolder = holder
                case 8:
                    let envelope = Array(try p.lengthPrefixed())
                    let madeAt = Timestamp(microsecondsSinceEpoch: try p.zigzag())
                    let madeBy = try id()
                    // Larger than any format this version knows: not kept (the rest of the state
                    // is, so that removals still reach this device).
                    if envelope.count <= Recovery.maximumEnvelope { recovery = Recovery(envelope: envelope, madeAt: madeAt, madeBy: madeBy) }
                default: break
                }
            }
        } catch let e as DecodeError {
            throw e
        } catch {
            throw bad("\(error)")
        }
        guard let accountID, let name, let version, let issuedAt else { throw bad("a required field is missing") }
        self.init(
            accountID: accountID, name: name, version: version, issuedAt: issuedAt, devices: devices, revoked: revoked, keyHolder: keyHolder,
            recovery: recovery
        )
    }
}

/// An account state and the root key's signature over its encoding, with the account's root
/// chain's links once its key was rotated (the certificates that lead from the first root to the
/// one that signed). Checking needs cryptography, which lives in HandoffTLS; this type only
/// carries and frames the bytes.
///
/// Encoding: `"HS" 0x01`, length-prefixed state encoding, length-prefixed signature; after a
/// rotation `"HS" 0x02`, the same, then count:varint (≤ 32) and each link (DER) length-prefixed.
public struct SignedAccountState: Sendable, Equatable {
    public static let maximumRootLinks = 32

    public var stateBytes: [UInt8]
    public var signature: [UInt8]
    public var rootLinks: [[UInt8]]

    public init(stateBytes: [UInt8], signature: [UInt8], rootLinks: [[UInt8]] = []) {
        self.stateBytes = stateBytes
        self.signature = signature
        self.rootLinks = rootLinks
    }

    public func encoded() -> [UInt8] {
        var w = ByteWriter()
        w.raw([0x48, 0x53, rootLinks.isEmpty ? 0x01 : 0x02])
        w.lengthPrefixed(stateBytes)
        w.lengthPrefixed(signature)
        if !rootLinks.isEmpty {
            w.varint(UInt64(rootLinks.count))
            for link in rootLinks { w.lengthPrefixed(link) }
        }
        return w.bytes
    }

    public init(decoding bytes: [UInt8]) throws(AccountState.DecodeError) {
        guard bytes.count >= 3, bytes[0] == 0x48, bytes[1] == 0x53, bytes[2] == 0x01 || bytes[2] == 0x02 else {
            throw AccountState.DecodeError(description: "not a signed account state")
        }
        var r = ByteReader(bytes)
        do {
            _ = try r.take(3)
            stateBytes = Array(try r.lengthPrefixed())
            signature = Array(try r.lengthPrefixed())
            rootLinks = []
            if bytes[2] == 0x02 {
                let count = try r.varint()
                guard count >= 1, count <= UInt64(Self.maximumRootLinks) else {
                    throw AccountState.DecodeError(description: "a signed account state with \(count) root links")
                }
                for _ in 0..<count { rootLinks.append(Array(try r.lengthPrefixed())) }
            }
        } catch let e as AccountState.DecodeError {
            throw e
        } catch {
            throw AccountState.DecodeError(description: "truncated signed account state")
        }
        guard r.isAtEnd else { throw AccountState.DecodeError(description: "trailing bytes after the signed account state") }
    }
}

/// What a device removed from its account is told, by any member it meets: who removed it and
/// when, signed by the account's root key so that only the account can say so. It names nothing
/// else of the account (not its other devices), and carries no secret.
///
/// Signed bytes: `"HR" 0x01`, then length-prefixed account id, account name, device id, device
/// name, the time (zigzag µs), by id, by name (both empty when unknown), and the reason byte.
/// Encoding: the signed bytes and the signature, each length-prefixed.
public struct RemovalNotice: Sendable, Equatable {
    public enum Reason: UInt8, Sendable, Codable {
        /// `devices remove` on the device holding the account key.
        case removed = 1
        /// The device left (`account leave`).
        case left = 2

        /// In JSON: `"removed"` or `"left"`.
        public init(from decoder: any Decoder) throws {
            let text = try decoder.singleValueContainer().decode(String.self)
            self = text == "left" ? .left : .removed
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.singleValueContainer()
            try c.encode(self == .left ? "left" : "removed")
        }
    }

    public var accountID: DeviceID
    public var accountName: String
    public var deviceID: DeviceID
    public var deviceName: String
    public var removedAt: Timestamp
    public var byID: DeviceID?
    public var byName: String?
    public var reason: Reason
    public var signature: [UInt8]

    public init(
        accountID: DeviceID, accountName: String, deviceID: DeviceID, deviceName: String, removedAt: Timestamp,
        byID: DeviceID?, byName: String?, reason: Reason, signature: [UInt8]
    ) {
        self.accountID = accountID
        self.accountName = accountName
        self.deviceID = deviceID
        self.deviceName = deviceName
        self.removedAt = removedAt
        self.byID = byID
        self.byName = byName
        self.reason = reason
        self.signature = signature
    }

    public var signedBytes: [UInt8] {
        var w = ByteWriter()
        w.raw([0x48, 0x52, 0x01])
        w.lengthPrefixed(Array(accountID.text.utf8))
        w.lengthPrefixed(Array(accountName.utf8))
        w.lengthPrefixed(Array(deviceID.text.utf8))
        w.lengthPrefixed(Array(deviceName.utf8))
        w.zigzag(removedAt.microsecondsSinceEpoch)
        w.lengthPrefixed(Array((byID?.text ?? "").utf8))
        w.lengthPrefixed(Array((byName ?? "").utf8))
        w.byte(reason.rawValue)
        return w.bytes
    }

    public func encoded() -> [UInt8] {
        var w = ByteWriter()
        w.lengthPrefixed(signedBytes)
        w.lengthPrefixed(signature)
        return w.bytes
    }

    public init(decoding bytes: [UInt8]) throws(AccountState.DecodeError) {
        func bad(_ why: String) -> AccountState.DecodeError { AccountState.DecodeError(description: "malformed removal notice: \(why)") }
        var outer = ByteReader(bytes)
        do {
            var r = ByteReader(Array(try outer.lengthPrefixed()))
            signature = Array(try outer.lengthPrefixed())
            guard outer.isAtEnd else { throw bad("trailing bytes") }
            guard Array(try r.take(3)) == [0x48, 0x52, 0x01] else { throw bad("bad magic") }
            func id(_ text: String) throws -> DeviceID {
                guard let id = DeviceID(text) else { throw bad("invalid id") }
                return id
            }
            accountID = try id(try r.utf8String())
            accountName = try r.utf8String()
            deviceID = try id(try r.utf8String())
            deviceName = try r.utf8String()
            removedAt = Timestamp(microsecondsSinceEpoch: try r.zigzag())
            let by = try r.utf8String()
            byID = by.isEmpty ? nil : try id(by)
            let byName = try r.utf8String()
            self.byName = byName.isEmpty ? nil : byName
            guard let reason = Reason(rawValue: try r.byte()) else { throw bad("unknown reason") }
            self.reason = reason
            guard r.isAtEnd else { throw bad("trailing bytes") }
        } catch let e as AccountState.DecodeError {
            throw e
        } catch {
            throw bad("\(error)")
        }
    }
}
