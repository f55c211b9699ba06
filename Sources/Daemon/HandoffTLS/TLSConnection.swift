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

    /// (Client) the PSK this connection offers; its identity is handed to OpenSSL by pointer and
    /// must outlive every handshake callback (docs/platform.md), so it lives as long as the connection.
    private(set) var pskOffer: (identity: UnsafeMutableBufferPointer<UInt8>, key: [UInt8])?
    /// (Client) the offer is keyed from what our last session with `expectedPeer` derived.
    private let offeredResumption: ResumptionBook.Proof?
    /// (Server) what the ClientHello offered and we know: a join code's or the account's key, or
    /// a resumption secret (`resumed`: the device that holds it).
    private var accepted: (identity: [UInt8], key: [UInt8], isJoin: Bool, resumed: ResumptionBook.Proof?)?
    /// The first reason we refused the peer during the TLS handshake (its ClientHello, or a
    /// certificate a server should never show).
    private var refusal: TLSError?
    private var peerSentEOF = false
    private var phase = Phase.tls

    private enum Phase {
        /// OpenSSL's handshake.
        case tls
        /// Members: exchanging `DeviceProof` records; `received` holds what arrived so far.
        case proving(received: [UInt8])
        case done
    }

    public private(set) var peer: TLSPeer?
    public private(set) var alpn: String?
    /// The devices resumed: the handshake itself proved both, without device proofs.
    public private(set) var resumed = false
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

    /// - Parameters:
    ///   - expectedPeer: (client) the device id we meant to reach; anyone else is refused.
    ///   - secretGeneration: (member client) which account secret keys the offer: 0, the current
    ///     one; 1, the previous one (for a device that has not heard of the last removal).
    ///   - addressee: (member client) whom the hello is for: the narrowest we know (`HelloAddressee`).
    ///   - resume: (member client) offer the key our last session with `expectedPeer` derived, if
    ///     there is one (`ResumptionBook`), instead of the account's.
    public init(
        context: TLSContext, expectedPeer: DeviceID? = nil, secretGeneration: Int = 0, addressee: HelloAddressee = .anyone, resume: Bool = false
    ) throws(TLSError) {
        var key: [UInt8]?
        var identity: [UInt8] = []
        var resuming: ResumptionBook.Proof?
        if context.role == .client, context.offersPSK {
            if let join = context.joinPSK {
                (identity, key) = (join.identity, join.key)
            } else if resume, let expectedPeer, let salt = context.identity?.helloSalt(),
                let resumption = context.trust?.resumptionOffer(for: expectedPeer, to: addressee, salt: salt)
            {
                (identity, key, resuming) = (resumption.offer.identity, resumption.offer.key, resumption.proof)
            } else if let salt = context.identity?.helloSalt(), let offer = context.trust?.offer(generation: secretGeneration, to: addressee, salt: salt) {
                // Its salt is marked as this device's: never answered here, reflected or replayed.
                (identity, key) = (offer.identity, offer.key)
            } else {
                throw TLSError(.crypto, "no account secret of generation \(secretGeneration)")
            }
        }
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
        self.offeredResumption = resuming
        if let key {
            let storage = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: identity.count)
            _ = storage.initialize(from: identity)
            pskOffer = (storage, key)
        }
        switch context.role {
        case .client: SSL_set_connect_state(ssl)
        case .server: SSL_set_accept_state(ssl)
        }
        // Unretained: the SSL lives exactly as long as this object, so every callback finds it alive.
        SSL_set_ex_data(ssl, TLSContext.connectionIndex, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        SSL_free(ssl)
        pskOffer?.identity.deallocate()
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
        let status = step()
        // The other device no longer holds the key (it restarted): the next dial proves in full.
        // (Any other failure — a reset, a deadline — says nothing about the key.)
        if case .failed(let error) = status, error.code == .accountKeyUnknown, let device = offeredResumption?.device {
            context.trust?.forgetResumption(with: device)
        }
        return status
    }

    private func step() -> HandshakeStatus {
        if let peer { return .complete(peer) }
        if let failure { return .failed(failure) }
        switch phase {
        case .tls:
            let rc = SSL_do_handshake(ssl)
            if rc == 1 { return finishTLS() }
            let error = SSL_get_error(ssl, rc)
            if error == SSL_ERROR_WANT_READ && !peerSentEOF { return .inProgress }
            if error == SSL_ERROR_WANT_WRITE { return .inProgress }
            let classified = classifyFailure(sslError: error)
            failure = classified
            return .failed(classified)
        case .proving(let received):
            return prove(received: received)
        case .done:
            return .inProgress
        }
    }

    /// OpenSSL's part is done: how the peer authenticated must match what it asked to do; a join is
    /// then complete, a member connection goes on to the device proofs.
    private func finishTLS() -> HandshakeStatus {
        var protocolName: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &protocolName, &length)
        alpn = protocolName.map { String(decoding: UnsafeBufferPointer(start: $0, count: Int(length)), as: UTF8.self) }
        guard SSL_session_reused(ssl) == 1 else {
            return fail(TLSError(.otherAccount, "the other device did not use this account's key"))
        }
        let isJoin: Bool
        switch context.role {
        case .server:
            guard let accepted else { return fail(TLSError(.other, "a pre-shared key nobody looked up")) }
            isJoin = accepted.isJoin
        case .client:
            isJoin = context.joinPSK != nil
        }
        guard isJoin == (alpn == HandoffALPN.join), let alpn, HandoffALPN.all.contains(alpn) else {
            return fail(TLSError(.applicationProtocol, isJoin ? "a join code was used outside a join" : "the peer does not speak \(HandoffALPN.member)"))
        }
        if isJoin {
            let result: TLSPeer = context.role == .server ? .joiner(pskIdentity: accepted?.identity ?? []) : .inviter
            return complete(result)
        }
        if let proof = context.role == .server ? accepted?.resumed : offeredResumption {
            // Only that device and this one hold the key the handshake just proved.
            guard context.trust?.isRevoked(proof.device) == false else {
                return fail(TLSError(.revoked, "device \(proof.device.short)… has been removed from the account"))
            }
            resumed = true
            return completeMember(proof)
        }
        if context.role == .client, let failed = sendProof(role: .client) { return fail(failed) }
        phase = .proving(received: [])
        return prove(received: [])
    }

    /// Reads the other side's record, exactly — never past it, so that application data sent
    /// right after stays for `read`.
    private func prove(received start: [UInt8]) -> HandshakeStatus {
        var received = start
        while true {
            let wanted: Int
            if received.count < DeviceProof.headerLength {
                wanted = DeviceProof.headerLength - received.count
            } else {
                guard let (_, bodyLength) = DeviceProof.bodyLength(header: Array(received.prefix(DeviceProof.headerLength))) else {
                    return refuse(TLSError(.malformed, "the peer sent something other than a device proof"))
                }
                let total = DeviceProof.headerLength + bodyLength
                if received.count == total { break }
                wanted = total - received.count
            }
            var chunk = [UInt8](repeating: 0, count: wanted)
            var count = 0
            let rc = chunk.withUnsafeMutableBytes { SSL_read_ex(ssl, $0.baseAddress, wanted, &count) }
            if rc == 1 {
                received += chunk.prefix(count)
                continue
            }
            switch SSL_get_error(ssl, rc) {
            case SSL_ERROR_WANT_READ where !peerSentEOF, SSL_ERROR_WANT_WRITE:
                phase = .proving(received: received)
                return .inProgress
            default:
                // The peer hung up, or sent an alert, before its proof was whole.
                let entries = OpenSSLErrors.drain()
                let detail = OpenSSLErrors.text(entries)
                let ended =
                    OpenSSLErrors.receivedAlert(entries).map { alertError($0, detail: detail) }
                    ?? TLSError(.truncated, "the connection ended before the other device proved which it is", detail: detail)
                phase = .done
                failure = ended
                return .failed(ended)
            }
        }
        let (kind, _) = DeviceProof.bodyLength(header: Array(received.prefix(DeviceProof.headerLength)))!
        let body = Array(received.dropFirst(DeviceProof.headerLength))
        phase = .done
        if kind == .refusal {
            return fail(context.role == .client ? DeviceProof.refusalError(body) : TLSError(.malformed, "the client refused before proving anything"))
        }
        return judgeProof(body)
    }

    private func judgeProof(_ body: [UInt8]) -> HandshakeStatus {
        guard let trust = context.trust, let (der, signature, links) = DeviceProof.parseProof(body) else {
            return refuse(TLSError(.malformed, "the peer's device proof is malformed"))
        }
        let certificate: Certificate
        let id: DeviceID
        let removed: Bool
        switch DeviceProof.judge(der: der, links: links, trust: trust, expectedPeer: expectedPeer) {
        case .success(let judged): (certificate, id, removed) = judged
        case .failure(let error): return refuse(error)
        }
        let theirRole: DeviceProof.Role = context.role == .server ? .client : .server
        guard let exporter = exporter(label: DeviceProof.exporterLabel), let key = certificate.publicKey,
            SigningKey.verify(signature: signature, message: DeviceProof.message(role: theirRole, exporter: exporter), publicKey: key)
        else {
            return refuse(TLSError(.wrongDeviceID, "the peer's device proof is not signed by its certificate's key"))
        }
        if removed {
            // A server lets a removed device of its account through on the member protocol, only
            // so that it can be told it was removed (PeerListener); nothing else is read or written.
            guard context.role == .server, alpn == HandoffALPN.member else {
                return refuse(TLSError(.revoked, "device \(id.short)… has been removed from the account"))
            }
        }
        if context.role == .server, let failed = sendProof(role: .server) { return fail(failed) }
        return removed ? complete(.removedMember(id)) : completeMember(ResumptionBook.Proof(device: id, provenAt: .now))
    }

    /// A member is proven, by its device proof (now) or by resuming (carrying when it last
    /// proved itself): what this connection derives keys the next one between the two
    /// (`ResumptionBook`).
    private func completeMember(_ proof: ResumptionBook.Proof) -> HandshakeStatus {
        if let me = context.identity?.id, let secret = exporter(label: ResumptionBook.exporterLabel) {
            context.trust?.remember(secret, me: me, role: context.role, proof: proof)
        }
        return complete(.member(proof.device))
    }

    private func sendProof(role: DeviceProof.Role) -> TLSError? {
        guard let identity = context.identity, let exporter = exporter(label: DeviceProof.exporterLabel) else {
            return TLSError(.crypto, "cannot make a device proof")
        }
        do throws(TLSError) {
            let record = try DeviceProof.proof(identity: identity, links: context.trust?.chain.linkDERs ?? [], role: role, exporter: exporter).bytes
            return record.withUnsafeBytes { encrypt($0) }
        } catch {
            return error
        }
    }

    /// 32 bytes of this connection's keying material (RFC 8446 §7.5), for the device proofs and
    /// the next connection's resumption key.
    private func exporter(label text: String) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: 32)
        let label = Array(text.utf8)
        let ok = label.withUnsafeBufferPointer { l in
            SSL_export_keying_material(ssl, &out, out.count, l.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }, l.count, nil, 0, 0)
        }
        return ok == 1 ? out : nil
    }

    private func complete(_ result: TLSPeer) -> HandshakeStatus {
        phase = .done
        peer = result
        return .complete(result)
    }

    /// A server tells a member why it refused it (the client already proved the account key);
    /// a client just hangs up.
    private func refuse(_ error: TLSError) -> HandshakeStatus {
        if context.role == .server { _ = DeviceProof.refusal(error.code).bytes.withUnsafeBytes { encrypt($0) } }
        return fail(error)
    }

    private func fail(_ error: TLSError) -> HandshakeStatus {
        // Tell the peer, in TLS terms, before we hang up.
        SSL_shutdown(ssl)
        _ = OpenSSLErrors.drain()
        phase = .done
        failure = error
        return .failed(error)
    }

    // MARK: Callbacks' part

    /// (Server) what the ClientHello offered: a join code's PSK, or one made from one of our
    /// account secrets. Anything else is refused before OpenSSL answers.
    func accept(_ decision: ClientHelloCheck.Decision) -> Result<Void, HelloRefusal> {
        if accepted != nil { return .success(()) }  // the second ClientHello after a retry request
        switch decision {
        case .refused(let code, let alert, let message):
            refusal = TLSError(code, message)
            return .failure(HelloRefusal(alert: alert))
        case .offered(let identity, let random):
            if identity.count == JoinPSK.identityLength, let key = context.joinKey(forIdentity: identity, hello: random) {
                accepted = (identity, key, true, nil)
            } else if identity.count == AccountKeys.identityLength, let member = context.memberKey(forIdentity: identity) {
                accepted = (identity, member.key, false, member.resumed)
            } else {
                // Answered like a known identity whose key is wrong: a random key fails the
                // binder (decrypt_error), so whoever replays a captured identity with a made-up
                // binder cannot tell this account's devices from anyone else's — nor, replaying a
                // whole hello, which device it was for (`MemberHelloGuard`).
                refusal =
                    identity.count == JoinPSK.identityLength
                    ? TLSError(.joinCodeRejected, "a device offered a join code that no invite here matches (or replayed a hello)")
                    : TLSError(.otherAccount, "the peer does not hold this account's key (another account, or a device that missed a removal)")
                accepted = (identity, Crypto.randomBytes(32), identity.count == JoinPSK.identityLength, nil)
            }
            return .success(())
        }
    }

    struct HelloRefusal: Error {
        var alert: Int32
    }

    func acceptedKey(forIdentity identity: [UInt8]) -> [UInt8]? {
        guard let accepted, accepted.identity == identity else { return nil }
        return accepted.key
    }

    /// (Client) our servers never show a certificate: one that does is not a device of ours.
    func refuseServerCertificate() {
        guard refusal == nil else { return }
        refusal =
            context.joinPSK != nil
            ? TLSError(.joinCodeRejected, "the other device did not accept the join code")
            : TLSError(.otherAccount, "the other device showed a certificate instead of using this account's key")
    }

    /// Turns OpenSSL's reasons into ours, preferring what our own verification recorded.
    private func classifyFailure(sslError: Int32) -> TLSError {
        let entries = OpenSSLErrors.drain()
        let detail = OpenSSLErrors.text(entries)
        if let refusal { return TLSError(refusal.code, refusal.message, detail: detail) }
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
                return alertError(e.reason - SSL_AD_REASON_OFFSET, detail: detail)
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
            if let alert = OpenSSLErrors.receivedAlert(entries) {
                return .failed(alertError(alert, detail: OpenSSLErrors.text(entries)))
            }
            return .failed(TLSError(.malformed, "the TLS stream is corrupt", detail: OpenSSLErrors.text(entries)))
        }
    }

    /// What an alert from the other side means. access_denied before any handshake is handoffd
    /// refusing our address for now (PeerListener's RefusalAlert).
    func alertError(_ alert: Int32, detail: String?) -> TLSError {
        if alert == SSL_AD_ACCESS_DENIED {
            return TLSError(.tooManyAttempts, "the other device refuses this address for now: too many attempts from it", detail: detail)
        }
        // A server answers an identity none of its secrets made exactly as a known one with a
        // wrong key: the binder fails (see `accept`), which OpenSSL 3.0 reports with
        // illegal_parameter or decrypt_error. Before the handshake is done, any of these means the
        // key we offered is not one it holds.
        if peer == nil, [SSL_AD_UNKNOWN_PSK_IDENTITY, SSL_AD_DECRYPT_ERROR, SSL_AD_ILLEGAL_PARAMETER].contains(alert) {
            if context.joinPSK != nil { return TLSError(.joinCodeRejected, "the other device did not accept the join code", detail: detail) }
            return TLSError(.accountKeyUnknown, "it does not hold this account's key", detail: detail)
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
