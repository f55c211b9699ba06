#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI

#if canImport(Glibc)
import Glibc
#endif

/// `doctor`'s look at the graphical session, from what `handoff-desktop` says about itself
/// (`desktop.json`, docs/desktop.md): whether it runs, whether a panel shows its status icon, and
/// what the session lacks, with the Debian package that brings it.
enum DesktopCheck {
    static func checks(environment: [String: String]) -> [Doctor.Check] {
        let graphical = environment["DISPLAY"] != nil || environment["WAYLAND_DISPLAY"] != nil
        let path = HandoffPaths.desktopStatusPath(environment: environment)
        guard let data = FileManager.default.contents(atPath: path),
            let status = try? JSONDecoder().decode(DesktopAgentStatus.self, from: data),
            status.pid > 0, kill(status.pid, 0) == 0 || errno == EPERM
        else {
            // Outside a graphical session (ssh, a server) there is nothing to show anything on.
            guard graphical else { return [] }
            return [
                Doctor.Check(
                    name: "desktop", verdict: .warning, message: "handoff-desktop is not running in this session: no status icon, no notifications",
                    fix: "systemctl --user start handoff-desktop (or log out and in again)"
                )
            ]
        }
        var checks: [Doctor.Check] = []
        switch status.statusIcon {
        case .shown:
            checks.append(Doctor.Check(name: "status-icon", verdict: .ok, message: "the status icon is shown (handoff-desktop, pid \(status.pid))"))
        case .waiting:
            checks.append(Doctor.Check(name: "status-icon", verdict: .ok, message: "handoff-desktop (pid \(status.pid)) waits for a panel that shows status icons"))
        case .noHost:
            checks.append(
                Doctor.Check(
                    name: "status-icon", verdict: .warning,
                    message: "no panel in this session shows status icons (plain GNOME): handoff-desktop shows notifications only",
                    fix: "sudo apt install gnome-shell-extension-appindicator, log in again, then gnome-extensions enable ubuntu-appindicators@ubuntu.com (KDE and Xfce show the icon as they are)"
                )
            )
        }
        if !status.notifications {
            checks.append(
                Doctor.Check(
                    name: "notifications", verdict: .warning, message: "no notification server runs in this session: other devices' activities are not announced",
                    fix: "sudo apt install dunst (or your desktop's notification service)"
                )
            )
        }
        switch status.clipboard {
        case "x11":
            checks.append(Doctor.Check(name: "clipboard", verdict: .ok, message: "the clipboard is shared with your other devices through the X server"))
        case "wayland":
            checks.append(Doctor.Check(name: "clipboard", verdict: .ok, message: "the clipboard is shared with your other devices through the compositor's data-control"))
        default:
            checks.append(
                Doctor.Check(
                    name: "clipboard", verdict: .warning,
                    message: "this session's clipboard cannot be shared: its compositor has no data-control protocol (GNOME's Wayland has none)",
                    fix: "paste another device's copy with: handoffctl clipboard paste (or log in to an X11 or KDE Plasma session)"
                )
            )
        }
        if !status.joinDialog {
            checks.append(
                Doctor.Check(
                    name: "join-dialog", verdict: .warning, message: "zenity is not installed: joining an account from the status icon cannot ask for the code",
                    fix: "sudo apt install zenity (or handoffctl account join CODE in a terminal)"
                )
            )
        }
        return checks
    }
}
