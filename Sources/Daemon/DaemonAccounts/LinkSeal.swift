#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffModel
import HandoffTLS

/// A `handoff:` link (docs/apps.md, "Links"): `handoff:v1.` then, base64url, a nonce and the
/// link's target (`LinkTarget`, JSON) sealed with ChaCha20-Poly1305 under a key the account's
/// devices derive from the account secret. Whoever else sees the link — in a note, a chat —
/// learns neither the account, nor the device, nor what the activity is.
///
/// The secret changes when a device is removed; links made under the previous one still open
/// (as adverts do), links made before that do not, and a removed device reads none made after.
package enum LinkSeal {
    package static let prefix = "handoff:v1."

    static func key(accountSecret: [UInt8]) -> [UInt8] {
        Crypto.hkdf(secret: accountSecret, info: Array("handoff link seal v1".utf8), length: 32)
    }

    static let associatedData = Array("handoff link v1".utf8)

    package static func seal(_ target: LinkTarget, accountSecret: [UInt8]) -> String {
        let plaintext = (try? JSONEncoder().encode(target)).map(Array.init) ?? []
        let nonce = Crypto.randomBytes(Crypto.aeadNonceLength)
        let sealed = Crypto.seal(key: key(accountSecret: accountSecret), nonce: nonce, plaintext: plaintext, associatedData: associatedData)
        return prefix + AdvertSeal.base64url(nonce + sealed)
    }

    /// The target, if `link` is one of the account's (under any of `secrets`); nil for anything
    /// else, said the same way whatever was wrong with it.
    package static func open(_ link: String, accountSecrets secrets: [[UInt8]]) -> LinkTarget? {
        guard link.utf8.count <= OpenLinkRequest.maximumLinkBytes, link.hasPrefix(prefix),
            let bytes = AdvertSeal.fromBase64url(String(link.dropFirst(prefix.count))),
            bytes.count > Crypto.aeadNonceLength + Crypto.aeadTagLength
        else { return nil }
        let nonce = Array(bytes.prefix(Crypto.aeadNonceLength))
        let body = Array(bytes.dropFirst(Crypto.aeadNonceLength))
        for secret in secrets {
            guard let plaintext = Crypto.open(key: key(accountSecret: secret), nonce: nonce, sealed: body, associatedData: associatedData) else { continue }
            return try? JSONDecoder().decode(LinkTarget.self, from: Data(plaintext))
        }
        return nil
    }
}
