import CHandoffOpenSSL

/// Why a TLS connection, or a cryptographic operation, failed. `code` is what callers branch on and
/// tests assert; `message` is for people; `detail` is OpenSSL's own error text, for logs.
public struct TLSError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        /// The peer presented no certificate.
        case noPeerCertificate = "no_peer_certificate"
        /// The peer's certificate signs itself instead of chaining to our account root.
        case selfSigned = "self_signed"
        /// The peer's certificate chains to some other root: another account (or, as a server,
        /// the client offered no key of this account).
        case otherAccount = "other_account"
        /// (Client) the other device does not know the account key we offered: another account's,
        /// or one that has not heard of the last removal yet (`PeerDialer` then tries the previous).
        case accountKeyUnknown = "account_key_unknown"
        /// The peer's device is on the account's revocation list.
        case revoked = "revoked"
        /// The peer's certificate has expired (or is not valid yet).
        case expired = "expired"
        /// The certificate's device id is not its key's, or not the one we dialled.
        case wrongDeviceID = "wrong_device_id"
        /// The peer does not speak TLS 1.3.
        case protocolVersion = "protocol_version"
        /// Bytes that are not TLS.
        case malformed = "malformed"
        /// The connection ended in the middle of the handshake.
        case truncated = "truncated"
        /// The handshake did not finish in time.
        case handshakeTimeout = "handshake_timeout"
        /// The peer refused us (an alert arrived); `message` says what it reported.
        case refusedByPeer = "refused_by_peer"
        /// The peer refuses our address for now (too many handshakes from it, or wrong join
        /// codes); it said so with an access_denied alert before the handshake.
        case tooManyAttempts = "too_many_attempts"
        /// A join attempt whose code the other side did not accept.
        case joinCodeRejected = "join_code_rejected"
        /// The peer did not offer our application protocol.
        case applicationProtocol = "application_protocol"
        /// Key, certificate or signature operations failed.
        case crypto = "crypto"
        /// Any other TLS failure.
        case other = "other"
    }

    public var code: Code
    public var message: String
    public var detail: String?

    public init(_ code: Code, _ message: String, detail: String? = nil) {
        self.code = code
        self.message = message
        self.detail = detail
    }

    public var description: String {
        if let detail, !detail.isEmpty { return "\(message) [\(detail)]" }
        return message
    }

    public static func == (a: TLSError, b: TLSError) -> Bool { a.code == b.code && a.message == b.message }
}

/// OpenSSL's thread-local error queue, drained into text (and reasons, to classify failures).
enum OpenSSLErrors {
    struct Entry {
        var library: Int32
        var reason: Int32
        var text: String
    }

    static func drain() -> [Entry] {
        var entries: [Entry] = []
        while true {
            let e = ERR_get_error()
            if e == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(e, &buffer, buffer.count)
            let text = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            entries.append(Entry(library: ERR_GET_LIB(e), reason: ERR_GET_REASON(e), text: text))
        }
        return entries
    }

    /// The alert the other side sent, when one of the entries reports it.
    static func receivedAlert(_ entries: [Entry]) -> Int32? {
        entries.first { $0.reason >= SSL_AD_REASON_OFFSET && $0.reason < SSL_AD_REASON_OFFSET + 256 }.map { $0.reason - SSL_AD_REASON_OFFSET }
    }

    static func text(_ entries: [Entry]) -> String {
        entries.map(\.text).joined(separator: "; ")
    }

    /// A crypto failure with whatever OpenSSL said about it.
    static func failure(_ message: String) -> TLSError {
        TLSError(.crypto, message, detail: text(drain()))
    }
}
