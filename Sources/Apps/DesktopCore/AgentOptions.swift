import HandoffAPI

/// Where the agent keeps what it says about itself, and how long it waits for a panel.
package struct AgentOptions: Sendable {
    /// `DesktopAgentStatus`, for `handoffctl doctor`.
    package var statusFile: String
    /// Exists once the user was told that no panel shows status icons (told once ever).
    package var noHostNotedFile: String
    /// How long the icon waits for a panel that shows it before the agent says there is none:
    /// panels start with the session, maybe after the agent.
    package var statusIconGrace: Duration
    /// How the session's clipboard is reached (`ClipboardBackend.name`), for `doctor`.
    package var clipboard: String?

    /// Waits between attempts to reach handoffd (it restarts, or starts after the session).
    package static let reconnectDelays: [Duration] = [.milliseconds(50), .milliseconds(200), .milliseconds(500), .seconds(1), .seconds(2)]

    package init(environment: [String: String], statusIconGrace: Duration = .seconds(30)) {
        statusFile = HandoffPaths.desktopStatusPath(environment: environment)
        noHostNotedFile = HandoffPaths.stateDirectory(environment: environment) + "-desktop/no-status-icon-host"
        self.statusIconGrace = statusIconGrace
    }
}
