#!/usr/bin/env python3
"""A stranger's forged `_handoff._tcp` adverts, as raw multicast DNS (RFC 6762) from this host.

Used by the end-to-end tests (HostileNetworkTests) and by hand on a simulated host
(scripts/rig.sh exec RIG HOST python3 scripts/forge-adverts.py ...). Needs no privilege, but port
5353 to itself (RFC 6762: responses from other ports are ignored), so the host's own avahi-daemon
is stopped first (the attacker owns that machine). It announces, every few seconds, COUNT
service instances with random names and random handoff-looking TXT records, all pointing at one
forged host name with this host's address. With --copy-txt it also announces COPIES instances
whose TXT is a byte-for-byte copy of a member's (given as `key=value` strings, as avahi-browse
prints them), and with --copy-name one instance under the member's own instance name.

    forge-adverts.py --address 169.254.77.3 --count 1000 [--copy-txt 'v=1' 't=…' 's0=…'
                     [--copies 50] [--copy-name NAME]] [--interval 5] [--seconds 0 (until killed)]
"""
import argparse
import base64
import os
import random
import socket
import string
import struct
import sys
import time

GROUP = ("224.0.0.251", 5353)
SERVICE = "_handoff._tcp.local"
TTL = 120
CACHE_FLUSH = 0x8000


def name(text):
    out = b""
    for label in text.rstrip(".").split("."):
        raw = label.encode()
        out += bytes([len(raw)]) + raw
    return out + b"\x00"


def record(owner, rtype, rdata, flush):
    klass = 1 | (CACHE_FLUSH if flush else 0)
    return name(owner) + struct.pack("!HHIH", rtype, klass, TTL, len(rdata)) + rdata


def txt_rdata(strings):
    out = b""
    for s in strings:
        raw = s.encode()[:255]
        out += bytes([len(raw)]) + raw
    return out or b"\x00"


def instance_records(instance, host, port, txt):
    full = f"{instance}.{SERVICE}"
    return [
        record(SERVICE, 12, name(full), flush=False),
        record(full, 33, struct.pack("!HHH", 0, 0, port) + name(host), flush=True),
        record(full, 16, txt_rdata(txt), flush=True),
    ]


def random_label(n=16):
    return "".join(random.choice(string.ascii_lowercase + "234567") for _ in range(n))


def random_txt():
    b64 = lambda n: base64.urlsafe_b64encode(os.urandom(n)).decode().rstrip("=")
    return ["v=1", "t=" + b64(16), "s0=" + b64(random.randint(60, 140))]


def packets(records, extra):
    """Responses of at most ~1400 bytes, each with the host's address record."""
    packet, count = [], 0
    for r in records:
        if packet and sum(map(len, packet)) + len(r) + len(extra) > 1400:
            yield packet + [extra]
            packet = []
        packet.append(r)
    if packet:
        yield packet + [extra]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--address", required=True, help="this host's IPv4 address (the forged host's)")
    p.add_argument("--count", type=int, default=1000)
    p.add_argument("--copy-txt", nargs="*", default=[])
    p.add_argument("--copies", type=int, default=50)
    p.add_argument("--copy-name")
    p.add_argument("--port", type=int, default=47810)
    p.add_argument("--interval", type=float, default=5)
    p.add_argument("--seconds", type=float, default=0)
    a = p.parse_args()

    host = f"forged-{random_label(8)}.local"
    records = []
    for _ in range(a.count):
        records += instance_records(random_label(), host, a.port, random_txt())
    if a.copy_txt:
        for _ in range(a.copies):
            records += instance_records(random_label(), host, a.port, a.copy_txt)
        if a.copy_name:
            records += instance_records(a.copy_name, host, a.port, a.copy_txt)
    address = record(host, 1, socket.inet_aton(a.address), flush=True)

    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("", 5353))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 255)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(a.address))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 0)

    batches = list(packets(records, address))
    print(f"forging {a.count} random and {a.copies if a.copy_txt else 0} copied adverts in {len(batches)} packets", flush=True)
    end = time.monotonic() + a.seconds if a.seconds > 0 else None
    while end is None or time.monotonic() < end:
        for batch in batches:
            body = b"".join(batch)
            header = struct.pack("!HHHHHH", 0, 0x8400, 0, len(batch), 0, 0)
            try:
                s.sendto(header + body, GROUP)
            except OSError as e:
                print(f"send: {e}", file=sys.stderr, flush=True)
            time.sleep(0.002)  # avahi-daemon rate-limits a flood from one source; so do we
        time.sleep(a.interval)


if __name__ == "__main__":
    main()
