import Foundation
import HandoffAPI
import HandoffTestSupport
import Testing
@testable import DaemonSessions
@testable import HandoffDaemon

/// What a peer that never authenticates can cost: a bounded time and a bounded number of sockets.
@Suite(.timeLimit(.minutes(3))) struct PeerListenerLimitTests {
    /// A TCP connection that says nothing; reports when the other side closes it.
    final class SilentConnection: @unchecked Sendable {
        let fd: Int32

        init?(port: Int) {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard rc == 0 else { return nil }
        }

        deinit { close(fd) }

        /// Sends what is not a TLS ClientHello; whether the server was done with it (an alert and
        /// a close) within `seconds`.
        func refusedAfterAStrangersHello(within seconds: Double) -> Bool {
            let junk = Array("GET / HTTP/1.0\r\n\r\n".utf8)
            _ = junk.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            var byte = [UInt8](repeating: 0, count: 256)
            while poll(&p, 1, Int32(seconds * 1000)) == 1 {
                if recv(fd, &byte, byte.count, 0) <= 0 { return true }
            }
            return false
        }

        /// Whether the server closed the connection within `seconds`.
        func closedByServer(within seconds: Double) -> Bool {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(seconds * 1000)) == 1 else { return false }
            var byte: UInt8 = 0
            return recv(fd, &byte, 1, 0) <= 0
        }
    }

    /// Closed at the handshake deadline: with a short one, it is (the wait is a guard); with one
    /// of an hour, it is still open while another peer completes a whole exchange — not before.
    @Test func aSilentPeerIsDisconnectedAtTheHandshakeDeadline() async throws {
        let patient = try await TestDaemon.start { $0.handshakeTimeoutSeconds = 3600 }
        _ = try await patient.client.send(.createAccount(CreateAccountRequest()))
        let waiting = try #require(SilentConnection(port: patient.daemon.peerPort))
        let answered = try #require(SilentConnection(port: patient.daemon.peerPort))
        #expect(await Task.detached { answered.refusedAfterAStrangersHello(within: 30) }.value, "another peer's hello was not answered")
        #expect(await Task.detached { !waiting.closedByServer(within: 0) }.value, "closed before its handshake deadline")
        try await patient.finish()

        let a = try await TestDaemon.start { $0.handshakeTimeoutSeconds = 0.5 }
        _ = try await a.client.send(.createAccount(CreateAccountRequest()))
        let silent = try #require(SilentConnection(port: a.daemon.peerPort))
        #expect(await Task.detached { silent.closedByServer(within: 60) }.value)
        try await a.finish()
    }

    @Test func unauthenticatedConnectionsAreCapped() async throws {
        let a = try await TestDaemon.start {
            // Three for strangers, one more for members' addresses.
            $0.admissionLimits.maximumUnauthenticated = 4
            $0.admissionLimits.reservedForMembers = 1
            $0.admissionLimits.perAddress = 100
            $0.admissionLimits.handshakesPerMinute = 100
        }
        _ = try await a.client.send(.createAccount(CreateAccountRequest()))
        let port = a.daemon.peerPort
        let held = (0..<3).compactMap { _ in SilentConnection(port: port) }
        #expect(held.count == 3)
        try await waitUntil("three connections admitted") { a.daemon.admission.unauthenticatedCount == 3 }
        let extra = try #require(SilentConnection(port: port))
        let extraClosed = await Task.detached { extra.closedByServer(within: 2) }.value
        #expect(extraClosed, "the fourth is closed at once")
        for c in held {
            let waiting = await Task.detached { !c.closedByServer(within: 0.05) }.value
            #expect(waiting, "the first three are still waiting")
        }
        try await a.finish()
    }
}
