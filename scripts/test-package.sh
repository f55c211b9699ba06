#!/usr/bin/env bash
# The Debian packages as a Debian user meets them (README, "Install"; `make test-package` builds
# them first): a fresh Debian 12 root (debootstrap --variant=minbase) gets them with
# `apt-get install ./…deb`, which pulls in what they depend on; then the files, the units, the
# binaries; then Chromium (started as /usr/bin/chromium) and Firefox ESR, each with a fresh profile
# and as a normal user, run the extension and start its host with no action of anyone's; then
# remove, then purge, leave nothing of handoff. Needs root (debootstrap, chroot) and Debian's
# mirror. Everything happens in a mount namespace of its own and a directory removed at the end.
#
#   scripts/test-package.sh DEBDIR      (DEBDIR holds handoff_*.deb and webext-handoff_*.deb)
set -euo pipefail

die() { echo "test-package: $*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || die "needs root (debootstrap, chroot): run it as root, or through make test-package as root"
debs=$(cd "${1:?usage: $0 DEBDIR}" && pwd)
handoff_deb=$(ls "$debs"/handoff_*_amd64.deb 2>/dev/null | tail -1 || true)
webext_deb=$(ls "$debs"/webext-handoff_*_all.deb 2>/dev/null | tail -1 || true)
[[ -f $handoff_deb && -f $webext_deb ]] || die "no handoff_*_amd64.deb and webext-handoff_*_all.deb in $debs (make deb)"
for tool in debootstrap unshare chroot; do command -v "$tool" >/dev/null || die "$tool is missing (scripts/install-deps.sh package)"; done

mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=$(cd "$(dirname "$0")/.." && pwd)/.build/package-test
mkdir -p "$cache"
# A base system fetched once, unpacked fresh every run.
tarball=$cache/bookworm-minbase.tar
if [[ ! -f $tarball ]]; then
  echo "== fetching a Debian 12 base system (once: $tarball)"
  debootstrap --variant=minbase --make-tarball="$tarball.part" bookworm "$cache/fetch" "$mirror" >/dev/null
  mv "$tarball.part" "$tarball"
  rm -rf "$cache/fetch"
fi
root=$(mktemp -d /var/tmp/handoff-package-XXXXXX)
chmod 0755 "$root"  # it is / for the users inside
cleanup() { rm -rf --one-file-system "$root"; }
trap cleanup EXIT

# Everything from here runs in mount and process namespaces of its own: /proc, /dev and /dev/shm
# of the root, and every process started in it (browsers, hosts, daemons), end with it, whatever
# happens.
unshare --mount --pid --fork --mount-proc --propagation private env ROOT="$root" TARBALL="$tarball" MIRROR="$mirror" \
  HANDOFF_DEB="$handoff_deb" WEBEXT_DEB="$webext_deb" bash -euo pipefail -c '
in_root() { chroot "$ROOT" "$@"; }
# Runs a test (eval), says how it went; $passed says it to what follows.
check() { if eval "$1"; then echo "ok: $2"; passed=1; else echo "FAILED: $2" >&2; failed=1; passed=0; fi; }
show() { echo "--- $1:" >&2; tail -n 30 "$ROOT/tmp/$1" >&2 || true; }
failed=0
passed=1

echo "== a fresh Debian 12"
debootstrap --variant=minbase --unpack-tarball="$TARBALL" bookworm "$ROOT" "$MIRROR" >/dev/null
mount -t proc proc "$ROOT/proc"
mount --rbind /dev "$ROOT/dev"
mount -t tmpfs tmpfs "$ROOT/dev/shm"
mount -t tmpfs tmpfs "$ROOT/tmp"
cat >"$ROOT/etc/apt/sources.list" <<EOF
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb ${MIRROR%/debian}/debian-security bookworm-security main
EOF
# No service starts inside this root (there is no init here).
printf "#!/bin/sh\nexit 101\n" >"$ROOT/usr/sbin/policy-rc.d"; chmod 755 "$ROOT/usr/sbin/policy-rc.d"
in_root apt-get update -qq
check "! in_root dpkg -s avahi-daemon >/dev/null 2>&1" "no avahi-daemon before"

echo "== apt-get install ./handoff_….deb ./webext-handoff_….deb"
cp "$HANDOFF_DEB" "$WEBEXT_DEB" "$ROOT/tmp/"
DEBIAN_FRONTEND=noninteractive in_root apt-get install -y -qq "/tmp/$(basename "$HANDOFF_DEB")" "/tmp/$(basename "$WEBEXT_DEB")" >/dev/null
for package in avahi-daemon libavahi-compat-libdnssd1 libldns3 libssl3; do
  check "in_root dpkg -s $package >/dev/null 2>&1" "$package came with handoff"
done
for file in /usr/bin/handoffd /usr/bin/handoffctl /usr/bin/handoff-desktop /usr/bin/handoff-browser-host \
  /usr/lib/systemd/user/handoffd.service /usr/lib/systemd/user/handoff-desktop.service /lib/systemd/system/handoffd@.service \
  /usr/share/man/man1/handoffctl.1.gz /usr/share/man/man1/handoff-desktop.1.gz /usr/share/man/man1/handoff-browser-host.1.gz \
  /usr/share/man/man8/handoffd.8.gz /etc/ufw/applications.d/handoff /usr/lib/firewalld/services/handoff.xml \
  /etc/xdg/autostart/handoff-desktop.desktop /usr/share/bash-completion/completions/handoffctl \
  /etc/chromium/native-messaging-hosts/org.handoff.browser.json /usr/lib/mozilla/native-messaging-hosts/org.handoff.browser.json \
  /usr/share/webext/handoff/manifest.json /usr/share/chromium/extensions/handoff/manifest.json \
  "/usr/share/mozilla/extensions/{ec8030f7-c20a-464f-9b0e-13a3a9e97384}/browser@handoff/manifest.json"; do
  check "[ -e \"\$ROOT$file\" ]" "$file"
done
check "[ -L \"\$ROOT/etc/systemd/user/default.target.wants/handoffd.service\" ]" "handoffd.service enabled for every user"
check "[ -L \"\$ROOT/etc/systemd/user/graphical-session.target.wants/handoff-desktop.service\" ]" "handoff-desktop.service enabled for every user"
for binary in handoffd handoffctl handoff-desktop handoff-browser-host; do
  check "readelf -d \"\$ROOT/usr/bin/$binary\" >\"\$ROOT/tmp/readelf\" && grep -q NEEDED \"\$ROOT/tmp/readelf\" && ! grep -q -E \"RUNPATH|RPATH\" \"\$ROOT/tmp/readelf\"" "no RUNPATH in $binary"
  check "[ \"\$(in_root $binary --version)\" = \"\$(dpkg-deb -f \"\$HANDOFF_DEB\" Version)\" ]" "$binary --version says the package version"
done
# A user of this machine runs it as the user unit would (avahi-daemon does not run in this root:
# handoffd says so and runs on), and handoffctl talks to it.
in_root useradd --create-home --shell /bin/sh reader
as_reader() { chroot --userspec=reader:reader "$ROOT" env -i HOME=/home/reader XDG_RUNTIME_DIR=/home/reader/run PATH=/usr/bin:/bin "$@"; }
as_reader mkdir -m 0700 /home/reader/run
as_reader handoffd --create-account >"$ROOT/tmp/handoffd.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do as_reader handoffctl status >/dev/null 2>&1 && break; sleep 0.1; done
check "as_reader handoffctl status --json | grep -q deviceID" "handoffd runs as a user, made an account, and handoffctl talks to it"
[ "$passed" = 1 ] || show handoffd.log
kill "$daemon" 2>/dev/null || true
wait "$daemon" 2>/dev/null || true

# The units as systemd reads them on a Debian system that runs it (minbase has no systemd; its
# systemd-analyze checks the units against the ones of that root).
DEBIAN_FRONTEND=noninteractive in_root apt-get install -y -qq --no-install-recommends systemd >/dev/null
for unit in /usr/lib/systemd/user/handoffd.service /usr/lib/systemd/user/handoff-desktop.service; do
  check "in_root env XDG_RUNTIME_DIR=/tmp systemd-analyze verify --user --man=no $unit" "systemd-analyze verify --user $unit"
done
check "in_root systemd-analyze verify --man=no /lib/systemd/system/handoffd@.service" "systemd-analyze verify /lib/systemd/system/handoffd@.service"

echo "== the extension in fresh browsers, with no action of anyone'"'"'s"
DEBIAN_FRONTEND=noninteractive in_root apt-get install -y -qq --no-install-recommends chromium firefox-esr >/dev/null
# The host, started by a browser for the extension, names it in its arguments.
host_started_for() {
  local want=$1 deadline=$((SECONDS + 90))
  while (( SECONDS < deadline )); do
    for exe in /proc/[0-9]*/exe; do
      [[ $(readlink "$exe" 2>/dev/null) == "$ROOT/usr/bin/handoff-browser-host" ]] || continue
      tr "\0" " " <"${exe%/exe}/cmdline" | grep -q -- "$want" && return 0
    done
    sleep 0.5
  done
  return 1
}
run_browser() {
  chroot --userspec=reader:reader "$ROOT" env -i HOME=/home/reader PATH=/usr/bin:/bin "$@" >"$ROOT/tmp/browser.log" 2>&1 &
  echo $!
}
# (--no-sandbox: this machine gives unprivileged users no namespaces for the sandbox of Chromium,
# which has nothing to do with extensions.)
pid=$(run_browser /usr/bin/chromium --headless=new --no-sandbox --no-first-run --user-data-dir=/home/reader/chromium about:blank)
check "host_started_for chrome-extension://nfjgjffpcjniclpafnagjdnfaanbeddb/" "Chromium (through /usr/bin/chromium, a fresh profile) runs the extension, which starts its host"
[ "$passed" = 1 ] || show browser.log
pkill -TERM -P "$pid" 2>/dev/null || true; kill "$pid" 2>/dev/null || true; sleep 2
in_root mkdir -p /home/reader/firefox; in_root chown reader:reader /home/reader/firefox
pid=$(run_browser /usr/bin/firefox-esr --headless --no-remote --profile /home/reader/firefox about:blank)
check "host_started_for browser@handoff" "Firefox ESR (a fresh profile) runs the extension, which starts its host"
[ "$passed" = 1 ] || show browser.log
pkill -TERM -P "$pid" 2>/dev/null || true; kill "$pid" 2>/dev/null || true; sleep 2
end_everything_in_root() {
  local exe pid
  for exe in /proc/[0-9]*/exe; do
    pid=${exe%/exe}; pid=${pid#/proc/}
    [[ $(readlink "$exe" 2>/dev/null) == "$ROOT"/* ]] && kill -9 "$pid" 2>/dev/null || true
  done
}
end_everything_in_root

echo "== remove, then purge"
DEBIAN_FRONTEND=noninteractive in_root apt-get remove -y -qq webext-handoff handoff >/dev/null
check "[ ! -e \"\$ROOT/usr/bin/handoffd\" ] && [ ! -e \"\$ROOT/usr/share/webext/handoff\" ] && [ ! -L \"\$ROOT/usr/share/chromium/extensions/handoff\" ] && [ ! -L \"\$ROOT/usr/share/mozilla/extensions/{ec8030f7-c20a-464f-9b0e-13a3a9e97384}/browser@handoff\" ]" "remove takes the programs and the extension"
# (Stopping what runs is the prerm'"'"'s, with systemd; there is none in this root.)
check "[ ! -e \"\$ROOT/usr/lib/systemd/user/handoffd.service\" ]" "remove takes the user units"
check "[ -e \"\$ROOT/etc/ufw/applications.d/handoff\" ]" "remove keeps the configuration files"
DEBIAN_FRONTEND=noninteractive in_root apt-get purge -y -qq webext-handoff handoff >/dev/null
left=$(cd "$ROOT" && find etc usr var -path "*handoff*" 2>/dev/null | grep -v -E "^var/(lib/dpkg|cache/apt|log)|^tmp/" || true)
check "[ -z \"\$left\" ]" "purge leaves nothing of handoff${left:+: $left}"
check "! in_root dpkg -s handoff >/dev/null 2>&1" "handoff is gone from dpkg"
end_everything_in_root
exit $failed
'
echo "== the packages install, work, and go as a Debian user expects"
