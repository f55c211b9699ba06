#!/usr/bin/env bash
# Installs the Debian packages handoff needs, and only those missing. Safe to run again.
#   scripts/install-deps.sh build   — to compile (OpenSSL, Avahi's dns_sd compat headers, XCB, Wayland)
#   scripts/install-deps.sh run     — to run the daemon (Avahi, nss-mdns, D-Bus)
#   scripts/install-deps.sh test    — everything the test suite uses
#   scripts/install-deps.sh deb     — to build the Debian packages (make deb)
#   scripts/install-deps.sh package — to test them in a fresh Debian 12 (make test-package)
set -euo pipefail

build=(pkg-config libssl-dev libavahi-compat-libdnssd-dev libldns-dev libsystemd-dev libxcb1-dev libxcb-xfixes0-dev libwayland-dev)
run=(avahi-daemon libnss-mdns dbus openssl libldns3 libxcb1 libxcb-xfixes0 libwayland-client0)
deb=(debhelper lintian fakeroot dpkg-dev)
package=(debootstrap binutils)
test=(curl util-linux iproute2 avahi-utils socat tcpdump procps strace systemd man-db python3 dbus-daemon dunst xvfb x11-apps imagemagick python3-dbus python3-gi gir1.2-glib-2.0 gir1.2-gtk-3.0 shared-mime-info desktop-file-utils libnotify-bin chromium firefox-esr stress-ng xfce4-panel zenity xdotool bind9 bind9-utils bind9-dnsutils knot knot-dnsutils xclip python3-xlib sway wl-clipboard)

case "${1:-test}" in
  build) wanted=("${build[@]}") ;;
  run) wanted=("${build[@]}" "${run[@]}") ;;
  test) wanted=("${build[@]}" "${run[@]}" "${test[@]}") ;;
  deb) wanted=("${build[@]}" "${deb[@]}") ;;
  package) wanted=("${build[@]}" "${deb[@]}" "${package[@]}") ;;
  *) echo "usage: $0 build|run|test|deb|package" >&2; exit 2 ;;
esac

missing=()
for p in "${wanted[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
  echo "handoff needs these Debian packages: ${missing[*]}" >&2
  echo "install them with: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
