"""What Parley's Python benchmarks share (Scripts/bench-media, Scripts/bench-group, Scripts/bench-proxy, …): ports,
CPU time, percentiles, a control-API client, a parleyd and a Kamailio on free ports, and `spawn`: every process a benchmark starts is stopped by its
PID when the script ends — normally, on an error, on Ctrl-C or on SIGTERM. Imported from the Scripts directory; not
a benchmark itself."""
import atexit
import glob
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TICKS = os.sysconf("SC_CLK_TCK")


def log(text):
    print(text, file=sys.stderr, flush=True)


_spawned = []


def exit_on_sigterm():
    """SIGTERM raises SystemExit (status 143), so `finally` blocks and atexit run, as for Ctrl-C."""
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def spawn(command, group=False, **options):
    """subprocess.Popen, remembered: stopped by its PID at exit if still running (SIGTERM, up to 10 s, then SIGKILL).
    With `group`, it leads a process group of its own (a server that forks workers, as Kamailio does): its whole group
    is waited for and killed with it, workers left by a leader that died included."""
    if not _spawned:
        atexit.register(stop_spawned)
        exit_on_sigterm()
    process = subprocess.Popen(command, start_new_session=group, **options)
    process.leads_group = group
    _spawned.append(process)
    return process


def _group_alive(group):
    """Whether a process of process group `group` runs (zombies do not count)."""
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            fields = open(stat).read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            return True
    return False


def stop(process, timeout=10):
    """Stops one spawned process (and its group, if it leads one): SIGTERM, up to `timeout` s, then SIGKILL."""
    group = process.pid if getattr(process, "leads_group", False) else None
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    elif group is not None and _group_alive(group):
        os.killpg(group, signal.SIGTERM)  # the leader is gone, its workers are not
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and (process.poll() is None or (group is not None and _group_alive(group))):
        time.sleep(0.1)
    if process.poll() is None:
        log(f"PID {process.pid} did not stop on SIGTERM within {timeout} s: SIGKILL")
        process.kill()
        process.wait()
    if group is not None and _group_alive(group):
        log(f"process group {group} outlived SIGTERM: SIGKILL")
        try:
            os.killpg(group, signal.SIGKILL)
        except ProcessLookupError:
            pass


def stop_spawned():
    """Stops every spawned process still running, newest first (registered with atexit by `spawn`)."""
    for process in reversed(_spawned):
        stop(process)


def free_port(pair=False):
    """A loopback UDP (and TCP) port free a moment ago; with `pair`, an even one whose next is free too."""
    for _ in range(200):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        if port < 20000 or port > 60000:
            continue
        if pair:
            port &= ~1
        ports = [port, port + 1] if pair else [port]
        try:
            for each in ports:
                for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
                    with socket.socket(socket.AF_INET, kind) as test:
                        test.bind(("127.0.0.1", each))
            return port
        except OSError:
            continue
    raise RuntimeError("no free port")


def cpu_seconds(pids):
    """utime + stime of the processes, in seconds (a process gone counts 0)."""
    total = 0
    for pid in pids:
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total / TICKS


def descendants(pid):
    """`pid` and every process below it (Kamailio forks its workers)."""
    found = [pid]
    for task in glob.glob("/proc/[0-9]*/stat"):
        try:
            fields = open(task).read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) in found:
            found.append(int(task.split("/")[2]))
    return found


def percentile(values, fraction):
    """Nearest rank: the smallest value at or above `fraction` of them (p99 of 100 is the 99th, not the maximum)."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))]


def median(values):
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else 0.0


class Control:
    """A control-API client of one parleyd: requests one at a time, events kept aside."""

    def __init__(self, directory):
        deadline = time.monotonic() + 10
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(os.path.join(directory, "control.sock"))
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.buffer = b""
        self.events = []
        self.next_id = 0
        token = open(os.path.join(directory, "control.token")).read().strip()
        self.sock.sendall((json.dumps({"v": 1, "type": "hello", "token": token}) + "\n").encode())
        welcome = self.line(10)
        if b"welcome" not in welcome:
            raise RuntimeError(f"control hello refused: {welcome!r}")

    def line(self, timeout):
        self.sock.settimeout(timeout)
        while b"\n" not in self.buffer:
            data = self.sock.recv(1 << 20)
            if not data:
                raise ConnectionError("parleyd closed the control connection")
            self.buffer += data
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line

    def request(self, method, params=None):
        self.next_id += 1
        message = {"v": 1, "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.sock.sendall((json.dumps(message) + "\n").encode())
        while True:
            reply = json.loads(self.line(30))
            if "event" in reply:
                self.events.append((time.monotonic(), reply))
            elif reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def next_event(self, name, conversation, timeout=10):
        """The time and data of the next `name` event about `conversation`."""
        deadline = time.monotonic() + timeout
        while True:
            for index, (at, event) in enumerate(self.events):
                if event["event"] == name and event["data"].get("conversation", "").lower() == conversation.lower():
                    del self.events[index]
                    return at, event["data"]
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no {name} for {conversation}")
            reply = json.loads(self.line(remaining))
            if "event" in reply:
                self.events.append((time.monotonic(), reply))

    def drop_events(self):
        self.events.clear()


class Parleyd:
    """One parleyd on a free port (UDP unless `transport` says tcp or tls) with its own data directory."""

    def __init__(self, binary, workdir, name, arguments, transport="udp", log_level="error"):
        self.port = free_port()
        self.directory = os.path.join(workdir, name)
        os.makedirs(self.directory, exist_ok=True)
        self.log = open(os.path.join(workdir, name + ".log"), "w")
        command = [binary, "--listen", f"{transport}://127.0.0.1:{self.port}", "--data-dir", self.directory, "--no-history",
                   "--log-level", log_level, "--exempt-source", "127.0.0.1"] + arguments
        # Stopped at exit if the benchmark never gets to stop() (it fails starting this one or the next).
        self.process = spawn(command, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 15
        while not os.path.exists(os.path.join(self.directory, "control.token")):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not start: see {self.log.name}")
            time.sleep(0.05)
        self.control = Control(self.directory)

    def stop(self):
        stop(self.process, timeout=15)
        self.log.close()


class Kamailio:
    """Examples/kamailio/kamailio.cfg on a free loopback port (UDP and TCP), its dispatcher set 1 the `pool` ports (a
    port nobody listens on when there is none: the module needs a list), serving `domain` besides its address when
    given (-A DOMAIN). In a process group of its own: stopping it waits for every worker it forked (and kills any
    left). pike's flood limit is lifted for load generators: PIKE_DENSITY 60,000 requests per 2 s from one address
    (with 1,000,000 pike blocked 127.0.0.1 after 16,959 OPTIONS in a unit, about 1,000,000 mod 65,536, as if it kept
    the density in 16 bits). One UDP worker (-n 1: with two, a 180 relayed after its 200 stalls sipp's uac) and 1 GiB
    of shared memory (-m 1024: tm keeps every transaction for its wait timer, and 256 MiB ran out near 2,000 calls/s:
    "500 No error (2/SL)"). `pids` is Kamailio and its workers."""

    def __init__(self, workdir, pool=(), domain=None, settle=0.0):
        self.port = free_port()
        self.directory = os.path.join(workdir, "kamailio")
        os.makedirs(self.directory, exist_ok=True)
        listing = os.path.join(self.directory, "dispatcher.list")
        with open(listing, "w") as out:
            out.writelines(f"1 sip:127.0.0.1:{port}\n" for port in (pool or [free_port()]))
        self.log = open(os.path.join(workdir, "kamailio.log"), "w")
        command = [
            shutil.which("kamailio") or "/usr/sbin/kamailio", "-f", os.path.join(ROOT, "Examples/kamailio/kamailio.cfg"),
            "-DD", "-E", "-n", "1", "-m", "1024", "-M", "16", "-x", "tlsf", "-X", "tlsf", "-Y", self.directory, "-w", self.directory,
            "-A", f"LISTEN_UDP=udp:127.0.0.1:{self.port}", "-A", f"LISTEN_TCP=tcp:127.0.0.1:{self.port}",
            "-A", f'EVAPI_BIND="127.0.0.1:{free_port()}"', "-A", f'DISPATCHER_LIST="{listing}"',
            "-A", "PIKE_DENSITY=60000", "-A", "DS_PING_S=5",
        ] + (["-A", f"DOMAIN={domain}"] if domain else [])
        self.process = spawn(command, group=True, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 15
        while "kamailio ready" not in open(self.log.name).read():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"kamailio did not start: see {self.log.name}")
            time.sleep(0.1)
        time.sleep(settle)

    @property
    def pids(self):
        return descendants(self.process.pid)

    def version(self):
        return subprocess.run([self.process.args[0], "-v"], capture_output=True, text=True).stdout.splitlines()[0]

    def stop(self):
        stop(self.process)
        self.log.close()


def build():
    subprocess.run([os.path.join(ROOT, "Scripts", "bootstrap"), "release"], check=True, stdout=sys.stderr)
    return subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout.strip()
