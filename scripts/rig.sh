#!/usr/bin/env bash
# Simulated hosts for end-to-end tests and benchmarks (docs/platform.md, "This machine"):
# each host is a network namespace on a private bridge, with its own persistent mount and UTS
# namespaces holding its own D-Bus system bus and avahi-daemon. Link-local addresses and no
# default route: nothing leaves the machine. Needs root.
#
#   rig.sh up RIG HOST...      create the bridge and hosts (RIG: a short unique name, e.g. hof12345);
#                              with RIG_IP=6 the link is IPv6 only, link-local addresses only
#                              (as many home networks' second stack), Avahi on IPv6 only; with
#                              RIG_IP=46 it carries both, and Avahi answers on both.
#                              HOST@2 puts a host on a second subnet: the rig is then two links
#                              (10.77.1.0/24 and 10.77.2.0/24, a bridge each) joined by a router
#                              namespace (RIG-gw, .254 on each) that forwards unicast IPv4 and
#                              nothing multicast, and each host routes through it
#   rig.sh exec RIG HOST CMD…  run CMD inside HOST (network, mounts, host name); it keeps this
#                              script's pid, so `rig.sh exec … &` then `$!` is CMD's pid
#   rig.sh avahi RIG HOST stop|start|restart|crash   (crash: SIGKILL, then start again)
#   rig.sh addr RIG HOST       print HOST's IPv4 address (on an IPv6-only link, its link-local one)
#   rig.sh addr6 RIG HOST      print HOST's IPv6 link-local address, with its interface (fe80::…%eth0)
#   rig.sh down RIG            stop everything and remove every namespace and file of RIG
#   rig.sh sweep               take down rigs whose creator (HANDOFF_RIG_OWNER pid at `up`) is gone
set -euo pipefail

die() { echo "rig: $*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || die "must run as root (network namespaces, mounts)"
for tool in ip unshare nsenter dbus-daemon avahi-daemon; do
  command -v "$tool" >/dev/null || die "$tool is missing (scripts/install-deps.sh test)"
done

cmd=${1:-}; rig=${2:-}
if [[ $cmd == sweep ]]; then
  # A test run that crashed never took its rigs down; namespaces outlive processes.
  for dir in /run/handoff-rig/*/; do
    [[ -d $dir ]] || continue
    owner=$(cat "$dir/owner" 2>/dev/null || echo 0)
    # Gone, or a zombie (kill -0 would still succeed on one).
    state=$(ps -o stat= -p "$owner" 2>/dev/null || true)
    if [[ $owner -gt 0 && ( -z $state || $state == Z* ) ]]; then
      "$0" down "$(basename "$dir")"
    fi
  done
  exit 0
fi
[[ -n $cmd && -n $rig ]] || die "usage: rig.sh up|exec|avahi|addr|addr6|down|sweep RIG ..."
[[ $rig =~ ^[a-z0-9]{1,9}$ ]] || die "RIG must be 1-9 lower-case letters or digits (interface names are short)"
shift 2
root=/run/handoff-rig/$rig
bridge_ns=$rig-br

host_index() { cat "$root/$1/index"; }

in_host() {
  local host=$1; shift
  nsenter --net="/run/netns/$rig-$host" --mount="$root/$host/mnt" --uts="$root/$host/uts" --wd="$PWD" "$@"
}

# Like in_host, but replacing this shell: the caller's $! is then the command's own pid.
exec_in_host() {
  local host=$1; shift
  exec nsenter --net="/run/netns/$rig-$host" --mount="$root/$host/mnt" --uts="$root/$host/uts" --wd="$PWD" "$@"
}

start_avahi() {
  local host=$1 dir=$root/$1
  : >"$dir/avahi.log"
  # exec all the way down, so that $! is avahi-daemon's own pid.
  # A pid file left by one we stopped names a process that may linger as a zombie (PID 1 here
  # reaps lazily), which avahi-daemon would take for itself still running.
  (exec_in_host "$host" sh -c 'mkdir -p /run/avahi-daemon && chown avahi:avahi /run/avahi-daemon 2>/dev/null; rm -f /run/avahi-daemon/pid; exec avahi-daemon -f "$1" --no-chroot --no-rlimits' _ "$dir/avahi.conf") \
    >>"$dir/avahi.log" 2>&1 &
  echo $! >"$dir/avahi.pid"
  for _ in $(seq 100); do
    grep -q "Server startup complete" "$dir/avahi.log" && return 0
    kill -0 "$(cat "$dir/avahi.pid")" 2>/dev/null || break
    sleep 0.05
  done
  cat "$dir/avahi.log" >&2
  die "avahi-daemon on $host did not start"
}

stop_pid() {
  local file=$1 signal=${2:-TERM}
  [[ -f $file ]] || return 0
  local pid; pid=$(cat "$file")
  if kill -0 "$pid" 2>/dev/null; then
    kill -s "$signal" "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.02; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$file"
}

case $cmd in
up)
  [[ $# -ge 1 ]] || die "up needs at least one host"
  [[ ! -e $root ]] || die "rig $rig exists already (rig.sh down $rig)"
  mkdir -p "$root"
  echo "${HANDOFF_RIG_OWNER:-0}" >"$root/owner"
  family=${RIG_IP:-4}
  [[ $family == 4 || $family == 6 || $family == 46 ]] || die "RIG_IP is 4 (the default), 6 or 46"
  echo "$family" >"$root/family"
  # The files that pin mount/UTS namespaces must live on a private mount.
  mount --bind "$root" "$root"
  mount --make-private "$root"
  ip netns add "$bridge_ns"
  ip -n "$bridge_ns" link add br0 type bridge
  ip -n "$bridge_ns" link set br0 type bridge mcast_snooping 0
  ip -n "$bridge_ns" link set br0 up
  ip -n "$bridge_ns" link set lo up
  routed=0
  if [[ " $* " == *@2* ]]; then routed=1; fi
  if [[ $routed == 1 ]]; then
    [[ $family == 4 ]] || die "a rig of two subnets is IPv4 only"
    echo 1 >"$root/routed"
    ip -n "$bridge_ns" link add br1 type bridge
    ip -n "$bridge_ns" link set br1 type bridge mcast_snooping 0
    ip -n "$bridge_ns" link set br1 up
    # The router: plain forwarding. The kernel routes no multicast without a multicast routing
    # daemon, and mDNS (224.0.0.251, TTL 255, link-local by definition) never crosses it.
    ip netns add "$rig-gw"
    ip netns exec "$rig-gw" sysctl -qw net.ipv4.ip_forward=1
    ip -n "$rig-gw" link set lo up
    for subnet in 1 2; do
      ip link add "g$rig$subnet" type veth peer name "net$subnet" netns "$rig-gw"
      ip link set "g$rig$subnet" netns "$bridge_ns"
      ip -n "$bridge_ns" link set "g$rig$subnet" master "br$((subnet - 1))" up
      ip -n "$rig-gw" addr add "10.77.$subnet.254/24" dev "net$subnet"
      ip -n "$rig-gw" link set "net$subnet" up
    done
  fi
  index=0
  for spec in "$@"; do
    host=${spec%@*}
    subnet=1
    if [[ $spec == *@* ]]; then subnet=${spec#*@}; fi
    [[ $subnet == 1 || $subnet == 2 ]] || die "a host's subnet is @1 or @2: $spec"
    [[ $host =~ ^[a-z][a-z0-9]{0,7}$ && $host != gw && $host != br ]] || die "host names are 1-8 lower-case letters/digits, not gw or br: $host"
    index=$((index + 1))
    dir=$root/$host
    mkdir -p "$dir"
    echo "$index" >"$dir/index"
    ip netns add "$rig-$host"
    # Addresses usable at once: no duplicate-address detection on this private link (an
    # interface created below takes the namespace's defaults). An IPv4 link has no IPv6 at all:
    # else Avahi would publish the link-local IPv6 addresses too, and sessions would use them.
    # A kernel without IPv6 (ipv6.disable=1) has none of these: only a rig with IPv6 needs them.
    ip netns exec "$rig-$host" sh -c "sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 net.ipv6.conf.default.disable_ipv6=$([[ $family == 4 ]] && echo 1 || echo 0)" 2>/dev/null \
      || [ "$family" == 4 ] || die "this kernel has IPv6 disabled; a rig with IPv6 (RIG_IP=6 or 46) needs it"
    ip link add "v$rig$index" type veth peer name eth0 netns "$rig-$host"
    ip link set "v$rig$index" netns "$bridge_ns"
    ip -n "$bridge_ns" link set "v$rig$index" master "br$((subnet - 1))" up
    ip -n "$rig-$host" link set lo up
    if [[ $routed == 1 ]]; then
      echo "10.77.$subnet.$index" >"$dir/addr"
      ip -n "$rig-$host" addr add "10.77.$subnet.$index/24" dev eth0
    elif [[ $family != 6 ]]; then
      ip -n "$rig-$host" addr add "169.254.77.$index/24" dev eth0
    fi
    ip -n "$rig-$host" link set eth0 up multicast on
    if [[ $routed == 1 ]]; then ip -n "$rig-$host" route add default via "10.77.$subnet.254"; fi
    touch "$dir/mnt" "$dir/uts"
    # A persistent mount namespace (private /run/dbus, /run/avahi-daemon, a /sys of this netns)
    # and UTS namespace (its own host name).
    nsenter --net="/run/netns/$rig-$host" unshare --mount="$dir/mnt" --uts="$dir/uts" --propagation private \
      sh -c 'mount -t tmpfs tmpfs /run/dbus 2>/dev/null || { mkdir -p /run/dbus && mount -t tmpfs tmpfs /run/dbus; }
             mkdir -p /run/avahi-daemon && mount -t tmpfs tmpfs /run/avahi-daemon
             umount -l /sys 2>/dev/null; mount -t sysfs sysfs /sys
             hostname "$1"' _ "$host"
    cat >"$dir/avahi.conf" <<EOF
[server]
host-name=$host
use-ipv4=$([[ $family != 6 ]] && echo yes || echo no)
use-ipv6=$([[ $family != 4 ]] && echo yes || echo no)
allow-interfaces=eth0
enable-dbus=yes
disallow-other-stacks=yes
[wide-area]
enable-wide-area=no
[publish]
publish-workstation=no
publish-hinfo=no
[reflector]
enable-reflector=no
EOF
    (exec_in_host "$host" dbus-daemon --system --nofork --nopidfile) >"$dir/dbus.log" 2>&1 &
    echo $! >"$dir/dbus.pid"
    # Ready once others may connect: dbus-daemon binds the socket first and opens its mode after,
    # and avahi-daemon (as the avahi user) connecting in between is refused (seen in CI).
    for _ in $(seq 100); do
      [[ -n $(in_host "$host" find /run/dbus/system_bus_socket -type s -perm -0002 2>/dev/null) ]] && break
      sleep 0.02
    done
    start_avahi "$host"
  done
  ;;
exec)
  host=${1:?host}; shift
  exec_in_host "$host" "$@"
  ;;
avahi)
  host=${1:?host}; action=${2:?stop|start|restart}
  case $action in
  stop) stop_pid "$root/$host/avahi.pid" ;;
  start) start_avahi "$host" ;;
  restart) stop_pid "$root/$host/avahi.pid"; start_avahi "$host" ;;
  crash) stop_pid "$root/$host/avahi.pid" KILL; start_avahi "$host" ;;  # no goodbye, then back
  *) die "avahi stop|start|restart|crash" ;;
  esac
  ;;
addr)
  if [[ -f $root/${1:?host}/addr ]]; then
    cat "$root/$1/addr"
    exit 0
  fi
  if [[ $(cat "$root/family" 2>/dev/null || echo 4) == 6 ]]; then
    exec "$0" addr6 "$rig" "${1:?host}"
  fi
  echo "169.254.77.$(host_index "${1:?host}")"
  ;;
addr6)
  host=${1:?host}
  for _ in $(seq 100); do
    link=$(ip -n "$rig-$host" -6 -o addr show dev eth0 scope link | awk '{print $4}' | cut -d/ -f1 | head -1)
    [[ -n $link ]] && { echo "$link%eth0"; exit 0; }
    sleep 0.02
  done
  die "no IPv6 link-local address on $host"
  ;;
down)
  [[ -d $root ]] || exit 0
  # Whatever still runs inside the rig (daemons under test, captures) goes first.
  for ns in $(ip netns list | awk '{print $1}' | grep "^$rig-"); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
  done
  sleep 0.2
  for ns in $(ip netns list | awk '{print $1}' | grep "^$rig-"); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
  done
  for dir in "$root"/*/; do
    [[ -f $dir/index ]] || continue
    host=$(basename "$dir")
    stop_pid "$dir/avahi.pid"
    stop_pid "$dir/dbus.pid"
    umount "$dir/mnt" 2>/dev/null || umount -l "$dir/mnt" 2>/dev/null || true
    umount "$dir/uts" 2>/dev/null || umount -l "$dir/uts" 2>/dev/null || true
    ip netns del "$rig-$host" 2>/dev/null || true
  done
  ip netns del "$rig-gw" 2>/dev/null || true
  ip netns del "$bridge_ns" 2>/dev/null || true
  umount "$root" 2>/dev/null || umount -l "$root" 2>/dev/null || true
  rm -rf "$root"
  ;;
*)
  die "unknown command $cmd"
  ;;
esac
