#!/usr/bin/env python3
"""Client and baseline-server side of Scripts/bench-control (Python 3 standard library only).

Subcommands (Scripts/bench-control runs them; each prints one `key=value ...` line on stdout):
  echo-server --socket PATH [--reply-file F]
        a bare Unix-socket line server: every line comes back to its sender as it is (with --reply-file, every
        line after the first is answered with F's contents instead, a reply the size of parleyd's). A connection
        whose first line is {"publish":true} is a publisher: what it sends after that goes, one write per read, to
        every connection that sent a line containing "subscribe" (the fan-out baseline).
  rtt --socket PATH [--token FILE] --method M --count N [--warmup W] [--echo]
        one client, one request at a time: the round trip of each request line, p50/p99 over N after W warm-ups.
  wait-live --socket PATH --token FILE --count N --timeout S
        polls `list` until N conversations are ringing (or S seconds pass); prints how many there are.
  fanout --socket PATH [--token FILE] --clients N --ready F --stop F [--drain S] [--record F]
        N subscribers in this one process (selectors); per conversationChanged event, the time from the first
        subscriber receiving it to the last (monotonic_ns right after each read). Runs until F (--stop) exists,
        then until nothing came for --quiet seconds (at most --drain). --record writes subscriber 0's reads, with
        their times, for `publish`.
  publish --socket PATH --replay F
        replays a --record file into the echo server's broadcast, read by read, with the recorded timing.
"""
import argparse
import errno
import json
import os
import selectors
import socket
import sys
import time
import zlib

EVENT_MARK = b'"event":"conversationChanged"'


def percentile(sorted_values, fraction):
    """Nearest-rank percentile of an ascending list (0 for an empty one)."""
    if not sorted_values:
        return 0
    rank = max(1, -(-int(fraction * 1000) * len(sorted_values) // 1000))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def connect(path, timeout=5.0):
    """A connected Unix stream socket; retries while the server is still starting."""
    deadline = time.monotonic() + timeout
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            return sock
        except OSError as error:
            sock.close()
            if error.errno not in (errno.ENOENT, errno.ECONNREFUSED) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


class LineReader:
    """Blocking line reads from a socket, keeping what follows the line."""

    def __init__(self, sock):
        self.sock = sock
        self.buffer = bytearray()

    def readline(self):
        while True:
            end = self.buffer.find(b"\n")
            if end >= 0:
                line = bytes(self.buffer[: end + 1])
                del self.buffer[: end + 1]
                return line
            data = self.sock.recv(1 << 20)
            if not data:
                raise ConnectionError("closed by the server")
            self.buffer += data


def hello_line(token_file):
    token = open(token_file).read().strip() if token_file else ""
    return (json.dumps({"v": 1, "type": "hello", "token": token}, separators=(",", ":")) + "\n").encode()


def request_line(request_id, method):
    return ('{"v":1,"id":%d,"method":"%s"}\n' % (request_id, method)).encode()


def open_client(path, token_file):
    """Connects and says hello; returns (socket, reader). The echo server echoes the hello as its welcome."""
    sock = connect(path)
    reader = LineReader(sock)
    sock.sendall(hello_line(token_file))
    welcome = reader.readline()
    if token_file and b'"welcome"' not in welcome:
        raise SystemExit("bench-control.py: no welcome: %s" % welcome[:200].decode(errors="replace"))
    return sock, reader


def emit(**fields):
    print(" ".join("%s=%s" % (key, value) for key, value in fields.items()), flush=True)


# ---------------------------------------------------------------------------------------------------------------
# echo-server


def echo_server(args):
    reply = open(args.reply_file, "rb").read() if args.reply_file else None
    if reply is not None and not reply.endswith(b"\n"):
        reply += b"\n"
    try:
        os.unlink(args.socket)
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(args.socket)
    listener.listen(128)
    listener.setblocking(False)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, None)
    # per connection: [input buffer, output buffer, lines seen, role] with role None, "publisher" or "subscriber"
    state = {}
    subscribers = []

    def send(sock, data):
        conn = state.get(sock)
        if conn is None:
            return
        out = conn[1]
        if not out:
            try:
                sent = sock.send(data)
            except BlockingIOError:
                sent = 0
            except OSError:
                close(sock)
                return
            if sent == len(data):
                return
            data = data[sent:]
            selector.modify(sock, selectors.EVENT_READ | selectors.EVENT_WRITE, None)
        out += data

    def close(sock):
        if sock in state:
            del state[sock]
            if sock in subscribers:
                subscribers.remove(sock)
            selector.unregister(sock)
            sock.close()

    while True:
        for key, mask in selector.select():
            sock = key.fileobj
            if sock is listener:
                try:
                    conn, _ = listener.accept()
                except BlockingIOError:
                    continue
                conn.setblocking(False)
                state[conn] = [bytearray(), bytearray(), 0, None]
                selector.register(conn, selectors.EVENT_READ, None)
                continue
            conn = state.get(sock)
            if conn is None:
                continue
            if mask & selectors.EVENT_WRITE and conn[1]:
                try:
                    sent = sock.send(conn[1])
                    del conn[1][:sent]
                except BlockingIOError:
                    pass
                except OSError:
                    close(sock)
                    continue
                if not conn[1]:
                    selector.modify(sock, selectors.EVENT_READ, None)
            if not mask & selectors.EVENT_READ:
                continue
            try:
                data = sock.recv(1 << 20)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                close(sock)
                continue
            conn[0] += data
            end = conn[0].rfind(b"\n")
            if end < 0:
                continue
            chunk = bytes(conn[0][: end + 1])
            del conn[0][: end + 1]
            if conn[3] == "publisher":
                # What one read brought goes to every subscriber in one write each: the floor of a fan-out.
                for subscriber in list(subscribers):
                    send(subscriber, chunk)
                continue
            lines = chunk.splitlines(keepends=True)
            if conn[2] == 0 and lines[0].startswith(b'{"publish":true}'):
                conn[3] = "publisher"
                conn[2] = 1
                rest = b"".join(lines[1:])
                for subscriber in list(subscribers):
                    if rest:
                        send(subscriber, rest)
                continue
            out = []
            for line in lines:
                if conn[3] is None and b'"subscribe"' in line:
                    conn[3] = "subscriber"
                    subscribers.append(sock)
                out.append(reply if (reply is not None and conn[2] > 0) else line)
                conn[2] += 1
            send(sock, b"".join(out))


# ---------------------------------------------------------------------------------------------------------------
# rtt


def rtt(args):
    sock, reader = open_client(args.socket, args.token)
    samples = []
    errors = 0
    first_error = ""
    reply_bytes = 0
    deadline = time.monotonic() + args.time_limit
    total = args.warmup + args.count
    clock = time.monotonic_ns
    for i in range(total):
        request_id = i + 1
        line = request_line(request_id, args.method)
        start = clock()
        sock.sendall(line)
        reply = reader.readline()
        elapsed = clock() - start
        # Checked after the clock stopped, so it costs the same for parleyd and the echo server.
        if args.echo:
            good = reply == line or args.any_reply
        else:
            try:
                answer = json.loads(reply)
                good = answer.get("id") == request_id and "result" in answer
            except ValueError:
                good = False
        if not good:
            errors += 1
            if not first_error:
                first_error = reply[:160].decode(errors="replace").strip().replace(" ", "_")
        reply_bytes = len(reply)
        if i >= args.warmup:
            samples.append(elapsed)
        if time.monotonic() > deadline:
            break
    if args.save_reply:
        with open(args.save_reply, "wb") as out:
            out.write(reply)
    sock.close()
    samples.sort()
    emit(n=len(samples), p50_us="%.1f" % (percentile(samples, 0.50) / 1000),
         p99_us="%.1f" % (percentile(samples, 0.99) / 1000),
         max_us="%.1f" % ((samples[-1] if samples else 0) / 1000),
         mean_us="%.1f" % ((sum(samples) / len(samples) if samples else 0) / 1000),
         reply_bytes=reply_bytes, errors=errors, first_error=first_error or "-")


# ---------------------------------------------------------------------------------------------------------------
# wait-live


def wait_live(args):
    sock, reader = open_client(args.socket, args.token)
    deadline = time.monotonic() + args.timeout
    request_id = 0
    ringing = live = 0
    while True:
        request_id += 1
        sock.sendall(request_line(request_id, "list"))
        answer = json.loads(reader.readline())
        conversations = answer.get("result", {}).get("conversations", [])
        live = len(conversations)
        ringing = sum(1 for c in conversations if c.get("state") == "ringing")
        if ringing >= args.count or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    sock.close()
    emit(live=live, ringing=ringing)


# ---------------------------------------------------------------------------------------------------------------
# fanout


def fanout(args):
    clients = []
    for index in range(args.clients):
        sock, reader = open_client(args.socket, args.token)
        sock.sendall(request_line(1, "subscribe"))
        answer = reader.readline()
        if not args.echo and b'"result"' not in answer:
            raise SystemExit("bench-control.py: subscribe refused: %s" % answer[:200].decode(errors="replace"))
        if reader.buffer:
            raise SystemExit("bench-control.py: data before the first call on subscriber %d" % index)
        clients.append(sock)

    # Every subscriber gets the same byte stream (the same events in the same order), so the loop only notes, per
    # read, how far into its stream a subscriber is and when (cheap, so that the loop comes round fast and the
    # receipt times are sharp); afterwards each event's end offset in subscriber 0's stream gives the read in
    # which each subscriber got it. A subscriber whose stream differs (lost, extra or other bytes: a CRC and the
    # length tell) is counted as diverged and left out.
    selector = selectors.DefaultSelector()
    for index, sock in enumerate(clients):
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ, index)
    reads = [[] for _ in clients]  # per subscriber: (stream offset after the read, receipt ns)
    offsets = [0] * len(clients)
    crcs = [0] * len(clients)
    tails = [b""] * len(clients)
    stream0 = []  # subscriber 0's reads: (receipt ns, bytes)
    closed = []
    socket_errors = []
    open(args.ready, "w").close()

    clock = time.monotonic_ns
    started = clock()
    stop_at = None
    hard_stop = time.monotonic() + args.max_seconds
    open_count = len(clients)
    next_check = 0.0
    last_data = time.monotonic()
    while open_count:
        now_s = time.monotonic()
        if stop_at is None and now_s >= next_check:
            next_check = now_s + 0.05
            if os.path.exists(args.stop) or now_s > hard_stop:
                stop_at = now_s + args.drain
        # After the stop file: until nothing came for --quiet seconds (parleyd may still be behind), at most --drain.
        if stop_at is not None and (now_s > stop_at or now_s - last_data > args.quiet):
            break
        received = []
        for key, _ in selector.select(0.05):
            try:
                data = key.fileobj.recv(1 << 18)
            except BlockingIOError:
                continue
            except OSError as error:
                data = b""
                socket_errors.append("subscriber %d: %s" % (key.data, error))
            received.append((key.data, clock(), data))
            if not data:
                closed.append(key.data)
                selector.unregister(key.fileobj)
                open_count -= 1
        if received:
            last_data = time.monotonic()
        for index, now, data in received:
            if data:
                offsets[index] += len(data)
                reads[index].append((offsets[index], now))
                crcs[index] = zlib.crc32(data, crcs[index])
                tails[index] = data
                if index == 0:
                    stream0.append((now, data))
    elapsed_s = (clock() - started) / 1e9
    for sock in clients:
        sock.close()
    if args.record:
        with open(args.record, "wb") as out:
            for now, data in stream0:
                out.write(b"%d %d\n" % (now - started, len(data)))
                out.write(data)

    stream = b"".join(data for _, data in stream0)
    event_ends = []
    other_lines = 0
    error_lines = []
    position = 0
    for line in stream.split(b"\n")[:-1]:
        position += len(line) + 1
        if EVENT_MARK in line:
            event_ends.append(position)
        elif b'"type":"error"' in line:
            error_lines.append(line[:200].decode(errors="replace"))
        else:
            other_lines += 1
    same = [i for i in range(len(clients)) if offsets[i] == offsets[0] and crcs[i] == crcs[0] and i not in closed]
    diverged = [i for i in range(len(clients)) if i not in same]
    first = [None] * len(event_ends)
    last = [0] * len(event_ends)
    for index in same:
        client_reads = reads[index]
        j = 0
        for k, end in enumerate(event_ends):
            while client_reads[j][0] < end:
                j += 1
            now = client_reads[j][1]
            if first[k] is None or now < first[k]:
                first[k] = now
            if now > last[k]:
                last[k] = now
    spreads = sorted(last[k] - first[k] for k in range(len(event_ends)) if first[k] is not None)
    emit(events=len(event_ends), p50_us="%.1f" % (percentile(spreads, 0.50) / 1000),
         p99_us="%.1f" % (percentile(spreads, 0.99) / 1000),
         max_us="%.1f" % ((spreads[-1] if spreads else 0) / 1000),
         subscribers=len(same), diverged=len(diverged), closed=len(closed), errors=len(error_lines) + len(socket_errors),
         other_lines=other_lines, stream_bytes=offsets[0], reads_per_subscriber=len(reads[0]),
         seconds="%.1f" % elapsed_s)
    for line in (error_lines + socket_errors)[:5]:
        print("  " + line, file=sys.stderr)
    for index in diverged[:3]:
        print("  subscriber %d diverged: %d bytes (subscriber 0: %d)%s, its last read ended %r" % (
            index, offsets[index], offsets[0], ", closed by the server" if index in closed else "",
            tails[index][-160:]), file=sys.stderr)


# ---------------------------------------------------------------------------------------------------------------
# publish


def publish(args):
    chunks = []
    with open(args.replay, "rb") as source:
        while True:
            header = source.readline()
            if not header:
                break
            offset, length = (int(part) for part in header.split())
            chunks.append((offset, source.read(length)))
    sock = connect(args.socket)
    sock.sendall(b'{"publish":true}\n')
    time.sleep(0.05)
    clock = time.monotonic_ns
    base = chunks[0][0] if chunks else 0
    start = clock()
    for offset, data in chunks:
        # What subscriber 0 got in one read leaves in one write, at the same time after the first.
        due = start + offset - base
        wait = due - clock()
        if wait > 200_000:
            time.sleep((wait - 100_000) / 1e9)
        while clock() < due:
            pass
        sock.sendall(data)
    time.sleep(0.2)
    sock.close()
    emit(chunks=len(chunks), bytes=sum(len(data) for _, data in chunks))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)

    command = commands.add_parser("echo-server")
    command.add_argument("--socket", required=True)
    command.add_argument("--reply-file")
    command.set_defaults(run=echo_server)

    command = commands.add_parser("rtt")
    command.add_argument("--socket", required=True)
    command.add_argument("--token")
    command.add_argument("--method", default="status")
    command.add_argument("--count", type=int, default=2000)
    command.add_argument("--warmup", type=int, default=50)
    command.add_argument("--time-limit", type=float, default=30.0)
    command.add_argument("--echo", action="store_true", help="the server is the echo server")
    command.add_argument("--any-reply", action="store_true", help="with --echo: any line is a good reply")
    command.add_argument("--save-reply", help="write the last reply to this file")
    command.set_defaults(run=rtt)

    command = commands.add_parser("wait-live")
    command.add_argument("--socket", required=True)
    command.add_argument("--token", required=True)
    command.add_argument("--count", type=int, default=100)
    command.add_argument("--timeout", type=float, default=15.0)
    command.set_defaults(run=wait_live)

    command = commands.add_parser("fanout")
    command.add_argument("--socket", required=True)
    command.add_argument("--token")
    command.add_argument("--clients", type=int, default=50)
    command.add_argument("--ready", required=True)
    command.add_argument("--stop", required=True)
    command.add_argument("--drain", type=float, default=10.0, help="most seconds read after the stop file")
    command.add_argument("--quiet", type=float, default=0.5, help="stop once nothing came for this long")
    command.add_argument("--max-seconds", type=float, default=120.0)
    command.add_argument("--record")
    command.add_argument("--echo", action="store_true")
    command.set_defaults(run=fanout)

    command = commands.add_parser("publish")
    command.add_argument("--socket", required=True)
    command.add_argument("--replay", required=True)
    command.set_defaults(run=publish)

    args = parser.parse_args()
    try:
        args.run(args)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
