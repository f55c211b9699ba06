#!/usr/bin/env bash
# Makes sure avahi-daemon runs on this machine (handoffd advertises and browses through it).
# With systemd: systemctl. Without (containers, chroots): start the system D-Bus if needed, then
# avahi-daemon in the background. Prints what it did; exits non-zero with a hint if it cannot.
set -euo pipefail

if avahi-daemon --check 2>/dev/null; then
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "avahi-daemon is not running; start it with: sudo systemctl start avahi-daemon" >&2
  exit 1
fi
if [[ -d /run/systemd/system ]]; then
  systemctl start avahi-daemon
else
  if [[ ! -S /run/dbus/system_bus_socket ]]; then
    mkdir -p /run/dbus
    dbus-daemon --system --fork
    echo "started the system D-Bus (no systemd here)" >&2
  fi
  avahi-daemon --daemonize --no-rlimits
  echo "started avahi-daemon (no systemd here)" >&2
fi
for _ in $(seq 50); do
  avahi-daemon --check 2>/dev/null && exit 0
  sleep 0.1
done
echo "avahi-daemon did not come up; see its log (journalctl -u avahi-daemon, or syslog)" >&2
exit 1
