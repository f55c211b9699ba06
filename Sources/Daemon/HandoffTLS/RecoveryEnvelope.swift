import CHandoffOpenSSL
import HandoffModel

/// The account's root key sealed with a recovery code (docs/security.md, "Losing the key
/// holder"), to travel with the account state, which every member holds: only someone with the
/// code can open it.
///
/// The code becomes a key through scrypt (RFC 7914) — memory-hard, so that each guess costs 128
/// MiB of memory and a fraction of a second; OpenSSL 3.0, which handoff already uses for
/// everything else, has it (`EVP_PBE_scrypt`), where Argon2id would bring a second crypto library
/// (libsodium) for one call. That key seals the 32-byte Ed25519 private key with
/// ChaCha20-Poly1305 (`Crypto.seal`); the account's id, the format's version and the KDF's
/// parameters are its associated data, so a wrong code, another account's envelope, a changed
/// parameter or any flipped byte opens nothing. What opens must also be the account's key: its
/// public key's hash is the account id.
///
/// Encoding: `"HK" 0x01`, then log2(N), r, p (one byte each), the 16-byte salt, the 12-byte nonce,
/// and the 48 sealed bytes (key and tag): 82 bytes.
public struct RecoveryEnvelope: Sendable, Equatable {
    /// scrypt's cost: N = 2^logN, block size r, parallelism p; memory 128·r·N bytes.
    public struct Parameters: Sendable, Equatable {
        public var logN: UInt8
        public var r: UInt8
        public var p: UInt8

        public init(logN: UInt8, r: UInt8, p: UInt8) {
            self.logN = logN
            self.r = r
            self.p = p
        }

        /// N = 2^17, r = 8, p = 1: 128 MiB and about half a second here per guess (OWASP's
        /// scrypt setting for passwords; the code itself carries 128 bits).
        public static let standard = Parameters(logN: 17, r: 8, p: 1)

        /// What an envelope from another device may ask of this one: at most 1 GiB, 16 lanes,
        /// and what RFC 7914 allows (N < 2^(16·r)).
        var isBounded: Bool {
            logN >= 10 && logN <= 20 && r >= 1 && r <= 16 && p >= 1 && p <= 16 && Int(r) << Int(logN) <= 1 << 23 && Int(logN) < 16 * Int(r)
        }
    }

    public static let magic: [UInt8] = [0x48, 0x4B, 0x01]
    static let saltLength = 16
    static let sealedLength = 32 + Crypto.aeadTagLength
    public static let encodedLength = magic.count + 3 + saltLength + Crypto.aeadNonceLength + sealedLength

    public let parameters: Parameters
    let salt: [UInt8]
    let nonce: [UInt8]
    let sealed: [UInt8]

    /// Seals `rootKey`, the key of account `accountID`, with `code`. `salt` and `nonce` are
    /// random unless given (known-answer tests).
    public static func seal(
        _ rootKey: SigningKey, code: RecoveryCode, accountID: DeviceID, parameters: Parameters = .standard, salt: [UInt8]? = nil,
        nonce: [UInt8]? = nil
    ) throws(TLSError) -> RecoveryEnvelope {
        let salt = salt ?? Crypto.randomBytes(saltLength)
        let nonce = nonce ?? Crypto.randomBytes(Crypto.aeadNonceLength)
        precondition(salt.count == saltLength && nonce.count == Crypto.aeadNonceLength && parameters.isBounded)
        let key = try derive(code, salt: salt, parameters: parameters)
        let raw = try rootKey.rawPrivateKey()
        let sealed = Crypto.seal(key: key, nonce: nonce, plaintext: raw, associatedData: associatedData(accountID, parameters))
        return RecoveryEnvelope(parameters: parameters, salt: salt, nonce: nonce, sealed: sealed)
    }

    /// The account's key, if `code` is the one it was sealed with and this is account
    /// `accountID`'s envelope, unchanged; nil otherwise (which of these is not said).
    public func open(code: RecoveryCode, accountID: DeviceID) throws(TLSError) -> SigningKey? {
        let key = try Self.derive(code, salt: salt, parameters: parameters)
        guard let raw = Crypto.open(key: key, nonce: nonce, sealed: sealed, associatedData: Self.associatedData(accountID, parameters)),
            let rootKey = try? SigningKey(rawPrivateKey: raw), rootKey.id == accountID
        else { return nil }
        return rootKey
    }

    public var encoded: [UInt8] {
        Self.magic + [parameters.logN, parameters.r, parameters.p] + salt + nonce + sealed
    }

    public struct Malformed: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    /// Reads one, refusing anything not of this format or asking more of this device than
    /// `Parameters.isBounded` allows (an envelope comes from another device).
    public init(decoding bytes: [UInt8]) throws(Malformed) {
        guard bytes.count == Self.encodedLength, Array(bytes.prefix(Self.magic.count)) == Self.magic else {
            throw Malformed(description: "not a recovery envelope of this version")
        }
        var at = Self.magic.count
        let parameters = Parameters(logN: bytes[at], r: bytes[at + 1], p: bytes[at + 2])
        guard parameters.isBounded else { throw Malformed(description: "a recovery envelope whose key derivation is out of bounds") }
        at += 3
        self.parameters = parameters
        salt = Array(bytes[at..<at + Self.saltLength])
        at += Self.saltLength
        nonce = Array(bytes[at..<at + Crypto.aeadNonceLength])
        at += Crypto.aeadNonceLength
        sealed = Array(bytes[at...])
    }

    init(parameters: Parameters, salt: [UInt8], nonce: [UInt8], sealed: [UInt8]) {
        self.parameters = parameters
        self.salt = salt
        self.nonce = nonce
        self.sealed = sealed
    }

    static func associatedData(_ accountID: DeviceID, _ parameters: Parameters) -> [UInt8] {
        Array("handoff recovery envelope".utf8) + magic + [parameters.logN, parameters.r, parameters.p] + Array(accountID.text.utf8)
    }

    /// scrypt(code, salt) → 32 bytes.
    static func derive(_ code: RecoveryCode, salt: [UInt8], parameters: Parameters) throws(TLSError) -> [UInt8] {
        try Crypto.scrypt(password: code.secret, salt: salt, logN: parameters.logN, r: parameters.r, p: parameters.p, length: 32)
    }
}

extension Crypto {
    /// scrypt (RFC 7914), N = 2^logN, with room for exactly the memory it needs.
    public static func scrypt(password: [UInt8], salt: [UInt8], logN: UInt8, r: UInt8, p: UInt8, length: Int) throws(TLSError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: length)
        let n = UInt64(1) << UInt64(logN)
        // OpenSSL needs 128·r·N for V and 128·r·p for B, plus a little.
        let memory = UInt64(128) * UInt64(r) * (n + UInt64(p) + 2) + 1 << 20
        let pass = password.map { CChar(bitPattern: $0) }
        let ok = pass.withUnsafeBufferPointer { pw in
            salt.withUnsafeBufferPointer { s in
                out.withUnsafeMutableBufferPointer { o in
                    EVP_PBE_scrypt(pw.baseAddress, pw.count, s.baseAddress, s.count, n, UInt64(r), UInt64(p), memory, o.baseAddress, length)
                }
            }
        }
        guard ok == 1 else { throw OpenSSLErrors.failure("scrypt failed") }
        return out
    }
}
