#!/usr/bin/env bash
# Makes sure avahi-daemon runs on this machine (handoffd advertises and browses through it).
# As root: starts it — with systemctl where systemd runs the machine, else (containers, chroots)
# the system D-Bus if needed, then avahi-daemon in the background. As a normal user: says
# exactly what to run, for this machine. Exits non-zero when Avahi is not running afterwards.
set -euo pipefail

# A normal user's PATH has no /usr/sbin: name the program by its path.
avahi=/usr/sbin/avahi-daemon
dbus=/usr/bin/dbus-daemon
here=$(cd "$(dirname "$0")" && pwd)

if [[ ! -x $avahi ]]; then
  echo "avahi-daemon is not installed; install it with: sudo apt-get install -y avahi-daemon libnss-mdns" >&2
  exit 1
fi
if "$avahi" --check 2>/dev/null; then
  exit 0
fi

# systemd runs this machine when it is PID 1 (sd_booted(3) checks /run/systemd/system).
with_systemd=no
[[ -d /run/systemd/system ]] && with_systemd=yes

if [[ $(id -u) -ne 0 ]]; then
  echo "avahi-daemon is not running, so handoffd cannot find your other devices." >&2
  if [[ $with_systemd == yes ]]; then
    echo "start it (and at every boot) with: sudo systemctl enable --now avahi-daemon" >&2
  else
    echo "this machine does not run systemd; start it (the system D-Bus first if needed) with: sudo $here/ensure-avahi.sh" >&2
  fi
  exit 1
fi

if [[ $with_systemd == yes ]]; then
  systemctl start avahi-daemon
else
  if [[ ! -S /run/dbus/system_bus_socket ]]; then
    mkdir -p /run/dbus
    "$dbus" --system --fork
    echo "started the system D-Bus (no systemd here)" >&2
  fi
  "$avahi" --daemonize --no-rlimits
  echo "started avahi-daemon (no systemd here)" >&2
fi
for _ in $(seq 50); do
  "$avahi" --check 2>/dev/null && exit 0
  sleep 0.1
done
if [[ $with_systemd == yes ]]; then
  echo "avahi-daemon did not come up; see why with: journalctl -u avahi-daemon" >&2
else
  echo "avahi-daemon did not come up; see why with: $avahi --no-rlimits --debug" >&2
fi
exit 1
