#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffDiscovery
import HandoffModel
import HandoffTLS

/// The keys an account's devices derive from the account secret to recognise each other on the
/// network. Strangers, lacking the secret, see only noise.
package struct AdvertKeys: Sendable, Equatable {
    let seal: [UInt8]
    let tag: [UInt8]

    package init(accountSecret: [UInt8]) {
        seal = Crypto.hkdf(secret: accountSecret, info: Array("handoff advert seal v1".utf8), length: 32)
        tag = Crypto.hkdf(secret: accountSecret, info: Array("handoff advert tag v1".utf8), length: 32)
    }
}

/// The TXT record of our `_handoff._tcp` service (docs/discovery.md):
///
///     v=1                         protocol version
///     t=<salt ‖ HMAC(tagKey, salt)> 16 bytes, base64url: the rotating account tag
///     s0=… s1=…                   nonce ‖ ChaCha20-Poly1305(padded advert) ‖ tag, base64url in chunks
///     j=<join tag>                only while an invite is pending: lets the joiner find us
///
/// The salt is new at every rotation, so the tag — like the random instance name — never stays
/// the same across one. The seal's associated data binds it to the tag it travels with.
package enum AdvertSeal {
    package static let maximumTXTBytes = 1300
    static let chunk = 200
    static let protocolVersion = "1"

    package struct TooLarge: Error {}

    /// Our TXT record. The title is shortened if the record would exceed 1300 bytes (Avahi silently
    /// drops records over ~1400: docs/platform.md).
    package static func txt(_ advert: Advert, keys: AdvertKeys, salt: [UInt8], instanceName: String, joinTag: [UInt8]? = nil) throws(TooLarge) -> TXTRecord {
        var advert = advert
        var titleBudget = ActivityLimits.maximumTitleBytes
        while true {
            let record = build(advert, keys: keys, salt: salt, instanceName: instanceName, joinTag: joinTag)
            if let rdata = record.rdata, rdata.count <= maximumTXTBytes { return record }
            guard let activity = advert.activity, titleBudget > 0 else { throw TooLarge() }
            titleBudget = max(0, titleBudget - 32)
            advert.activity = activity.truncatingTitle(to: titleBudget)
        }
    }

    private static func build(_ advert: Advert, keys: AdvertKeys, salt: [UInt8], instanceName: String, joinTag: [UInt8]?) -> TXTRecord {
        let tag = salt + Array(Crypto.hmacSHA256(key: keys.tag, salt).prefix(8))
        let nonce = Crypto.randomBytes(Crypto.aeadNonceLength)
        let sealed = nonce + Crypto.seal(key: keys.seal, nonce: nonce, plaintext: padded(advert.encoded()), associatedData: associatedData(tag, instanceName))
        let text = Array(base64url(sealed).utf8)
        var entries: [(key: String, value: [UInt8])] = [("v", Array(protocolVersion.utf8)), ("t", Array(base64url(tag).utf8))]
        for (i, start) in stride(from: 0, to: text.count, by: chunk).enumerated() {
            entries.append(("s\(i)", Array(text[start..<min(text.count, start + chunk)])))
        }
        if let joinTag { entries.append(("j", Array(base64url(joinTag).utf8))) }
        return TXTRecord(entries)
    }

    /// The sizes a sealed advert's plaintext is padded to (docs/security.md): its length would
    /// otherwise tell a stranger whether there is an activity and how long its title is. The last
    /// is the most that fits in the TXT record; a longer advert has its title shortened.
    static let paddedSizes = [192, 448, 880]

    /// The advert, a 0x80 byte, then zeros up to the next of `paddedSizes` (ISO/IEC 7816-4
    /// padding). Longer than them all, it is padded beyond what a record holds, so that `txt`
    /// shortens the title until it fits the largest size.
    static func padded(_ plaintext: [UInt8]) -> [UInt8] {
        let size = paddedSizes.first(where: { $0 > plaintext.count }) ?? max(maximumTXTBytes, plaintext.count + 1)
        return plaintext + [0x80] + [UInt8](repeating: 0, count: size - plaintext.count - 1)
    }

    static func unpadded(_ plaintext: [UInt8]) -> [UInt8]? {
        guard let marker = plaintext.lastIndex(where: { $0 != 0 }), plaintext[marker] == 0x80 else { return nil }
        return Array(plaintext[..<marker])
    }

    /// The advert, if the record is one of our account's (any of `keys`); nil for strangers,
    /// forgeries and garbage alike — and nothing is done on their account.
    package static func open(_ txt: TXTRecord, keys: [AdvertKeys], instanceName: String) -> Advert? {
        guard txt.string("v") == protocolVersion, let tagText = txt.string("t"), let tag = fromBase64url(tagText), tag.count == 16 else {
            return nil
        }
        var text = ""
        for i in 0..<8 {
            guard let part = txt.string("s\(i)") else { break }
            text += part
        }
        guard let sealed = fromBase64url(text), sealed.count > Crypto.aeadNonceLength + Crypto.aeadTagLength else { return nil }
        for key in keys where matches(tag, key: key) {
            let nonce = Array(sealed.prefix(Crypto.aeadNonceLength))
            let body = Array(sealed.dropFirst(Crypto.aeadNonceLength))
            guard let plaintext = Crypto.open(key: key.seal, nonce: nonce, sealed: body, associatedData: associatedData(tag, instanceName)),
                let advert = unpadded(plaintext)
            else { return nil }
            return Advert(decoding: advert)
        }
        return nil
    }

    private static func matches(_ tag: [UInt8], key: AdvertKeys) -> Bool {
        Crypto.constantTimeEqual(Array(Crypto.hmacSHA256(key: key.tag, Array(tag.prefix(8))).prefix(8)), Array(tag.suffix(8)))
    }

    /// Whether the record looks like handoff's (version present), whoever it belongs to.
    package static func isHandoff(_ txt: TXTRecord) -> Bool {
        txt.string("v") != nil && txt.string("t") != nil
    }

    /// What a joiner looks for while an invite is pending: derived one-way from the code.
    package static func joinTag(code: InviteCode) -> [UInt8] {
        Array(Crypto.hmacSHA256(key: code.secret, Array("handoff join advert v1".utf8)).prefix(12))
    }

    package static func joinTag(of txt: TXTRecord) -> [UInt8]? {
        txt.string("j").flatMap(fromBase64url)
    }

    /// The seal covers the tag it travels with and the instance name it is published under: a
    /// copy of a member's record under another name does not open, so it costs nothing to follow.
    private static func associatedData(_ tag: [UInt8], _ instanceName: String) -> [UInt8] {
        Array("handoff advert v1".utf8) + tag + [0] + Array(instanceName.utf8)
    }

    static func base64url(_ bytes: [UInt8]) -> String {
        String(
            Data(bytes).base64EncodedString().compactMap { c -> Character? in
                switch c {
                case "+": "-"
                case "/": "_"
                case "=": nil
                default: c
                }
            }
        )
    }

    static func fromBase64url(_ text: String) -> [UInt8]? {
        var s = String(text.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        while s.count % 4 != 0 { s += "=" }
        return Data(base64Encoded: s).map(Array.init)
    }
}
