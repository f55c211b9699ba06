import HandoffSystem
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// Socket errors in words for people: NIO's own text ("read(descriptor:pointer:size:):
/// Connection reset by peer (errno: 104)") names Swift functions and errno numbers, which no
/// user should have to read. Used wherever such an error can reach one (API errors, stream
/// outcomes, handoffd's last words); logs keep the full text.
package enum SocketErrorText {
    package static func describe(_ error: any Error) -> String {
        switch error {
        case let e as IOError:
            return describe(errno: e.errnoCode)
        case let e as NIOConnectionError:
            if e.dnsAError != nil || e.dnsAAAAError != nil, e.connectionErrors.isEmpty { return "the name \(e.host) does not resolve" }
            return e.connectionErrors.first.map { describe($0.error) } ?? "no address to connect to"
        case let e as ChannelError:
            switch e {
            case .connectTimeout: return "no answer in time"
            case .ioOnClosedChannel, .alreadyClosed, .eof, .outputClosed, .inputClosed: return "the connection was closed"
            default: return "the connection failed"
            }
        case let e as SystemCallError:
            return describe(errno: e.errno)
        case let e as DaemonError:
            return e.description
        default:
            return "\(error)"
        }
    }

    static func describe(errno code: Int32) -> String {
        switch code {
        case ECONNRESET, EPIPE: "the other side cut the connection off"
        case ETIMEDOUT: "the other side stopped answering"
        case ECONNREFUSED: "nothing listens there"
        case EHOSTUNREACH, ENETUNREACH: "no route to it on this network"
        case EADDRINUSE: "the address is already in use"
        case EACCES, EPERM: "not allowed (\(SystemCall.describe(code)))"
        default: SystemCall.describe(code).lowercased()
        }
    }
}
