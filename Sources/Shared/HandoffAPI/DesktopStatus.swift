#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What `handoff-desktop` says about itself, in `$XDG_RUNTIME_DIR/handoff/desktop.json` while it
/// runs (docs/desktop.md): `handoffctl doctor` reads it to say what the session is missing.
public struct DesktopAgentStatus: Codable, Sendable, Equatable {
    public enum StatusIcon: String, Codable, Sendable {
        /// A panel shows it.
        case shown
        /// No panel that shows status icons has appeared yet.
        case waiting
        /// None appeared: the session has no status-icon host (plain GNOME).
        case noHost = "no-host"
    }

    public var pid: Int32
    public var statusIcon: StatusIcon
    /// Whether a notification server runs.
    public var notifications: Bool
    /// Whether the join dialog's program (zenity) is installed.
    public var joinDialog: Bool
    /// How the session's clipboard is reached: `x11`, `wayland` (data-control); nil: it is not
    /// (GNOME's Wayland has no data-control; docs/clipboard.md).
    public var clipboard: String?

    public init(pid: Int32, statusIcon: StatusIcon, notifications: Bool, joinDialog: Bool, clipboard: String? = nil) {
        self.pid = pid
        self.statusIcon = statusIcon
        self.notifications = notifications
        self.joinDialog = joinDialog
        self.clipboard = clipboard
    }
}

extension HandoffPaths {
    /// `$XDG_RUNTIME_DIR/handoff/desktop.json`: `DesktopAgentStatus`.
    public static func desktopStatusPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        runtimeDirectory(environment: environment) + "/desktop.json"
    }
}
