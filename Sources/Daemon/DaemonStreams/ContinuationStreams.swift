#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DaemonAccounts
import DaemonCore
import DaemonDiscovery
import DaemonSessions
import HandoffAPI
import HandoffModel
import HandoffPeer
import HandoffTLS
import HandoffTLSChannel
import HandoffSystem
import Logging
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// Continuation streams (docs/local-api.md, "Continuation streams"): a byte stream between the resuming app and the originating
/// app, each stream on a TLS connection of its own between the two daemons.
///
/// - Resuming: an app (or `handoffctl continue --stream-…`) asks with its continuation id; we dial
///   the device the activity came from and ask for a stream of that activity.
/// - Originating: a device that continued the current activity asks; the attached app that serves
///   streams is told, and takes the stream through the local API within `Deadlines.streamTake`
///   (the desktop agent, a paste's, within `Deadlines.clipboardTake`).
///
/// Either way the local API connection becomes the stream's byte pipe (an HTTP Upgrade), or the app
/// hands over a file on the file socket; a `StreamSplice` joins that to the connection to the
/// other device.
///
/// The two sides are `ResumingStreams` and `OriginatingStreams`; both hand the local API a
/// `Prepared` stream.
package enum ContinuationStreams {
    /// How long a stream connection may take to send its one request frame.
    static let requestDeadline: TimeAmount = .seconds(15)

    /// A stream about to become an app's byte pipe.
    package struct Prepared: Sendable {
        package let record: StreamRecord
        let connection: StreamConnection
        let peerName: String
        /// (Originator) `streamAccepted` is still to be sent.
        let mustAccept: Bool
        /// Exactly this many bytes from the other device: a paste's or a document's announced
        /// size. More, or an orderly end before it, fails the stream.
        package var announcedLength: Int64?

        init(record: StreamRecord, connection: StreamConnection, peerName: String, mustAccept: Bool) {
            self.record = record
            self.connection = connection
            self.peerName = peerName
            self.mustAccept = mustAccept
        }

        /// Joins `local` to the other device: the upgraded local-API connection itself, or the
        /// file handed over on the file socket (`local` is then that connection).
        package func splice(to local: any Channel, file: StreamFile? = nil, logger: Logger) {
            let splice = StreamSplice(
                record: record, local: local, localEnd: file.map { .file($0) } ?? .pipe, peer: connection.channel, peerName: peerName,
                announcedLength: announcedLength, logger: logger
            )
            // A file sent has a known length: both devices can show how far along it is.
            let length = file.flatMap { $0.role == .send ? $0.size : nil }
            if let length { record.expect(length) }
            let (connection, accept, id) = (self.connection, mustAccept, record.id)
            splice.start {
                if accept { connection.answer(.streamAccepted(streamID: id, length: length)) }
                connection.release()
            }
        }

        /// Joins the other device to a file handoffd itself sends or receives (a document: docs/apps.md,
        /// "Documents from any app"), with the same `StreamFileEnd` as a file an app hands over. That
        /// end sits on a connection, where the app's would be: one end of a socket pair, whose other
        /// end handoffd holds until the stream is over (its outcome line is written there and dropped).
        /// The stream's outcome is then `record`'s.
        package func splice(toOwn file: StreamFile, logger: Logger) async throws(DaemonError) {
            var pair: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
                let failure = errno
                abandon(because: "handoffd cannot make a socket pair for the file")
                throw DaemonError(.internalError, "cannot make a socket pair for the file: \(SystemCall.describe(failure))")
            }
            // A descriptor NIO was given is NIO's from then on (it closes it if it fails): only
            // the other one is closed here.
            let bootstrap = ClientBootstrap(group: connection.channel.eventLoop)
            let held: any Channel
            let app: any Channel
            do {
                // Held, never read: the other end closing (the stream is over) ends it too.
                held = try await bootstrap.withConnectedSocket(pair[1]).get()
            } catch {
                close(pair[0])
                abandon(because: "handoffd cannot join the file to the stream")
                throw DaemonError(.internalError, "cannot join the file to the stream: \(SocketErrorText.describe(error))")
            }
            do {
                app = try await bootstrap.withConnectedSocket(pair[0]).get()
            } catch {
                held.close(promise: nil)
                abandon(because: "handoffd cannot join the file to the stream")
                throw DaemonError(.internalError, "cannot join the file to the stream: \(SocketErrorText.describe(error))")
            }
            splice(to: app, file: file, logger: logger)
        }

        /// The app went away before its pipe was joined.
        package func abandon(because reason: String = "the app left before the stream started") {
            record.fail(reason)
            connection.channel.triggerUserOutboundEvent(TLSHandler.Abort(), promise: nil)
        }
    }

}

/// The resuming side: dials the device a continuation came from and asks for a stream.
package struct ResumingStreams: Sendable {
    let book: StreamBook
    let security: PeerSecurity
    let directory: PeerDirectory
    let logger: Logger

    package init(book: StreamBook, security: PeerSecurity, directory: PeerDirectory, logger: Logger) {
        self.book = book
        self.security = security
        self.directory = directory
        self.logger = logger
    }

    /// `POST /v1/continuations/ID/streams`: connects to the originator and asks for a stream.
    package func open(continuationID: UUID) async throws(DaemonError) -> ContinuationStreams.Prepared {
        guard let continuation = book.continuation(continuationID) else {
            throw DaemonError(.unknownContinuation, "no continuation \(continuationID.lowercasedString) on this device (they last until handoffd restarts)")
        }
        let peer = continuation.peer
        guard continuation.supportsStreams else {
            throw DaemonError(.streamsUnsupported, "the activity from \(peer.name) does not offer continuation streams")
        }
        guard let contexts = security.contexts else {
            throw DaemonError(.noAccount, "this device has no account any more")
        }
        // After `activityContinued` (at once, but for a caller that asks right after its answer);
        // a tell that cannot go out holds no stream up for more than a second.
        _ = await continuation.originTold?.value(within: .seconds(1))
        var targets = await directory.dialTargets(peer.id)
        if let given = continuation.address { targets.insert(given, at: 0) }
        return try await dial(
            peer, targets: targets, request: .openStream(activityID: continuation.activityID), contexts: contexts,
            activityID: continuation.activityID, continuationID: continuationID
        )
    }

    /// Pastes: a stream of form `type` of the copy `copyID` that `peer` announced
    /// (docs/clipboard.md). The stream's record names the copy where an activity's would be.
    package func openClipboard(copyID: UUID, type: String, from peer: LocalEvent.PeerRef) async throws(DaemonError) -> ContinuationStreams.Prepared {
        guard let contexts = security.contexts else {
            throw DaemonError(.noAccount, "this device has no account any more")
        }
        let targets = await directory.dialTargets(peer.id)
        return try await dial(
            peer, targets: targets, request: .openClipboardStream(copyID: copyID, type: type), contexts: contexts, activityID: copyID, continuationID: nil
        )
    }

    private func dial(
        _ peer: LocalEvent.PeerRef, targets: [PeerAddress], request: PeerMessage, contexts: PeerSecurity.Contexts, activityID: UUID, continuationID: UUID?
    ) async throws(DaemonError) -> ContinuationStreams.Prepared {
        guard !targets.isEmpty else {
            throw DaemonError(.unreachable, "\(peer.name) is no longer seen on the network")
        }
        var lastError = DaemonError(.unreachable, "\(peer.name) cannot be reached")
        for target in targets {
            do {
                let (connection, streamID, length) = try await PeerDialer.openStream(
                    target, context: contexts.streamClient, expectedPeer: peer.id, addressee: await directory.addressee(peer.id),
                    request: request, peerName: peer.name
                )
                let record = book.makeRecord(id: streamID, role: .resuming, peer: peer, activityID: activityID, continuationID: continuationID)
                if let length { record.expect(length) }
                logger.info("stream opened", metadata: ["stream": "\(streamID.lowercasedString)", "peer": "\(peer.id.short)", "kind": "\(request.kindName)"])
                return ContinuationStreams.Prepared(record: record, connection: connection, peerName: peer.name, mustAccept: false)
            } catch {
                lastError = error
                // A refusal is an answer; only an unreachable address is worth trying another.
                guard error.code == .unreachable else { throw error }
            }
        }
        throw lastError
    }

}

/// Activities whose streams handoffd serves itself, from a file (a document), rather than an app.
package protocol StreamFileSource: Sendable {
    /// The file to send to a device that continued `activity`; nil when an app serves its
    /// streams. Throws (`activityChanged`) when the file is no longer what was offered.
    func file(for activity: Activity) async throws(DaemonError) -> StreamFile?
}

/// Copies this device announced, whose forms another device may paste (docs/clipboard.md): the
/// desktop agent that announced one takes each paste's stream and hands it the form's bytes.
package protocol ClipboardStreamServer: Sendable {
    /// `peer` asks to paste form `type` of copy `copyID` as stream `streamID`: the agent is told to
    /// take it. Throws, with words for the other device, when that copy is not this device's or no
    /// longer given out, or nothing here can serve it.
    func requestStream(_ streamID: UUID, copyID: UUID, type: String, from peer: LocalEvent.PeerRef) throws(DaemonError)
}

/// The originating side: a device that continued the current activity asks for a stream, and
/// the attached app that serves streams takes it — or handoffd sends the file itself (`files`).
/// A paste from this device's clipboard is taken the same way, by the desktop agent (`clipboard`).
package struct OriginatingStreams: Sendable {
    let book: StreamBook
    let registry: ActivityRegistry
    let attachments: Attachments
    let store: AccountStore
    let sources: Sources
    /// How long an app, or the agent holding a copy, has to take a stream it was asked to.
    let deadlines: Deadlines
    let logger: Logger

    /// Who else serves streams: handoffd's own files, the clipboard's agent.
    package struct Sources: Sendable {
        let files: (any StreamFileSource)?
        let clipboard: (any ClipboardStreamServer)?

        package init(files: (any StreamFileSource)? = nil, clipboard: (any ClipboardStreamServer)? = nil) {
            self.files = files
            self.clipboard = clipboard
        }
    }

    package init(
        book: StreamBook, registry: ActivityRegistry, attachments: Attachments, store: AccountStore, sources: Sources = Sources(),
        deadlines: Deadlines = Deadlines(), logger: Logger
    ) {
        self.deadlines = deadlines
        self.book = book
        self.registry = registry
        self.attachments = attachments
        self.store = store
        self.sources = sources
        self.logger = logger
    }

    /// A device asks for a stream (its connection is past TLS). Answered here unless an app takes
    /// it, in which case the local API answers when it splices.
    func serveIncoming(_ connection: StreamConnection) async {
        let message: PeerMessage
        do {
            message = try await connection.receivedFrame()
        } catch {
            logger.debug("stream request not received", metadata: ["remote": "\(connection.remote)", "error": "\(error)"])
            connection.close()
            return
        }
        let activityID: UUID
        switch message {
        case .openStream(let id):
            activityID = id
        case .openClipboardStream(let copyID, let type):
            await serveClipboard(copyID: copyID, type: type, on: connection)
            return
        default:
            refuse(connection, .internalError, "expected a stream request, got a \(message.kindName)")
            return
        }
        let peer = await store.peerRef(connection.peerID)
        guard let current = await registry.currentActivity(), current.id == activityID else {
            refuse(connection, .activityChanged, "the activity is no longer current there")
            return
        }
        guard current.content.supportsContinuationStreams else {
            refuse(connection, .unsupported, "the activity does not offer continuation streams")
            return
        }
        guard book.isGranted(peer.id, activityID: activityID) else {
            refuse(connection, .notContinued, "this device has not continued that activity")
            return
        }
        if let files = sources.files {
            do throws(DaemonError) {
                if let file = try await files.file(for: current) {
                    await send(file, on: connection, to: peer, activityID: activityID)
                    return
                }
            } catch {
                refuse(connection, error.code == .activityChanged ? .activityChanged : .noServer, error.message)
                return
            }
        }
        await offer(connection, peer: peer, activityID: activityID, taker: "the originating app", within: deadlines.streamTake) { streamID throws(DaemonError) in
            guard attachments.requestStream(streamID, activityID: activityID, peer: peer) else {
                throw DaemonError(.streamRefused, "no app serves streams for that activity right now")
            }
        }
    }

    /// A paste of one form of a copy announced here: the agent that announced it takes it.
    private func serveClipboard(copyID: UUID, type: String, on connection: StreamConnection) async {
        let peer = await store.peerRef(connection.peerID)
        guard let clipboard = sources.clipboard else {
            refuse(connection, .unsupported, "this device does not share its clipboard")
            return
        }
        await offer(connection, peer: peer, activityID: copyID, taker: "the desktop agent", within: deadlines.clipboardTake) { streamID throws(DaemonError) in
            try clipboard.requestStream(streamID, copyID: copyID, type: type, from: peer)
        }
    }

    /// Offers the stream to whoever takes it here (an app, the agent), told by `ask`, and waits
    /// `limit` for it to take it.
    private func offer(
        _ connection: StreamConnection, peer: LocalEvent.PeerRef, activityID: UUID, taker: String, within limit: Duration,
        ask: (UUID) throws(DaemonError) -> Void
    ) async {
        let streamID = UUID()
        let record = book.makeRecord(id: streamID, role: .originating, peer: peer, activityID: activityID, continuationID: nil)
        let taken = Once<Bool>()
        book.offer(StreamBook.Offer(record: record, connection: connection, taken: taken))
        do throws(DaemonError) {
            try ask(streamID)
        } catch {
            _ = book.claim(streamID)
            record.fail(error.message)
            refuse(connection, error.code == .activityChanged ? .activityChanged : .noServer, error.message)
            return
        }
        logger.info("stream requested", metadata: ["stream": "\(streamID.lowercasedString)", "peer": "\(peer.id.short)"])
        let wasTaken = await taken.value(within: limit) ?? false
        // Claiming settles the race with a taker arriving right at the deadline.
        if !wasTaken, book.claim(streamID) != nil {
            if Task.isCancelled {
                record.fail("handoffd stopped before \(taker) took the stream")
                refuse(connection, .noServer, "the device is shutting down")
            } else {
                record.fail("\(taker) did not take the stream within \(limit)")
                refuse(connection, .noServer, "\(taker) did not take the stream in time")
            }
        }
    }

    /// handoffd sends `file` itself: no app takes part.
    private func send(_ file: StreamFile, on connection: StreamConnection, to peer: LocalEvent.PeerRef, activityID: UUID) async {
        let record = book.makeRecord(id: UUID(), role: .originating, peer: peer, activityID: activityID, continuationID: nil)
        let prepared = ContinuationStreams.Prepared(record: record, connection: connection, peerName: peer.name, mustAccept: true)
        do throws(DaemonError) {
            try await prepared.splice(toOwn: file, logger: logger)
            logger.info("continuation stream of a file opened", metadata: ["stream": "\(record.id.lowercasedString)", "peer": "\(peer.id.short)"])
        } catch {
            logger.warning("cannot send a file on a stream", metadata: ["error": "\(error)"])
        }
    }

    /// `POST /v1/streams/ID`: the originating app takes a stream it was offered.
    package func take(streamID: UUID) throws(DaemonError) -> ContinuationStreams.Prepared {
        guard let offer = book.claim(streamID) else {
            if book.stream(streamID) != nil {
                throw DaemonError(.unknownStream, "stream \(streamID.lowercasedString) is not waiting to be taken (taken already, or it timed out)")
            }
            throw DaemonError(.unknownStream, "no stream \(streamID.lowercasedString) on this device")
        }
        offer.taken.settle(true)
        return ContinuationStreams.Prepared(record: offer.record, connection: offer.connection, peerName: offer.record.info.peerName, mustAccept: true)
    }

    private func refuse(_ connection: StreamConnection, _ reason: StreamRefusalReason, _ message: String) {
        logger.info("continuation stream refused", metadata: ["remote": "\(connection.remote)", "reason": "\(message)"])
        connection.answer(.streamRefused(StreamRefusal(reason, message)))
        // The refusal goes out with close_notify before the connection closes.
        connection.channel.eventLoop.execute { connection.close() }
    }
}

extension OriginatingStreams: StreamService {
    package func prepareIncoming(on channel: any Channel, from peer: DeviceID, remote: String) throws -> any IncomingStream {
        let connection = try StreamConnection.configure(channel, peerID: peer, remote: remote, opening: nil, deadline: ContinuationStreams.requestDeadline)
        return StreamRequest(connection: connection, streams: self)
    }

    /// A stream connection from another device, its request not read yet.
    struct StreamRequest: IncomingStream {
        let connection: StreamConnection
        let streams: OriginatingStreams

        func serve() async { await streams.serveIncoming(connection) }
    }
}
