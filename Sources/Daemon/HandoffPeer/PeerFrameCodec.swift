import NIOCore

/// Frames on the wire: `type:u8 length:u32be payload`. The decoder refuses a frame longer than the
/// current limit before buffering it, so an unauthenticated or misbehaving peer cannot make us
/// hold much; the session raises the limit once it knows who it talks to.
public final class PeerFrameDecoder: ByteToMessageDecoder {
    public typealias InboundOut = PeerMessage

    public var maximumPayload: Int

    public init(maximumPayload: Int) {
        self.maximumPayload = maximumPayload
    }

    public func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let message = try PeerFrame.read(from: &buffer, maximumPayload: maximumPayload) else { return .needMoreData }
        context.fireChannelRead(wrapInboundOut(message))
        return .continue
    }
}

public final class PeerFrameEncoder: MessageToByteEncoder {
    public typealias OutboundIn = PeerMessage

    public init() {}

    public func encode(data: PeerMessage, out: inout ByteBuffer) throws {
        PeerFrame.write(data, to: &out)
    }
}

/// One frame in and out of a buffer, for the codecs above and for stream connections, which read
/// exactly one frame each way before their bytes become the stream's.
public enum PeerFrame {
    /// The next whole message at the buffer's reader index (consumed), or nil until one arrived.
    public static func read(from buffer: inout ByteBuffer, maximumPayload: Int) throws(PeerMessageError) -> PeerMessage? {
        guard buffer.readableBytes >= 5,
            let kind = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self),
            let length = buffer.getInteger(at: buffer.readerIndex + 1, as: UInt32.self)
        else { return nil }
        guard Int(length) <= maximumPayload else {
            throw PeerMessageError(description: "a \(length)-byte message is over the \(maximumPayload)-byte limit")
        }
        guard buffer.readableBytes >= 5 + Int(length) else { return nil }
        buffer.moveReaderIndex(forwardBy: 5)
        let payload = buffer.readBytes(length: Int(length)) ?? []
        return try PeerMessage(kind: kind, payload: payload)
    }

    public static func write(_ message: PeerMessage, to out: inout ByteBuffer) {
        let (kind, payload) = message.encodedPayload()
        out.writeInteger(kind)
        out.writeInteger(UInt32(payload.count))
        out.writeBytes(payload)
    }
}

@available(*, unavailable)
extension PeerFrameDecoder: Sendable {}
