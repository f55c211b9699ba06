/// The browser's native messaging framing (docs/browser.md, "The host"): each message is its
/// length as a 32-bit integer in the machine's byte order, then that many bytes of UTF-8 JSON.
/// A browser writes to the host's stdin and reads its stdout; the host outlives neither.
public enum NativeMessaging {
    /// The most the extension may send in one message. Its messages are a page's address, title
    /// and position, so a few kilobytes; the bound keeps a runaway sender from growing the host.
    public static let maximumIncomingBytes = 64 * 1024
    /// What a browser accepts from a host in one message (Chromium's limit, and Firefox's is higher).
    public static let maximumOutgoingBytes = 1024 * 1024

    public enum FramingError: Error, Equatable, CustomStringConvertible {
        /// The announced length is over `maximumIncomingBytes`: the stream cannot be trusted any further.
        case tooLarge(Int)

        public var description: String {
            switch self {
            case .tooLarge(let length): "a message of \(length) bytes from the browser is over the \(maximumIncomingBytes)-byte limit"
            }
        }
    }

    /// `message` framed for the browser; nil when it is over `maximumOutgoingBytes`.
    public static func frame(_ message: [UInt8]) -> [UInt8]? {
        guard message.count <= maximumOutgoingBytes else { return nil }
        return withUnsafeBytes(of: UInt32(message.count)) { Array($0) } + message
    }

    /// Splits what the browser wrote into messages as they complete.
    public struct Reader: Sendable {
        private var buffer: [UInt8] = []
        private let limit: Int

        public init(limit: Int = NativeMessaging.maximumIncomingBytes) {
            self.limit = limit
        }

        /// Adds `bytes` and returns the messages they complete. Throws when a message announces
        /// more than the limit (before its bytes are held).
        public mutating func feed(_ bytes: some Collection<UInt8>) throws(FramingError) -> [[UInt8]] {
            buffer.append(contentsOf: bytes)
            var messages: [[UInt8]] = []
            var start = 0
            while buffer.count - start >= 4 {
                var length: UInt32 = 0
                withUnsafeMutableBytes(of: &length) { $0.copyBytes(from: buffer[start..<start + 4]) }
                guard Int(length) <= limit else { throw .tooLarge(Int(length)) }
                guard buffer.count - start - 4 >= Int(length) else { break }
                messages.append(Array(buffer[start + 4..<start + 4 + Int(length)]))
                start += 4 + Int(length)
            }
            buffer.removeFirst(start)
            return messages
        }

        /// Bytes of a message not yet complete.
        public var pending: Int { buffer.count }
    }
}
