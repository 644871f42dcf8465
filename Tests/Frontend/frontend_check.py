#!/usr/bin/env python3
"""Frontend check for parleyd's control API, written from docs/control-api.md alone.

Starts parleyd A (under test, with contacts and a WebSocket), parleyd B and C (peers), drives them
over the Unix control socket and the WebSocket, and checks methods, events, shapes and errors as the
document describes them. Exit 0 when every check passes, else 1 with one line per failed check.

    python3 Tests/Frontend/frontend_check.py --parleyd PATH_TO_PARLEYD --workdir DIR
"""
import argparse, base64, hashlib, json, os, re, shutil, socket, subprocess, sys, time

WAIT = 5.0  # seconds any single answer or event may take


# ---------------------------------------------------------------------------------------- transports

class Closed(Exception):
    """The peer closed the connection."""


def recv_some(sock, deadline):
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("timed out")
    sock.settimeout(left)
    try:
        data = sock.recv(65536)
    except socket.timeout:
        raise TimeoutError("timed out")
    except OSError as e:
        raise Closed(str(e))
    if not data:
        raise Closed("connection closed")
    return data


class UnixTransport:
    """One JSON object per LF-terminated line on DATA_DIR/control.sock."""
    name = "unix"

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(WAIT)
        self.sock.connect(path)
        self.buf = b""

    def send_text(self, text):
        self.sock.sendall(text.encode() + b"\n")

    def recv_text(self, deadline):
        while b"\n" not in self.buf:
            self.buf += recv_some(self.sock, deadline)
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()

    def close(self):
        self.sock.close()


class WebSocketTransport:
    """RFC 6455 client: one JSON message per text frame, frames masked as a client must."""
    name = "websocket"
    GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
        self.buf = b""
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        deadline = time.monotonic() + WAIT
        while b"\r\n\r\n" not in self.buf:
            self.buf += recv_some(self.sock, deadline)
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:])}
        accept = base64.b64encode(hashlib.sha1((key + self.GUID).encode()).digest()).decode()
        if " 101 " not in lines[0] + " " or headers.get("sec-websocket-accept") != accept:
            raise Closed(f"bad upgrade answer: {lines[0]!r} accept={headers.get('sec-websocket-accept')!r}")

    def send_frame(self, opcode, payload):
        n = len(payload)
        head = bytes([0x80 | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + n.to_bytes(2, "big")
        else:
            head += bytes([0x80 | 127]) + n.to_bytes(8, "big")
        mask = os.urandom(4)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def send_text(self, text):
        self.send_frame(0x1, text.encode())

    def read_exact(self, n, deadline):
        while len(self.buf) < n:
            self.buf += recv_some(self.sock, deadline)
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def recv_text(self, deadline):
        message = b""
        while True:
            b0, b1 = self.read_exact(2, deadline)
            n = b1 & 0x7F
            if n == 126:
                n = int.from_bytes(self.read_exact(2, deadline), "big")
            elif n == 127:
                n = int.from_bytes(self.read_exact(8, deadline), "big")
            mask = self.read_exact(4, deadline) if b1 & 0x80 else None
            payload = self.read_exact(n, deadline)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            opcode = b0 & 0x0F
            if opcode == 0x8:
                raise Closed("close frame")
            if opcode == 0x9:
                self.send_frame(0xA, payload)
            elif opcode in (0x0, 0x1):
                message += payload
                if b0 & 0x80:
                    return message.decode()

    def close(self):
        self.sock.close()
