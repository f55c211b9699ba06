"""Shared by the benchmarks: two simulated hosts (scripts/rig.sh) running release builds of
handoffd, paired in one account. Root only, to build the namespaces: every handoffd and handoffctl
runs as an unprivileged user made for the run (as users run them). Everything is torn down on exit.

BINDIR=<dir> benchmarks the handoffd and handoffctl in that directory instead of building this
checkout (e.g. an older commit's release build, for a before/after table)."""
import json
import socket
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RIG = os.path.join(ROOT, "scripts", "rig.sh")


def build_release(products=("handoffd", "handoffctl")):
    """Release binaries, as installed (static Swift standard library)."""
    if os.environ.get("BINDIR"):
        return os.path.abspath(os.environ["BINDIR"])
    for product in products:
        subprocess.run(["swift", "build", "-c", "release", "--static-swift-stdlib", "--product", product], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
    bindir = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT, check=True, capture_output=True,
                            text=True).stdout.strip()
    return bindir


def percentile(values, p):
    values = sorted(values)
    k = (len(values) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def local_api(socket_path, method, path, body):
    """One HTTP request with a JSON body on a handoffd's local-API Unix socket (no CLI start is
    counted); returns the status."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(socket_path)
    data = json.dumps(body).encode()
    s.sendall(b"%s %s HTTP/1.1\r\nHost: handoffd\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
              % (method.encode(), path.encode(), len(data), data))
    answer = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        answer += chunk
    s.close()
    return int(answer.split(b" ", 2)[1])


class Pair:
    """alpha and bravo in one account, each with its own handoffd."""

    def __init__(self, bindir, hosts=("alpha", "bravo"), rig_hosts=None):
        """`rig_hosts`: rig.sh's host list when it differs from `hosts` (more hosts, or
        `HOST@2` on a second subnet)."""
        if os.geteuid() != 0:
            sys.exit("benchmarks need root (network namespaces)")
        self.bindir = bindir
        self.hosts = hosts
        self.rig = "b%d" % (os.getpid() % 100000)
        self.dir = tempfile.mkdtemp(prefix="handoff-bench-")
        self.daemons = {}
        os.chmod(self.dir, 0o755)
        # Daemons and commands run as a normal user, as they do for users.
        self.user = "hofb%d" % os.getpid()
        subprocess.run(["/usr/sbin/useradd", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin",
                        "--user-group", "--comment", "handoff benchmark", self.user], check=True)
        import pwd
        entry = pwd.getpwnam(self.user)
        self.uid, self.gid = entry.pw_uid, entry.pw_gid
        subprocess.run([RIG, "up", self.rig, *(rig_hosts or hosts)], check=True, stdout=subprocess.DEVNULL,
                       env={**os.environ, "HANDOFF_RIG_OWNER": str(os.getpid())})

    def env(self, host):
        home = os.path.join(self.dir, host)
        if not os.path.isdir(home):
            os.makedirs(home + "/run", mode=0o700)
            for path in (home, home + "/run"):
                os.chown(path, self.uid, self.gid)
        return {"HOME": home, "XDG_RUNTIME_DIR": home + "/run", "USER": self.user, "LANG": "C.UTF-8", "PATH": "/usr/local/bin:/usr/bin:/bin"}

    def argv(self, host, args):
        """`args` inside `host` as the benchmark's user; every exec keeps the pid (rig.sh exec,
        setpriv, env), so a Popen's pid is the command's own."""
        user = ["/usr/bin/setpriv", "--reuid=%d" % self.uid, "--regid=%d" % self.gid, "--init-groups", "--inh-caps=-all", "--bounding-set=-all"]
        return [RIG, "exec", self.rig, host] + user + ["/usr/bin/env", "-i"] + ["%s=%s" % kv for kv in self.env(host).items()] + args

    def write(self, path, text, mode=0o644):
        """A file of the benchmark's user (under `dir`), and the directories made for it."""
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)
        p = path
        while p.startswith(self.dir + "/"):
            os.chown(p, self.uid, self.gid)
            p = os.path.dirname(p)

    def ctl(self, host, *args, check=True):
        r = subprocess.run(self.argv(host, [os.path.join(self.bindir, "handoffctl"), *args]), capture_output=True, text=True)
        if check and r.returncode != 0:
            raise RuntimeError("handoffctl %s on %s: %s" % (args, host, r.stderr))
        return r

    def start(self):
        self.start_daemons(self.hosts)
        self.ctl("alpha", "account", "create", "--device-name", "desk")
        self.join("bravo", "alpha", name="laptop")
        for host in ("bravo", "alpha"):
            self.lists_the_other(host, seconds=30)

    def start_daemons(self, hosts, wait=True, stamp=False):
        """`stamp`: the log gets "exec SECONDS" just before handoffd's exec (`exec_time`)."""
        for host in hosts:
            log = open(os.path.join(self.dir, host + ".log"), "a")
            daemon = [os.path.join(self.bindir, "handoffd")]
            if stamp:
                daemon = ["/bin/bash", "-c", 'printf "exec %s\\n" "$EPOCHREALTIME"; exec "$@"', "bash"] + daemon
            self.daemons[host] = subprocess.Popen(self.argv(host, daemon), stdout=log, stderr=log)
        for host in hosts if wait else ():
            self.wait_for_daemon(host)

    def exec_time(self, host, after):
        """When handoffd was exec'd on `host` (the latest start with `stamp` after `after`)."""
        with open(os.path.join(self.dir, host + ".log")) as f:
            stamps = [float(line.split()[1]) for line in f if line.startswith("exec ")]
        return max(t for t in stamps if t >= after)

    def wait_for_daemon(self, host):
        for _ in range(200):
            if self.ctl(host, "status", check=False).returncode == 0:
                return
            time.sleep(0.05)
        raise RuntimeError("handoffd on %s did not start" % host)

    def stop_daemon(self, host, sig=signal.SIGTERM):
        p = self.daemons[host]
        p.send_signal(sig)
        p.wait(timeout=15)  # on a timeout it stays listed, and close() kills it
        del self.daemons[host]

    def join(self, host, inviter, name=None, peer=None):
        """`host` joins `inviter`'s account (found by its advert, or at `peer`)."""
        invite = subprocess.Popen(self.argv(inviter, [os.path.join(self.bindir, "handoffctl"), "account", "invite"]),
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        code = invite.stdout.readline().strip()
        args = ["account", "join", code, "--device-name", name or host] + (["--peer", peer] if peer else [])
        self.ctl(host, *args)
        invite.wait(timeout=30)

    def address(self, host):
        return subprocess.run([RIG, "addr", self.rig, host], check=True, capture_output=True, text=True).stdout.strip()

    def lists_the_other(self, host, seconds=60):
        """Polls until `host` lists another device reachable."""
        self.wait_until(lambda: self.reaches_the_other(host), host + " to list the other", seconds=seconds)

    def reaches_the_other(self, host):
        return any(p["reachable"] for p in self.peers(host)["peers"])

    def peers(self, host):
        return json.loads(self.ctl(host, "peers", "--json").stdout)

    @staticmethod
    def wait_until(condition, what, seconds=30):
        deadline = time.time() + seconds
        while not condition():
            if time.time() > deadline:
                raise RuntimeError("timed out waiting for " + what)
            time.sleep(0.05)

    def close(self):
        for p in self.daemons.values():
            p.send_signal(signal.SIGCONT)  # a bench may have stopped it (SIGSTOP): it must run to end
            p.send_signal(signal.SIGTERM)
        for p in self.daemons.values():
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        subprocess.run([RIG, "down", self.rig], stdout=subprocess.DEVNULL)
        subprocess.run(["rm", "-rf", self.dir])
        subprocess.run(["/usr/sbin/userdel", "--force", self.user], stderr=subprocess.DEVNULL)


def seconds(rfc3339):
    return datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp()


class Watcher:
    """`handoffctl watch --json` on one host: when it said the other device became reachable or
    not (event times, by the daemon's clock)."""

    def __init__(self, pair, host):
        self.events = []
        self.cond = threading.Condition()
        self.process = subprocess.Popen(pair.argv(host, [os.path.join(pair.bindir, "handoffctl"), "watch", "--json"]),
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for line in self.process.stdout:
            event = json.loads(line)
            if event.get("event") == "peerChanged":
                with self.cond:
                    self.events.append((seconds(event["at"]), event["peer"]["reachable"]))
                    self.cond.notify_all()

    def wait(self, reachable, after, timeout=30):
        """The time of the first event after `after` saying `reachable`."""
        found = lambda: next((at for at, r in self.events if at > after and r == reachable), None)
        with self.cond:
            self.cond.wait_for(lambda: found() is not None, timeout=timeout)
            at = found()
        if at is None:
            raise RuntimeError("no peerChanged(reachable=%s) within %d s" % (reachable, timeout))
        return at

    def stop(self):
        self.process.terminate()
        self.process.wait()


def summary(name, samples):
    if not samples:
        return [name, "0", "-", "-", "-", "-"]
    return [name, str(len(samples)), "%.0f" % percentile(samples, 50), "%.0f" % percentile(samples, 95),
            "%.0f" % min(samples), "%.0f" % max(samples)]


class Usage:
    """What a process costs, read from /proc (all its threads)."""

    def __init__(self, pid):
        self.pid = pid

    def thread_switches(self):
        """{tid: (name, context switches, voluntary and not)} of every thread now: each is a
        wakeup (or a preemption)."""
        out = {}
        for tid in os.listdir("/proc/%d/task" % self.pid):
            try:
                with open("/proc/%d/task/%s/status" % (self.pid, tid)) as f:
                    fields = dict(line.split(":", 1) for line in f if ":" in line)
                out[tid] = (fields["Name"].strip(),
                            int(fields["voluntary_ctxt_switches"]) + int(fields["nonvoluntary_ctxt_switches"]))
            except (FileNotFoundError, ProcessLookupError):
                pass
        return out

    def watch_switches(self, seconds, interval=0.5):
        """Context switches during `seconds`, per thread name, all threads, those that start or
        end within the window too (sampled every `interval`: a thread that lives shorter than
        that is missed, and counted in `threads_started`)."""
        first = self.thread_switches()
        last = dict(first)
        end = time.time() + seconds
        while time.time() < end:
            time.sleep(interval)
            last.update(self.thread_switches())
        by_name = {}
        for tid, (name, count) in last.items():
            by_name[name] = by_name.get(name, 0) + count - first.get(tid, (name, 0))[1]
        return by_name, len(set(last) - set(first))

    def threads(self):
        return len(os.listdir("/proc/%d/task" % self.pid))

    def cpu_ms(self):
        with open("/proc/%d/stat" % self.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")

    def memory_kb(self):
        """smaps_rollup: Rss, Pss, Anonymous, Pss_Anon, Pss_File (kB)."""
        out = {}
        with open("/proc/%d/smaps_rollup" % self.pid) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[2] == "kB":
                    out[parts[0].rstrip(":")] = int(parts[1])
        return out

    def resident_by_file(self):
        """{mapped file or [anon]/[heap]/[stack]: resident kB}, from smaps."""
        out, name = {}, None
        with open("/proc/%d/smaps" % self.pid) as f:
            for line in f:
                parts = line.split()
                if "-" in parts[0] and len(parts[0]) > 8 and ":" not in parts[0]:
                    name = parts[5] if len(parts) > 5 else "[anon]"
                elif parts[0] == "Rss:":
                    out[name] = out.get(name, 0) + int(parts[1])
        return out

    def fds(self):
        return len(os.listdir("/proc/%d/fd" % self.pid))


def table(rows, headers):
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]
    line = lambda r: "| " + " | ".join(str(v).ljust(w) for v, w in zip(r, widths)) + " |"
    print(line(headers))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(line(r))
