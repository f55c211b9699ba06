#if canImport(Glibc)
import Glibc
#endif

/// How to start avahi-daemon on this machine: through systemd where it runs the machine
/// (sd_booted(3): /run/systemd/system exists), by hand elsewhere (containers, chroots, WSL) —
/// after the system D-Bus, which avahi-daemon needs, when that is not running either.
enum AvahiHint {
    static var startCommand: String {
        if access("/usr/sbin/avahi-daemon", X_OK) != 0 { return "sudo apt-get install avahi-daemon libnss-mdns" }
        if access("/run/systemd/system", F_OK) == 0 { return "sudo systemctl enable --now avahi-daemon" }
        let avahi = "sudo /usr/sbin/avahi-daemon --daemonize --no-rlimits"
        if access("/run/dbus/system_bus_socket", F_OK) == 0 { return avahi }
        return "sudo mkdir -p /run/dbus && sudo dbus-daemon --system --fork && \(avahi)"
    }
}
