/// Who belongs to an account: its devices and the devices it revoked. Signed by the account's root
/// key and versioned: devices exchange it whenever they talk and keep the highest valid version,
/// so a revocation reaches every device that meets any device that knows it (SPEC §3).
///
/// Encoding (version 1), like the activity encoding: `"HA" 0x01` then fields
/// `number:varint length:varint payload` in ascending order, unknown numbers skipped.
///   1 accountID (UTF-8)   2 name (UTF-8)   3 version (varint)   4 issuedAt (zigzag µs)
///   5 device (repeated):  [id, name, addedAt] as length-prefixed id, length-prefixed name, zigzag
///   6 revoked (repeated): [id, name, revokedAt], same layout
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

        public init(id: DeviceID, name: String, revokedAt: Timestamp) {
            self.id = id
            self.name = name
            self.revokedAt = revokedAt
        }
    }

    public var accountID: DeviceID
    public var name: String
    public var version: UInt64
    public var issuedAt: Timestamp
    public private(set) var devices: [Device]
    public private(set) var revoked: [Revocation]

    public init(accountID: DeviceID, name: String, version: UInt64, issuedAt: Timestamp, devices: [Device], revoked: [Revocation]) {
        self.accountID = accountID
        self.name = name
        self.version = version
        self.issuedAt = issuedAt
        self.devices = devices.sorted { $0.id < $1.id }
        self.revoked = revoked.sorted { $0.id < $1.id }
    }

    public func isRevoked(_ id: DeviceID) -> Bool { revoked.contains { $0.id == id } }
    public func device(_ id: DeviceID) -> Device? { devices.first { $0.id == id } }

    /// The next version, with `device` added.
    public func adding(_ device: Device, at now: Timestamp) -> AccountState {
        var next = self
        next.devices.removeAll { $0.id == device.id }
        next.devices.append(device)
        next.devices.sort { $0.id < $1.id }
        next.version += 1
        next.issuedAt = now
        return next
    }

    /// The next version, with `id` moved from the devices to the revocations. Revocations are never
    /// undone: a device that was removed stays refused.
    public func revoking(_ id: DeviceID, at now: Timestamp) -> AccountState {
        var next = self
        let name = devices.first { $0.id == id }?.name ?? ""
        next.devices.removeAll { $0.id == id }
        if !next.revoked.contains(where: { $0.id == id }) {
            next.revoked.append(Revocation(id: id, name: name, revokedAt: now))
            next.revoked.sort { $0.id < $1.id }
        }
        next.version += 1
        next.issuedAt = now
        return next
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
                case 3: version = try p.varint()
                case 4: issuedAt = Timestamp(microsecondsSinceEpoch: try p.zigzag())
                case 5: devices.append(Device(id: try id(), name: try p.utf8String(), addedAt: Timestamp(microsecondsSinceEpoch: try p.zigzag())))
                case 6:
                    revoked.append(Revocation(id: try id(), name: try p.utf8String(), revokedAt: Timestamp(microsecondsSinceEpoch: try p.zigzag())))
                default: break
                }
            }
        } catch let e as DecodeError {
            throw e
        } catch {
            throw bad("\(error)")
        }
        guard let accountID, let name, let version, let issuedAt else { throw bad("a required field is missing") }
        self.init(accountID: accountID, name: name, version: version, issuedAt: issuedAt, devices: devices, revoked: revoked)
    }
}

/// An account state and the root key's signature over its encoding. Checking the signature needs
/// cryptography, which lives in HandoffTLS; this type only carries and frames the bytes.
///
/// Encoding: `"HS" 0x01`, length-prefixed state encoding, length-prefixed signature.
public struct SignedAccountState: Sendable, Equatable {
    public var stateBytes: [UInt8]
    public var signature: [UInt8]

    public init(stateBytes: [UInt8], signature: [UInt8]) {
        self.stateBytes = stateBytes
        self.signature = signature
    }

    public func encoded() -> [UInt8] {
        var w = ByteWriter()
        w.raw([0x48, 0x53, 0x01])
        w.lengthPrefixed(stateBytes)
        w.lengthPrefixed(signature)
        return w.bytes
    }

    public init(decoding bytes: [UInt8]) throws(AccountState.DecodeError) {
        guard bytes.count >= 3, bytes[0] == 0x48, bytes[1] == 0x53, bytes[2] == 0x01 else {
            throw AccountState.DecodeError(description: "not a signed account state")
        }
        var r = ByteReader(bytes)
        do {
            _ = try r.take(3)
            stateBytes = Array(try r.lengthPrefixed())
            signature = Array(try r.lengthPrefixed())
        } catch {
            throw AccountState.DecodeError(description: "truncated signed account state")
        }
        guard r.isAtEnd else { throw AccountState.DecodeError(description: "trailing bytes after the signed account state") }
    }
}
