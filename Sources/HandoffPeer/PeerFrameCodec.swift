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
        guard buffer.readableBytes >= 5,
            let kind = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self),
            let length = buffer.getInteger(at: buffer.readerIndex + 1, as: UInt32.self)
        else { return .needMoreData }
        guard Int(length) <= maximumPayload else {
            throw PeerMessageError(description: "a \(length)-byte message is over the \(maximumPayload)-byte limit")
        }
        guard buffer.readableBytes >= 5 + Int(length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 5)
        let payload = buffer.readBytes(length: Int(length)) ?? []
        context.fireChannelRead(wrapInboundOut(try PeerMessage(kind: kind, payload: payload)))
        return .continue
    }
}

public final class PeerFrameEncoder: MessageToByteEncoder {
    public typealias OutboundIn = PeerMessage

    public init() {}

    public func encode(data: PeerMessage, out: inout ByteBuffer) throws {
        let (kind, payload) = data.encodedPayload()
        out.writeInteger(kind)
        out.writeInteger(UInt32(payload.count))
        out.writeBytes(payload)
    }
}

@available(*, unavailable)
extension PeerFrameDecoder: Sendable {}
