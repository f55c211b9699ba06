import Foundation

/// A real session bus for a test: Debian's `dbus-daemon --session`, listening on a socket of its
/// own in `directory` (never the desktop's bus). `wrap` runs it as someone else or in a simulated
/// host (`TestUser.command`, `Rig.execArguments`); the socket is then that user's.
public final class SessionBus: @unchecked Sendable {
    public let address: String
    public let socketPath: String
    public let process: RunningProcess

    public init(directory: String, wrap: ([String]) throws -> [String] = { $0 }) async throws {
        socketPath = directory + "/session-bus"
        address = "unix:path=" + socketPath
        // Debian's session configuration without its service directories: nothing is started
        // on demand (a call to a missing notification server must not start some dunst with
        // the test runner's DISPLAY).
        let config = directory + "/session-bus.conf"
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>\(address)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """.write(toFile: config, atomically: true, encoding: .utf8)
        chmod(config, 0o644)
        // Ready once it prints its address, which it does after it listens: the socket file
        // exists from bind(2) on, and a connection before listen(2) is refused (seen under load).
        let command = try wrap(["/usr/bin/dbus-daemon", "--config-file=" + config, "--nofork", "--nopidfile", "--print-address=1"])
        process = try RunningProcess(command[0], Array(command.dropFirst()))
        try await process.wait(for: "dbus-daemon to listen on \(socketPath)") { $0.stdout.contains(self.socketPath) && $0.stdout.hasSuffix("\n") }
    }

    /// Ends the bus daemon (every connection to it ends with it).
    public func stop() async {
        _ = try? await process.stop()
    }
}
