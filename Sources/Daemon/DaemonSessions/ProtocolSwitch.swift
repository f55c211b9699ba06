import HandoffModel
import HandoffPeer
import HandoffTLS
import HandoffTLSChannel
import NIOCore

/// What an accepted connection turned out to be once its TLS handshake named the protocol.
enum AcceptedConnection: Sendable {
    case session(PeerConnection, TLSHandshakeCompleted)
    case stream(any IncomingStream)
}

/// What serves continuation streams (`DaemonStreams`): the listener hands it every connection
/// whose handshake asked for one.
package protocol StreamService: Sendable {
    /// Sets the channel up for a stream from `peer`: on the channel's event loop, as the handshake
    /// completes, before any later byte is read.
    func prepareIncoming(on channel: any Channel, from peer: DeviceID, remote: String) throws -> any IncomingStream
}

/// A continuation stream that arrived, set up and waiting to be served.
package protocol IncomingStream: Sendable {
    /// Reads the request and answers it (or hands the stream to whoever takes it).
    func serve() async
}

/// (Listener) Once the handshake named the protocol, installs what it asks for: framed messages
/// for a member session or a join, or a stream preamble (and half-closure) for a continuation
/// stream. Runs on the channel's event loop as the handshake completes, before any later byte.
enum ProtocolSwitch {
    static func install(
        after done: TLSHandshakeCompleted, on channel: any Channel, tls: TLSHandler, remote: RemoteAddress, streams: any StreamService
    ) throws -> AcceptedConnection {
        if done.alpn == HandoffALPN.stream, case .member(let id) = done.peer {
            tls.allowHalfClosure = true
            try channel.syncOptions?.setOption(.allowRemoteHalfClosure, value: true)
            return .stream(try streams.prepareIncoming(on: channel, from: id, remote: remote.value ?? "unknown"))
        }
        let limit = FrameLimit()
        let sync = channel.pipeline.syncOperations
        try sync.addHandler(ByteToMessageHandler(LimitedFrameDecoder(limit: limit)))
        try sync.addHandler(MessageToByteHandler(PeerFrameEncoder()))
        let wrapped = try PeerChannel(wrappingChannelSynchronously: channel)
        let connection = PeerConnection(channel: wrapped, handshake: channel.eventLoop.makeSucceededFuture(done), limit: limit, remoteAddress: remote)
        return .session(connection, done)
    }
}
