#!/usr/bin/env python3
"""What stays the same of one device across a rotation, as anyone on the link sees it.

    stable-strings.py --device IP[,IP…] --reference IP[,IP…] [--reference-bytes FILE…]
                      --round PCAP[:TRANSCRIPT] --round PCAP[:TRANSCRIPT]

For each round (a capture of the link, and optionally `openssl s_client -msg` output of a
stranger's connection to the device), it collects what the device sent: every TCP payload, and of
its mDNS packets the records about `_handoff._tcp` — not Avahi's own host records (A/AAAA, the
reverse names, the SRV target), which name the host by design. Protocol constants are what the reference holds — what another account's device sent on the same
link, and `--reference-bytes` (e.g. a handshake between two devices of an unrelated account):
every byte of the device's that lies in a 6-byte string the reference also has is a constant.
What is left are the varying runs of bytes; it prints, one per line in hex, every 8-byte string of
a varying run found in what the device sent in *every* round. So a window is never a few random
bytes beside constants (`v=1`, a length, `t=` and two characters of a random tag matched once in
4096 rounds by chance): only 8 varying bytes that repeat are an identifier. What it cannot see
is an identifier shorter than that, or one that shares 6 bytes with the reference; handoff's own
(device ids, instance names, tags, salts, nonces) are all longer. Nothing printed: nothing stable. Exit status 0 either way; 2 on unreadable input.
"""

import argparse
import ipaddress
import struct
import sys

WINDOW = 8


def packets(path):
    """(source address, protocol, source port, destination port, payload) of each packet."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        return
    magic = struct.unpack("<I", data[:4])[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    offset = 24
    while offset + 16 <= len(data):
        _, _, caplen, _ = struct.unpack(endian + "IIII", data[offset:offset + 16])
        frame = data[offset + 16:offset + 16 + caplen]
        offset += 16 + caplen
        if linktype == 1:  # Ethernet
            if len(frame) < 14:
                continue
            ethertype = struct.unpack("!H", frame[12:14])[0]
            ip = frame[14:]
        elif linktype == 113:  # Linux cooked capture
            if len(frame) < 16:
                continue
            ethertype = struct.unpack("!H", frame[14:16])[0]
            ip = frame[16:]
        else:
            continue
        if ethertype == 0x0800 and len(ip) >= 20:
            header = (ip[0] & 0x0F) * 4
            proto, source = ip[9], str(ipaddress.IPv4Address(ip[12:16]))
            body = ip[header:struct.unpack("!H", ip[2:4])[0]]
        elif ethertype == 0x86DD and len(ip) >= 40:
            proto, source = ip[6], str(ipaddress.IPv6Address(ip[8:24]))
            body = ip[40:40 + struct.unpack("!H", ip[4:6])[0]]
        else:
            continue
        if proto == 17 and len(body) >= 8:
            sport, dport = struct.unpack("!HH", body[:4])
            yield source, "udp", sport, dport, body[8:]
        elif proto == 6 and len(body) >= 20:
            sport, dport = struct.unpack("!HH", body[:4])
            yield source, "tcp", sport, dport, body[(body[12] >> 4) * 4:]


def name_at(message, offset, depth=0):
    """A DNS name (RFC 1035 §4.1.4 compression) and the offset after it."""
    labels, end = [], None
    for _ in range(128):
        if offset >= len(message):
            raise ValueError("name runs off the message")
        length = message[offset]
        if length == 0:
            offset += 1
            break
        if length & 0xC0 == 0xC0:
            if depth > 16 or offset + 1 >= len(message):
                raise ValueError("bad pointer")
            pointer = ((length & 0x3F) << 8) | message[offset + 1]
            rest, _ = name_at(message, pointer, depth + 1)
            labels.append(rest)
            offset += 2
            end = offset
            return b".".join(l for l in labels if l), end
        labels.append(message[offset + 1:offset + 1 + length])
        offset += 1 + length
    return b".".join(labels), offset


def handoff_records(message):
    """The pieces of an mDNS message that are about `_handoff._tcp`: owner names and data."""
    pieces = []
    try:
        _, _, qd, an, ns, ar = struct.unpack("!HHHHHH", message[:12])
        offset = 12
        for _ in range(qd):
            name, offset = name_at(message, offset)
            offset += 4
            if b"_handoff._tcp" in name.lower():
                pieces.append(name)
        for _ in range(an + ns + ar):
            name, offset = name_at(message, offset)
            rtype, _, _, length = struct.unpack("!HHIH", message[offset:offset + 10])
            offset += 10
            rdata = message[offset:offset + length]
            start = offset
            offset += length
            if b"_handoff._tcp" not in name.lower():
                continue  # Avahi's own: host addresses, reverse names, other services
            pieces.append(name)
            if rtype == 12:  # PTR: the instance
                pieces.append(name_at(message, start)[0])
            elif rtype == 33:  # SRV: priority, weight, port; the target is the host record
                pieces.append(rdata[:6])
            elif rtype == 16:  # TXT
                pieces.append(rdata)
    except (ValueError, struct.error, IndexError):
        pass
    return pieces


def sent_by(path, addresses):
    """What `addresses` sent in a capture, as separate pieces."""
    pieces = []
    for source, proto, sport, dport, payload in packets(path):
        if source not in addresses or not payload:
            continue
        if proto == "udp" and 5353 in (sport, dport):
            pieces += handoff_records(payload)
        elif proto == "tcp":
            pieces.append(payload)
    return pieces


def received_in_transcript(path):
    """The bytes of every message `openssl s_client -msg` shows as received ("<<<")."""
    pieces, current, receiving = [], bytearray(), False
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("<<<") or line.startswith(">>>"):
                if current:
                    pieces.append(bytes(current))
                current, receiving = bytearray(), line.startswith("<<<")
            elif receiving and line.startswith(" "):
                try:
                    current += bytes.fromhex(line.strip())
                except ValueError:
                    pass
    if current:
        pieces.append(bytes(current))
    return pieces


CONSTANT = 6


def windows(pieces, width=WINDOW):
    out = set()
    for piece in pieces:
        for i in range(len(piece) - width + 1):
            out.add(bytes(piece[i:i + width]))
    return out


def varying_runs(pieces, constants):
    """The runs of bytes of `pieces` that no `CONSTANT`-byte string of `constants` covers."""
    runs = []
    for piece in pieces:
        covered = bytearray(len(piece))
        for i in range(len(piece) - CONSTANT + 1):
            if bytes(piece[i:i + CONSTANT]) in constants:
                covered[i:i + CONSTANT] = b"\x01" * CONSTANT
        start = None
        for i in range(len(piece) + 1):
            if i < len(piece) and not covered[i]:
                start = i if start is None else start
            elif start is not None:
                runs.append(bytes(piece[start:i]))
                start = None
    return runs


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", required=True, help="the device's addresses, comma-separated")
    parser.add_argument("--reference", required=True, help="another account's device's addresses")
    parser.add_argument("--reference-bytes", nargs="*", default=[], help="files of bytes every handoff device sends")
    parser.add_argument("--round", action="append", required=True, help="PCAP[:TRANSCRIPT]")
    args = parser.parse_args()
    device = set(args.device.split(","))
    reference_addresses = set(args.reference.split(","))
    try:
        rounds, reference = [], []
        for r in args.round:
            pcap, _, transcript = r.partition(":")
            pieces = sent_by(pcap, device)
            if transcript:
                pieces += received_in_transcript(transcript)
            rounds.append(pieces)
            reference += sent_by(pcap, reference_addresses)
        for path in args.reference_bytes:
            with open(path, "rb") as f:
                reference.append(f.read())
    except OSError as e:
        print(f"stable-strings: {e}", file=sys.stderr)
        return 2
    constants = windows(reference, CONSTANT)
    common = windows(varying_runs(rounds[0], constants))
    for pieces in rounds[1:]:
        common &= windows(varying_runs(pieces, constants))
    stable = sorted(common)
    sizes = ", ".join(str(sum(len(p) for p in pieces)) for pieces in rounds)
    print(f"# rounds: {len(rounds)}; bytes the device sent per round: {sizes}; stable 8-byte strings: {len(stable)}", file=sys.stderr)
    for s in stable:
        print(s.hex())
    return 0


if __name__ == "__main__":
    sys.exit(main())
