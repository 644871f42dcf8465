#!/usr/bin/env python3
"""A minimal TURN client (RFC 8656 over UDP, long-term credentials) for the NAT lab (Scripts/nat-lab): two of them,
one behind each NAT, talk to each other relay to relay, as an ICE relay↔relay pair would.

    turn-probe.py SERVER:PORT USER PASSWORD OURS THEIRS TEXT [DENIED_PEER]

It allocates a relayed address, prints it and the server-reflexive address the server saw ("relayed IP:PORT mapped
IP:PORT"), writes the relayed address to the file OURS, waits (10 s at most) for the other probe's in THEIRS, asks for
a permission for it, and sends TEXT in Send indications until a Data indication brings the other's text ("heard
TEXT from IP:PORT"); exits 0 then, 1 on silence. With DENIED_PEER it first asks for a permission for that address and
prints the answer ("permission for DENIED_PEER: CODE REASON"). Standard library only.
"""
import hashlib
import hmac
import os
import socket
import struct
import sys
import time

COOKIE = 0x2112A442
ALLOCATE, CREATE_PERMISSION, SEND_INDICATION, DATA_INDICATION = 0x0003, 0x0008, 0x0016, 0x0017
USERNAME, INTEGRITY, ERROR_CODE, PEER, DATA, REALM, NONCE, RELAYED, TRANSPORT, MAPPED = (
    0x0006, 0x0008, 0x0009, 0x0012, 0x0013, 0x0014, 0x0015, 0x0016, 0x0019, 0x0020)


def attribute(kind, value):
    return struct.pack("!HH", kind, len(value)) + value + b"\0" * (-len(value) % 4)


def xor_address(ip, port):
    address = bytes(a ^ b for a, b in zip(socket.inet_aton(ip), struct.pack("!I", COOKIE)))
    return struct.pack("!BBH", 0, 1, port ^ (COOKIE >> 16)) + address


def read_xor_address(value):
    port = struct.unpack("!H", value[2:4])[0] ^ (COOKIE >> 16)
    return socket.inet_ntoa(bytes(a ^ b for a, b in zip(value[4:8], struct.pack("!I", COOKIE)))), port


def message(kind, attributes, key=None):
    transaction, body = os.urandom(12), b"".join(attributes)
    if key:  # MESSAGE-INTEGRITY over the header (its length counting the attribute) and what precedes it
        header = struct.pack("!HHI", kind, len(body) + 24, COOKIE) + transaction
        body += attribute(INTEGRITY, hmac.new(key, header + body, hashlib.sha1).digest())
    return struct.pack("!HHI", kind, len(body), COOKIE) + transaction + body


def parse(data):
    kind, length = struct.unpack("!HH", data[:4])
    attributes, at = {}, 20
    while at + 4 <= 20 + length:
        name, size = struct.unpack("!HH", data[at:at + 4])
        attributes.setdefault(name, data[at + 4:at + 4 + size])
        at += 4 + size + (-size % 4)
    return kind, attributes


def main():
    server, user, password, ours, theirs, text = sys.argv[1:7]
    denied = sys.argv[7] if len(sys.argv) > 7 else None
    host, port = server.rsplit(":", 1)
    server = (host, int(port))
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(2)

    def ask(kind, attributes, key=None):
        sock.sendto(message(kind, attributes, key), server)
        return parse(sock.recvfrom(4096)[0])

    udp = attribute(TRANSPORT, bytes([17, 0, 0, 0]))
    _, challenge = ask(ALLOCATE, [udp])  # 401 with the realm and a nonce
    realm, nonce = challenge[REALM], challenge[NONCE]
    key = hashlib.md5(user.encode() + b":" + realm + b":" + password.encode()).digest()
    credentials = [attribute(USERNAME, user.encode()), attribute(REALM, realm), attribute(NONCE, nonce)]
    kind, allocated = ask(ALLOCATE, [udp] + credentials, key)
    if kind != 0x0103:
        print("allocation refused:", allocated.get(ERROR_CODE, b"")[4:].decode(errors="replace"), flush=True)
        return 1
    relayed, mapped = read_xor_address(allocated[RELAYED]), read_xor_address(allocated[MAPPED])
    print("relayed %s:%d mapped %s:%d" % (relayed + mapped), flush=True)

    if denied:
        kind, answer = ask(CREATE_PERMISSION, [attribute(PEER, xor_address(denied, 9))] + credentials, key)
        error = answer.get(ERROR_CODE)
        code = "%d %s" % (error[2] * 100 + error[3], error[4:].decode(errors="replace")) if error else "granted"
        print("permission for %s: %s" % (denied, code), flush=True)

    with open(ours + ".tmp", "w") as file:
        file.write("%s:%d" % relayed)
    os.rename(ours + ".tmp", ours)
    deadline = time.time() + 10
    while not os.path.exists(theirs):
        if time.time() > deadline:
            print("the other probe never said its relayed address", flush=True)
            return 1
        time.sleep(0.05)
    with open(theirs) as file:
        peer_ip, peer_port = file.read().split(":")
    peer = attribute(PEER, xor_address(peer_ip, int(peer_port)))
    kind, answer = ask(CREATE_PERMISSION, [peer] + credentials, key)
    if kind != 0x0108:
        print("permission refused:", answer.get(ERROR_CODE, b"")[4:].decode(errors="replace"), flush=True)
        return 1

    send = message(SEND_INDICATION, [peer, attribute(DATA, text.encode())])
    deadline = time.time() + 5
    while time.time() < deadline:
        sock.sendto(send, server)
        try:
            kind, indication = parse(sock.recvfrom(4096)[0])
        except socket.timeout:
            continue
        if kind == DATA_INDICATION:
            print("heard %s from %s:%d" % ((indication[DATA].decode(),) + read_xor_address(indication[PEER])), flush=True)
            # The other probe may not have heard us yet (its permission came later): a few more, then out.
            for _ in range(10):
                sock.sendto(send, server)
                time.sleep(0.1)
            return 0
        time.sleep(0.1)
    print("heard nothing", flush=True)
    return 1


sys.exit(main())
