import CHandoffOpenSSL
import HandoffModel

/// One TLS connection as a pure state machine over two memory BIOs: ciphertext goes in with
/// `receive`, plaintext comes out of `read`; plaintext goes in with `write`, ciphertext comes out of
/// `takeCiphertext`. It never touches a socket, so tests drive two of them back to back and the
/// event-loop handler (`TLSHandler`) drives one against a channel. (The shape of swift-nio-ssl
/// 1.x's `SSLConnection`.)
///
/// Not thread-safe: one connection belongs to one event loop (or one test).
public final class TLSConnection {
    let ssl: OpaquePointer
    private let readBIO: OpaquePointer
    private let writeBIO: OpaquePointer
    let context: TLSContext
    private let expectedPeer: DeviceID?

    /// Set by the verify callback: the first reason a certificate was refused.
    private(set) var verifyFailure: TLSError?
    /// Set by the verify callback once the leaf passed every check.
    private(set) var verifiedPeer: DeviceID?
    /// (Server, member protocol) the verified peer is a device the account removed.
    private var verifiedPeerIsRemoved = false
    /// (Server) the PSK identity a joiner offered, known or not.
    var presentedPSKIdentity: [UInt8]?
    /// (Server) the offered identity matched no invite.
    var presentedUnknownPSK = false
    private var peerSentEOF = false

    public private(set) var peer: TLSPeer?
    public private(set) var alpn: String?
    /// The handshake's failure, once it failed: asking again gives the same answer.
    public private(set) var failure: TLSError?

    public enum HandshakeStatus: Equatable {
        case inProgress
        case complete(TLSPeer)
        case failed(TLSError)
    }

    public enum ReadStatus: Equatable {
        /// `n` plaintext bytes were written into the buffer.
        case data(Int)
        /// Nothing decryptable yet: feed more ciphertext.
        case needMoreData
        /// The peer ended the stream cleanly (close_notify).
        case closed
        case failed(TLSError)
    }

    /// - Parameter expectedPeer: (client) the device id we meant to reach; anyone else is refused.
    public init(context: TLSContext, expectedPeer: DeviceID? = nil) throws(TLSError) {
        guard let ssl = SSL_new(context.ctx) else { throw OpenSSLErrors.failure("cannot create a TLS connection") }
        guard let r = BIO_new(BIO_s_mem()), let w = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw OpenSSLErrors.failure("cannot create memory BIOs")
        }
        handoff_BIO_set_mem_eof_return(r, -1)
        SSL_set_bio(ssl, r, w)  // the SSL owns both BIOs from here
        self.ssl = ssl
        self.readBIO = r
        self.writeBIO = w
        self.context = context
        self.expectedPeer = expectedPeer
        switch context.role {
        case .client: SSL_set_connect_state(ssl)
        case .server: SSL_set_accept_state(ssl)
        }
        // Unretained: the SSL lives exactly as long as this object, so every callback finds it alive.
        SSL_set_ex_data(ssl, TLSContext.connectionIndex, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        SSL_free(ssl)
    }

    static func from(ssl: OpaquePointer) -> TLSConnection? {
        guard let raw = SSL_get_ex_data(ssl, TLSContext.connectionIndex) else { return nil }
        return Unmanaged<TLSConnection>.fromOpaque(raw).takeUnretainedValue()
    }

    // MARK: Ciphertext in and out

    /// Ciphertext from the network.
    public func receive(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        _ = BIO_write(readBIO, bytes.baseAddress, Int32(bytes.count))
    }

    public func receive(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { receive($0) }
    }

    /// The network said end-of-file: reads past what was received now fail instead of waiting.
    public func receiveEOF() {
        peerSentEOF = true
        handoff_BIO_set_mem_eof_return(readBIO, 0)
    }

    public var pendingCiphertext: Int { Int(BIO_ctrl_pending(writeBIO)) }

    /// Moves up to `buffer.count` bytes of ciphertext to be sent into `buffer`; returns how many.
    public func takeCiphertext(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard !buffer.isEmpty else { return 0 }
        let n = BIO_read(writeBIO, buffer.baseAddress, Int32(buffer.count))
        return max(0, Int(n))
    }

    public func takeCiphertext() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: pendingCiphertext)
        let n = out.withUnsafeMutableBytes { takeCiphertext(into: $0) }
        return Array(out.prefix(n))
    }

    // MARK: Handshake

    public func handshake() -> HandshakeStatus {
        if let peer { return .complete(peer) }
        if let failure { return .failed(failure) }
        let rc = SSL_do_handshake(ssl)
        if rc == 1 { return finishHandshake() }
        let error = SSL_get_error(ssl, rc)
        if error == SSL_ERROR_WANT_READ && !peerSentEOF { return .inProgress }
        if error == SSL_ERROR_WANT_WRITE { return .inProgress }
        let classified = classifyFailure(sslError: error)
        failure = classified
        return .failed(classified)
    }

    /// The checks that can only be made once the handshake is over: how the peer authenticated
    /// must match what it asked to do.
    private func finishHandshake() -> HandshakeStatus {
        var protocolName: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &protocolName, &length)
        alpn = protocolName.map { String(decoding: UnsafeBufferPointer(start: $0, count: Int(length)), as: UTF8.self) }
        let usedPSK = SSL_session_reused(ssl) == 1

        let result: TLSPeer
        switch (context.role, usedPSK) {
        case (.server, true):
            guard alpn == HandoffALPN.join, let identity = presentedPSKIdentity else {
                return fail(TLSError(.applicationProtocol, "a pre-shared key was used outside a join"))
            }
            result = .joiner(pskIdentity: identity)
        case (.client, true):
            guard alpn == HandoffALPN.join, context.joinPSK != nil else {
                return fail(TLSError(.applicationProtocol, "unexpected pre-shared key"))
            }
            result = .inviter
        case (.client, false) where context.joinPSK != nil:
            return fail(TLSError(.joinCodeRejected, "the other device did not accept the join code"))
        case (_, false):
            guard let alpn, HandoffALPN.certified.contains(alpn) else {
                return fail(TLSError(.applicationProtocol, "the peer does not speak \(HandoffALPN.member)"))
            }
            guard let verifiedPeer, SSL_get_verify_result(ssl) == Int(X509_V_OK) else {
                return fail(verifyFailure ?? TLSError(.noPeerCertificate, "the peer presented no certificate"))
            }
            if verifiedPeerIsRemoved {
                // Only to be told so (PeerListener): nothing else is read or written.
                guard context.role == .server, alpn == HandoffALPN.member else {
                    return fail(TLSError(.revoked, "device \(verifiedPeer.short)… has been removed from the account"))
                }
                result = .removedMember(verifiedPeer)
            } else {
                result = .member(verifiedPeer)
            }
        }
        peer = result
        return .complete(result)
    }

    private func fail(_ error: TLSError) -> HandshakeStatus {
        // Tell the peer, in TLS terms, before we hang up.
        SSL_shutdown(ssl)
        failure = error
        return .failed(error)
    }

    /// Called by OpenSSL for each certificate of the peer's chain (root last, leaf at depth 0).
    func verify(preverifyOK: Bool, store: OpaquePointer) -> Bool {
        guard verifyFailure == nil else { return false }
        if context.joinPSK != nil {
            // A joiner cannot judge certificates yet: only the code authenticates the inviter.
            verifyFailure = TLSError(.joinCodeRejected, "the other device did not accept the join code")
            return false
        }
        guard let trust = context.trust else { return false }
        let depth = X509_STORE_CTX_get_error_depth(store)
        if !preverifyOK {
            let code = X509_STORE_CTX_get_error(store)
            let text = String(cString: X509_verify_cert_error_string(Int(code)))
            switch code {
            case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
                verifyFailure = TLSError(.selfSigned, "the peer's certificate is self-signed, not issued by this account", detail: text)
            case X509_V_ERR_CERT_HAS_EXPIRED, X509_V_ERR_CERT_NOT_YET_VALID:
                verifyFailure = TLSError(.expired, "the peer's certificate is expired or not yet valid", detail: text)
            default:
                verifyFailure = TLSError(.otherAccount, "the peer's certificate was not issued by this account", detail: text)
            }
            return false
        }
        guard depth == 0, let leaf = X509_STORE_CTX_get_current_cert(store) else { return true }

        X509_up_ref(leaf)  // the Certificate frees this reference; the store keeps its own
        let certificate = Certificate(owning: leaf)
        guard X509_check_ca(leaf) == 0 else {
            verifyFailure = TLSError(.otherAccount, "the peer presented a CA certificate instead of a device certificate")
            X509_STORE_CTX_set_error(store, X509_V_ERR_INVALID_CA)
            return false
        }
        guard let id = certificate.keyID, certificate.commonName == id.text else {
            verifyFailure = TLSError(.wrongDeviceID, "the peer's certificate names a device id that is not its key's")
            X509_STORE_CTX_set_error(store, X509_V_ERR_APPLICATION_VERIFICATION)
            return false
        }
        if let expectedPeer, id != expectedPeer {
            verifyFailure = TLSError(.wrongDeviceID, "the peer is device \(id.short)…, not the \(expectedPeer.short)… it advertised")
            X509_STORE_CTX_set_error(store, X509_V_ERR_APPLICATION_VERIFICATION)
            return false
        }
        if trust.isRevoked(id) {
            // A server lets a removed device of its account finish the member handshake, and
            // only so that it can be told it was removed (`TLSPeer.removedMember`); the ALPN is
            // checked once the handshake is done. Everyone else refuses it here.
            guard context.role == .server else {
                verifyFailure = TLSError(.revoked, "device \(id.short)… has been removed from the account")
                X509_STORE_CTX_set_error(store, X509_V_ERR_CERT_REVOKED)
                return false
            }
            verifiedPeerIsRemoved = true
        }
        verifiedPeer = id
        return true
    }

    /// Turns OpenSSL's reasons into ours, preferring what our own verification recorded.
    private func classifyFailure(sslError: Int32) -> TLSError {
        let entries = OpenSSLErrors.drain()
        let detail = OpenSSLErrors.text(entries)
        if let verifyFailure { return TLSError(verifyFailure.code, verifyFailure.message, detail: detail) }
        if presentedUnknownPSK {
            return TLSError(.joinCodeRejected, "a device offered a join code that no invite here matches", detail: detail)
        }
        if sslError == SSL_ERROR_SYSCALL || sslError == SSL_ERROR_ZERO_RETURN || (peerSentEOF && entries.isEmpty) {
            return TLSError(.truncated, "the connection ended during the TLS handshake", detail: detail)
        }
        for e in entries {
            switch e.reason {
            case SSL_R_UNSUPPORTED_PROTOCOL, SSL_AD_REASON_OFFSET + SSL_AD_PROTOCOL_VERSION:
                return TLSError(.protocolVersion, "the peer does not speak TLS 1.3", detail: detail)
            case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
                return TLSError(.noPeerCertificate, "the peer presented no certificate", detail: detail)
            case SSL_R_UNEXPECTED_EOF_WHILE_READING:
                return TLSError(.truncated, "the connection ended during the TLS handshake", detail: detail)
            case SSL_R_NO_APPLICATION_PROTOCOL, SSL_AD_REASON_OFFSET + SSL_AD_NO_APPLICATION_PROTOCOL:
                return TLSError(.applicationProtocol, "the peer does not speak \(HandoffALPN.member)", detail: detail)
            case (SSL_AD_REASON_OFFSET)..<(SSL_AD_REASON_OFFSET + 256):
                return Self.alertError(e.reason - SSL_AD_REASON_OFFSET, detail: detail)
            default:
                continue
            }
        }
        if entries.contains(where: { $0.library == ERR_LIB_SSL }) {
            return TLSError(.malformed, "the peer sent something that is not a TLS 1.3 handshake", detail: detail)
        }
        return TLSError(.other, "the TLS handshake failed", detail: detail)
    }

    // MARK: Application data

    /// Decrypts into `buffer`.
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadStatus {
        var count = 0
        let rc = SSL_read_ex(ssl, buffer.baseAddress, buffer.count, &count)
        if rc == 1 { return .data(count) }
        switch SSL_get_error(ssl, rc) {
        case SSL_ERROR_WANT_READ where !peerSentEOF, SSL_ERROR_WANT_WRITE:
            return .needMoreData
        case SSL_ERROR_ZERO_RETURN:
            return .closed
        case SSL_ERROR_WANT_READ, SSL_ERROR_SYSCALL:
            return .failed(TLSError(.truncated, "the connection ended without a TLS close_notify", detail: OpenSSLErrors.text(OpenSSLErrors.drain())))
        case SSL_ERROR_SSL where peerSentEOF:
            // OpenSSL 3 reports a TCP end without close_notify as "unexpected eof while reading".
            return .failed(TLSError(.truncated, "the connection ended without a TLS close_notify", detail: OpenSSLErrors.text(OpenSSLErrors.drain())))
        default:
            let entries = OpenSSLErrors.drain()
            if let alert = entries.first(where: { $0.reason >= SSL_AD_REASON_OFFSET && $0.reason < SSL_AD_REASON_OFFSET + 256 }) {
                return .failed(Self.alertError(alert.reason - SSL_AD_REASON_OFFSET, detail: OpenSSLErrors.text(entries)))
            }
            return .failed(TLSError(.malformed, "the TLS stream is corrupt", detail: OpenSSLErrors.text(entries)))
        }
    }

    /// What an alert from the other side means. access_denied before any handshake is handoffd
    /// refusing our address for now (PeerListener's RefusalAlert).
    static func alertError(_ alert: Int32, detail: String?) -> TLSError {
        if alert == SSL_AD_ACCESS_DENIED {
            return TLSError(.tooManyAttempts, "the other device refuses this address for now: too many attempts from it", detail: detail)
        }
        let text = String(cString: SSL_alert_desc_string_long(alert))
        return TLSError(.refusedByPeer, "the other device refused the connection (\(text))", detail: detail)
    }

    public func read() -> (ReadStatus, [UInt8]) {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        let status = buffer.withUnsafeMutableBytes { read(into: $0) }
        if case .data(let n) = status { return (status, Array(buffer.prefix(n))) }
        return (status, [])
    }

    /// Encrypts all of `bytes` (memory BIOs never refuse), leaving the ciphertext to be taken.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(TLSError) {
        if let failure = encrypt(bytes) { throw failure }
    }

    public func write(_ bytes: [UInt8]) throws(TLSError) {
        if let failure = bytes.withUnsafeBytes({ encrypt($0) }) { throw failure }
    }

    private func encrypt(_ bytes: UnsafeRawBufferPointer) -> TLSError? {
        var offset = 0
        while offset < bytes.count {
            var written = 0
            let rc = SSL_write_ex(ssl, bytes.baseAddress! + offset, bytes.count - offset, &written)
            guard rc == 1 else {
                return TLSError(.other, "cannot encrypt", detail: OpenSSLErrors.text(OpenSSLErrors.drain()))
            }
            offset += written
        }
        return nil
    }

    /// Queues our close_notify.
    public func shutdown() {
        if SSL_shutdown(ssl) < 0 { _ = OpenSSLErrors.drain() }
    }
}
