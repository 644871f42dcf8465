#!/usr/bin/env python3
"""A DNS server on 127.0.0.1 that misbehaves on purpose, for DNSResolverTests (UDP and TCP on one port).

What it does depends on the first label of the name asked about, after any _service._proto labels:
  good.*       A 192.0.2.10 (TTL 60), at once
  slow.*       the same, 2 seconds later (other queries are answered meanwhile)
  silent.*     never answers
  truncated.*  an SRV answer that says 2 records and is cut inside the second
  garbage.*    an answer whose record has a name running off the end of the message
  many.*       1,000 SRV records: over UDP a truncated answer (TC), over TCP all of them
  loop.*       a CNAME loop: loop.X -> b.loop.X -> loop.X
  anything else: NXDOMAIN
Usage: bad-dns-server.py PORT. Written by hand on purpose: an independent, minimal DNS writer.
"""
import select
import socket
import struct
import sys
import time

port = int(sys.argv[1])
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.bind(("127.0.0.1", port))
tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
tcp.bind(("127.0.0.1", port))
tcp.listen(16)


def encode(name):
    out = b""
    for label in name.rstrip(".").split("."):
        out += bytes([len(label)]) + label.encode()
    return out + b"\x00"


def question(query):
    """The question's bytes, its name and type."""
    offset, labels = 12, []
    while query[offset] != 0:
        length = query[offset]
        labels.append(query[offset + 1:offset + 1 + length].decode())
        offset += 1 + length
    end = offset + 5
    qtype = struct.unpack("!H", query[offset + 1:offset + 3])[0]
    return query[12:end], ".".join(labels), qtype


def header(query_id, rcode=0, answers=0, truncated=False):
    flags = 0x8180 | rcode | (0x0200 if truncated else 0)
    return struct.pack("!HHHHHH", query_id, flags, 1, answers, 0, 0)


def record(owner, rtype, ttl, data):
    return owner + struct.pack("!HHIH", rtype, 1, ttl, len(data)) + data


def srv(priority, weight, port_number, target):
    return struct.pack("!HHH", priority, weight, port_number) + encode(target)


def answer(query, over_tcp):
    """The reply to `query` and its delay in seconds, or None for no reply."""
    query_id = struct.unpack("!H", query[:2])[0]
    qbytes, name, qtype = question(query)
    first = next((label for label in name.split(".") if not label.startswith("_")), "").lower()
    here = b"\xc0\x0c"  # a pointer to the question's name
    if first in ("good", "slow"):
        reply = header(query_id, answers=1) + qbytes + record(here, 1, 60, bytes([192, 0, 2, 10]))
        return reply, (2.0 if first == "slow" else 0)
    if first == "silent":
        return None
    if first == "truncated":
        whole = record(here, 33, 60, srv(10, 1, 5060, "a." + name))
        reply = header(query_id, answers=2) + qbytes + whole + whole[: len(whole) // 2]
        return reply, 0
    if first == "garbage":
        return header(query_id, answers=1) + qbytes + b"\x3f\x41\x42", 0
    if first == "many":
        if not over_tcp:
            return header(query_id, truncated=True) + qbytes, 0
        records = b"".join(record(here, 33, 60, srv(10, 1, 5060, "h%d.%s" % (i, name))) for i in range(1000))
        return header(query_id, answers=1000) + qbytes + records, 0
    if first == "loop":
        other = "b." + name
        records = record(here, 5, 60, encode(other)) + record(encode(other), 5, 60, encode(name))
        return header(query_id, answers=2) + qbytes + records, 0
    return header(query_id, rcode=3) + qbytes, 0


pending = []  # (due, reply, address)
connections = {}  # socket -> bytes read so far
while True:
    now = time.monotonic()
    timeout = max(0.0, min(p[0] for p in pending) - now) if pending else None
    readable, _, _ = select.select([udp, tcp] + list(connections), [], [], timeout)
    for sock in readable:
        if sock is udp:
            data, address = udp.recvfrom(65535)
            result = answer(data, False)
            if result is not None:
                pending.append((time.monotonic() + result[1], result[0], address))
        elif sock is tcp:
            connection, _ = tcp.accept()
            connections[connection] = b""
        else:
            chunk = sock.recv(65535)
            if not chunk:
                del connections[sock]
                sock.close()
                continue
            buffer = connections[sock] + chunk
            while len(buffer) >= 2 and len(buffer) >= 2 + struct.unpack("!H", buffer[:2])[0]:
                length = struct.unpack("!H", buffer[:2])[0]
                result = answer(buffer[2:2 + length], True)
                buffer = buffer[2 + length:]
                if result is not None:
                    sock.sendall(struct.pack("!H", len(result[0])) + result[0])
            connections[sock] = buffer
    now = time.monotonic()
    for item in [p for p in pending if p[0] <= now]:
        pending.remove(item)
        udp.sendto(item[1], item[2])
