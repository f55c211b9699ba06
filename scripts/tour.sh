#!/usr/bin/env bash
# Runs README.md's tour — every command as written there — as a normal user on two simulated
# hosts, desk and laptop (scripts/rig.sh: network namespaces with their own Avahi). Needs root
# for the hosts and the user only; every command of the tour runs as that user.
#
# The README marks what to run where with a comment before each code block:
#   <!-- tour: HOST [background] [in=checkout] [until="TEXT"] [wait-for="COMMAND"] -->
#   HOST        desk or laptop
#   background  keeps running (another terminal); with until="TEXT", the tour goes on once its
#               output shows TEXT
#   in=checkout runs in the checkout (make run); otherwise in an empty directory of the user's
#   wait-for    a command that must succeed first (what a person waits for by looking)
# The invite code in the README is an example: the real one, printed by `account invite`,
# replaces it. The hosts have no desktop, so the laptop's browser is a command that notes the
# URL it was given (`browser =` in its handoffd.toml, as a user would set it).
#
# Before the marked blocks, desk runs the README's first command, `make run`. The checkout is
# built already (as root, `swift build` if needed) and is not the user's to write, so its build
# step is a no-op (MAKEFLAGS="SWIFT=true"), which is what it is for a user whose checkout is
# built; the rest of `make run` runs as written (its package check, Avahi, handoffd).
set -euo pipefail

die() { echo "tour: $*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || die "must run as root (it builds simulated hosts and a user for the tour)"
here=$(cd "$(dirname "$0")" && pwd)
checkout=$(cd "$here/.." && pwd)
readme=$checkout/README.md
bin=$checkout/.build/debug
if [[ ! -x $bin/handoffd || ! -x $bin/handoffctl ]]; then
  (cd "$checkout" && swift build --product handoffd && swift build --product handoffctl) >&2
fi

work=$(mktemp -d /tmp/handoff-tour-XXXXXX)
chmod 0755 "$work"
user=hoftour$$
rig=t$(head -c 64 /dev/urandom | tr -dc 'a-z0-9' | head -c 7)
cleanup() {
  [[ -n ${TOUR_KEEP:-} ]] || "$here/rig.sh" down "$rig" >/dev/null 2>&1 || true
  userdel --force "$user" >/dev/null 2>&1 || true
  [[ -n ${TOUR_KEEP:-} ]] || rm -rf "$work"
}
trap cleanup EXIT

useradd --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin --user-group --comment "handoff tour" "$user"
uid=$(id -u "$user")
gid=$(id -g "$user")

# The user must be able to run the binaries: a checkout under /root is closed to others.
if ! setpriv --reuid="$uid" --regid="$gid" --init-groups test -x "$bin/handoffctl" 2>/dev/null; then
  mkdir -p "$work/bin"
  cp "$bin/handoffd" "$bin/handoffctl" "$work/bin/"
  chmod 0755 "$work/bin" "$work/bin/handoffd" "$work/bin/handoffctl"
  bin=$work/bin
fi

HANDOFF_RIG_OWNER=$$ "$here/rig.sh" up "$rig" desk laptop >/dev/null
for host in desk laptop; do
  install -d -o "$user" -g "$gid" -m 0700 "$work/$host" "$work/$host/run" "$work/$host/tour"
done
# The laptop's browser: notes the URL, as a browser would open it.
cat >"$work/browser" <<EOF
#!/bin/sh
echo "\$@" >> "$work/laptop/opened-in-browser"
EOF
chmod 0755 "$work/browser"
install -d -o "$user" -g "$gid" "$work/laptop/.config" "$work/laptop/.config/handoff"
printf 'browser = "%s"\nlog_level = "debug"\n' "$work/browser" >"$work/laptop/.config/handoff/handoffd.toml"
chown "$user:$gid" "$work/laptop/.config/handoff/handoffd.toml"

# Runs CMD as the user on HOST in DIR, with the environment of their login: their HOME and
# XDG_RUNTIME_DIR, and handoffctl on PATH as the README says.
as_user() {
  local host=$1 dir=$2 command=$3
  "$here/rig.sh" exec "$rig" "$host" setpriv --reuid="$uid" --regid="$gid" --init-groups \
    env -i HOME="$work/$host" USER="$user" LOGNAME="$user" SHELL=/bin/bash LANG=C.UTF-8 TERM=dumb \
    PATH="$bin:/usr/local/bin:/usr/bin:/bin" XDG_RUNTIME_DIR="$work/$host/run" \
    MAKEFLAGS="SWIFT=true BIN_DEBUG=$bin" \
    bash -c "cd '$dir' && $command"
}

wait_until() {  # wait_until SECONDS WHAT COMMAND…
  local seconds=$1 what=$2
  shift 2
  for _ in $(seq $((seconds * 10))); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  die "timed out after ${seconds}s waiting for $what"
}

echo "== desk: make run" >&2
as_user desk "$checkout" "make run" >"$work/desk-make-run.out" 2>&1 &
wait_until 60 "handoffd on desk" as_user desk "$work/desk/tour" "handoffctl status"
grep -q "export PATH=" "$work/desk-make-run.out" || die "make run did not say where handoffctl is"

# The marked blocks, in order: a .meta and a .sh file each.
mkdir -p "$work/blocks"
awk -v out="$work/blocks" '
  /^<!-- tour: .* -->$/ { meta = $0; sub(/^<!-- tour: /, "", meta); sub(/ -->$/, "", meta); pending = 1; next }
  pending && /^```sh$/ { n++; file = sprintf("%s/%02d", out, n); print meta > (file ".meta"); inblock = 1; pending = 0; next }
  inblock && /^```$/ { inblock = 0; close(file ".sh"); close(file ".meta"); next }
  inblock { print > (file ".sh") }
' "$readme"
ls "$work"/blocks/*.sh >/dev/null 2>&1 || die "README.md has no tour blocks"

code=""
for block in "$work"/blocks/*.sh; do
  meta=$(cat "${block%.sh}.meta")
  host=${meta%% *}
  [[ $host == desk || $host == laptop ]] || die "unknown host in: $meta"
  dir=$work/$host/tour
  [[ $meta == *"in=checkout"* ]] && dir=$checkout
  script=$(cat "$block")
  # The README's example invite code stands for the one account invite printed.
  if [[ -n $code ]]; then
    script=$(sed -E "s/[0-9A-Z]{4}(-[0-9A-Z]{4}){6}/$code/g" <<<"$script")
  fi
  if [[ $meta =~ wait-for=\"([^\"]*)\" ]]; then
    wait_until 60 "${BASH_REMATCH[1]} on $host" as_user "$host" "$dir" "${BASH_REMATCH[1]}"
  fi
  echo "== $host${meta#"$host"}" >&2
  sed 's/^/   $ /' <<<"$script" >&2
  if [[ $meta == *background* ]]; then
    as_user "$host" "$dir" "set -e; $script" >"${block%.sh}.out" 2>&1 &
    if [[ $meta =~ until=\"([^\"]*)\" ]]; then
      until=${BASH_REMATCH[1]}
      if ! (wait_until 60 "\"$until\" from: $script" grep -qF "$until" "${block%.sh}.out"); then
        tail -40 "${block%.sh}.out" >&2
        die "\"$until\" never came"
      fi
    fi
    found=$(grep -oE '[0-9A-Z]{4}(-[0-9A-Z]{4}){6}' "${block%.sh}.out" | head -1 || true)
    [[ -n $found ]] && code=$found
  else
    if ! as_user "$host" "$dir" "set -e; $script" >"${block%.sh}.out" 2>&1; then
      sed 's/^/     /' "${block%.sh}.out" >&2
      die "this block failed on $host"
    fi
    sed 's/^/     /' "${block%.sh}.out" >&2
  fi
done

# What the tour promised, checked: the film arrived whole, the web page reached the browser.
cmp -s "$work/desk/tour/holiday.mkv" "$work/laptop/tour/holiday.mkv" || die "holiday.mkv on the laptop is not the desk's"
grep -q "https://example.com/r" "$work/laptop/opened-in-browser" || die "continue did not open the web page"
echo "tour: the README's tour passed, as $user on desk and laptop" >&2
