"""A small RFC 6455 WebSocket client on the Python standard library, shared by the frontend tests.

Used by frontend_check.py (parleyd's control WebSocket) and browser.py (Chromium's DevTools endpoints).
Text messages only: send_text() sends one masked text frame, recv_text() returns the next complete text
message (continuation frames are joined, pings are answered, a close frame raises Closed).
"""
import base64, hashlib, os, socket, time


class Closed(Exception):
    """The peer closed the connection."""


def recv_some(sock, deadline):
    """Whatever bytes sock has before deadline (a time.monotonic() value); TimeoutError, or Closed at EOF/error."""
    sock.settimeout(max(0.001, deadline - time.monotonic()))
    try:
        data = sock.recv(1 << 20)
    except socket.timeout:
        raise TimeoutError("timed out")
    except OSError as e:
        raise Closed(str(e))
    if not data:
        raise Closed("connection closed")
    return data


def _unmask(payload, mask):
    """payload XOR the 4-byte mask, repeated (fast: one big-integer XOR instead of a per-byte loop)."""
    n = len(payload)
    if not n:
        return b""
    key = (mask * (n // 4 + 1))[:n]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(key, "big")).to_bytes(n, "big")


class WebSocketTransport:
    """RFC 6455 client: one message per text frame (or fragmented run); our frames are masked, as a client's must be.

    WebSocketTransport(port, path="/", host="127.0.0.1", timeout=5.0, origin=None) connects and upgrades at once
    (raising Closed when the server refuses); `Origin:` is sent only when origin is given.
    """
    GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    def __init__(self, port, path="/", host="127.0.0.1", timeout=5.0, origin=None):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf, self.message, key = bytearray(), bytearray(), base64.b64encode(os.urandom(16)).decode()
        request = (f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n")
        if origin is not None:
            request += f"Origin: {origin}\r\n"
        self.sock.sendall((request + "\r\n").encode())
        deadline = time.monotonic() + timeout
        while b"\r\n\r\n" not in self.buf:
            self.buf += recv_some(self.sock, deadline)
        end = self.buf.index(b"\r\n\r\n")
        head, self.buf = bytes(self.buf[:end]), self.buf[end + 4:]
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        accept = base64.b64encode(hashlib.sha1((key + self.GUID).encode()).digest()).decode()
        if lines[0].split()[1:2] != ["101"] or headers.get("sec-websocket-accept") != accept:
            self.sock.close()
            raise Closed(f"bad upgrade answer {lines[0]!r}, accept {headers.get('sec-websocket-accept')!r}")

    def send_frame(self, opcode, payload):
        """One final frame with this opcode and payload, masked."""
        n, mask = len(payload), os.urandom(4)
        size = bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + n.to_bytes(2, "big") if n < 65536 \
            else bytes([0x80 | 127]) + n.to_bytes(8, "big")
        self.sock.sendall(bytes([0x80 | opcode]) + size + mask + _unmask(payload, mask))

    def send_text(self, text):
        """Send text as one text frame."""
        self.send_frame(0x1, text.encode())

    def _fill(self, n, deadline):
        """Read until the buffer holds at least n bytes (nothing is consumed, so a timeout loses no data)."""
        while len(self.buf) < n:
            self.buf += recv_some(self.sock, deadline)

    def recv_text(self, deadline):
        """The next whole message, decoded as UTF-8; TimeoutError after deadline, Closed on a close frame.

        A frame is taken off the buffer only once it is complete, and fragments received so far are kept, so
        after a TimeoutError the next call carries on where this one stopped.
        """
        while True:
            self._fill(2, deadline)
            b0, b1 = self.buf[0], self.buf[1]
            n, head = b1 & 0x7F, 2
            if n >= 126:
                head += 2 if n == 126 else 8
                self._fill(head, deadline)
                n = int.from_bytes(self.buf[2:head], "big")
            if b1 & 0x80:
                head += 4
            self._fill(head + n, deadline)
            payload = bytes(self.buf[head:head + n])
            if b1 & 0x80:
                payload = _unmask(payload, bytes(self.buf[head - 4:head]))
            del self.buf[:head + n]
            opcode = b0 & 0x0F
            if opcode == 0x8:
                raise Closed("close frame")
            if opcode == 0x9:
                self.send_frame(0xA, payload)
            elif opcode in (0x0, 0x1):
                self.message += payload
                if b0 & 0x80:
                    message, self.message = bytes(self.message), bytearray()
                    return message.decode()

    def close(self):
        """Send a close frame (best effort) and close the socket."""
        try:
            self.send_frame(0x8, b"\x03\xe8")
        except OSError:
            pass
        self.sock.close()
