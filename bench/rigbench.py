"""Shared by the benchmarks: two simulated hosts (scripts/rig.sh) running release builds of
handoffd, paired in one account. Root only. Everything is torn down on exit."""
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RIG = os.path.join(ROOT, "scripts", "rig.sh")


def build_release():
    """Release binaries, as installed (static Swift standard library)."""
    subprocess.run(["swift", "build", "-c", "release", "--static-swift-stdlib", "--product", "handoffd"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["swift", "build", "-c", "release", "--static-swift-stdlib", "--product", "handoffctl"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    bindir = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT, check=True, capture_output=True,
                            text=True).stdout.strip()
    return bindir


def percentile(values, p):
    values = sorted(values)
    k = (len(values) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


class Pair:
    """alpha and bravo in one account, each with its own handoffd."""

    def __init__(self, bindir, hosts=("alpha", "bravo")):
        if os.geteuid() != 0:
            sys.exit("benchmarks need root (network namespaces)")
        self.bindir = bindir
        self.hosts = hosts
        self.rig = "b%d" % (os.getpid() % 100000)
        self.dir = tempfile.mkdtemp(prefix="handoff-bench-")
        self.daemons = {}
        subprocess.run([RIG, "up", self.rig, *hosts], check=True, stdout=subprocess.DEVNULL,
                       env={**os.environ, "HANDOFF_RIG_OWNER": str(os.getpid())})

    def env(self, host):
        home = os.path.join(self.dir, host)
        os.makedirs(home, exist_ok=True)
        return {"HOME": home, "XDG_RUNTIME_DIR": home + "/run", "XDG_STATE_HOME": home + "/state", "XDG_CONFIG_HOME": home + "/config",
                "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}

    def argv(self, host, args):
        return [RIG, "exec", self.rig, host, "/usr/bin/env"] + ["%s=%s" % kv for kv in self.env(host).items()] + args

    def ctl(self, host, *args, check=True):
        r = subprocess.run(self.argv(host, [os.path.join(self.bindir, "handoffctl"), *args]), capture_output=True, text=True)
        if check and r.returncode != 0:
            raise RuntimeError("handoffctl %s on %s: %s" % (args, host, r.stderr))
        return r

    def start(self):
        self.start_daemons(self.hosts)
        self.ctl("alpha", "account", "create", "--device-name", "desk")
        self.join("bravo", "alpha", name="laptop")
        self.wait_until(lambda: any(p["reachable"] for p in self.peers("bravo")["peers"]), "the pair to connect")
        self.wait_until(lambda: any(p["reachable"] for p in self.peers("alpha")["peers"]), "the pair to connect")

    def start_daemons(self, hosts):
        for host in hosts:
            log = open(os.path.join(self.dir, host + ".log"), "w")
            self.daemons[host] = subprocess.Popen(self.argv(host, [os.path.join(self.bindir, "handoffd")]), stdout=log, stderr=log)
        for host in hosts:
            for _ in range(200):
                if self.ctl(host, "status", check=False).returncode == 0:
                    break
                time.sleep(0.05)

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
            p.send_signal(signal.SIGTERM)
        for p in self.daemons.values():
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        subprocess.run([RIG, "down", self.rig], stdout=subprocess.DEVNULL)
        subprocess.run(["rm", "-rf", self.dir])


def table(rows, headers):
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]
    line = lambda r: "| " + " | ".join(str(v).ljust(w) for v, w in zip(r, widths)) + " |"
    print(line(headers))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(line(r))
