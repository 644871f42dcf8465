#!/usr/bin/env python3
"""Browser audio for a page off localhost (issue 45's policy): parleyd serves the web softphone over HTTPS and its
socket over WSS (--websocket-tls CERT KEY), and hands its TURN server to the page's connection.

Chromium resolves the name phone.test to 127.0.0.1 (--host-resolver-rules) and accepts the test's self-signed
certificate (--ignore-certificate-errors), so the page's origin is https://phone.test:PORT: not localhost, a secure
context only because of TLS. A plain-HTTP page under the same kind of name is no secure context and has no
microphone at all (the control). Over TLS the page answers a call from parleyd B and the audio goes both ways, hold
and a reload included (browser_audio_check's incoming story); parleyd's answers to the page carry a relay candidate
from a coturn on loopback (A runs with --ice on and --turn-server). Raw TLS requests check the listener: the page
under the certificate's name (its socket wss://), 421 under another name, nothing for plain HTTP on the TLS port.

    python3 Tests/Frontend/browser_audio_tls_check.py --parleyd PATH --workdir DIR
"""
import argparse, http.server, os, socket, ssl, subprocess, sys, threading, time

from browser_audio_check import Stories, bob_heard_the_page, incoming_answered
from frontend_check import Checker, Failed, free_port

NAME = "phone.test"
ANSWERS = """
(() => {
  window.__answers = [];
  const apply = RTCPeerConnection.prototype.setRemoteDescription;
  RTCPeerConnection.prototype.setRemoteDescription = function (description, ...rest) {
    if (description && description.sdp) window.__answers.push(description.sdp);
    return apply.call(this, description, ...rest);
  };
})();
"""


def make_certificate(work):
    """A self-signed certificate for phone.test (the key 0600)."""
    cert, key = os.path.join(work, "web.pem"), os.path.join(work, "web.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-days", "2", "-subj", f"/CN={NAME}", "-addext", f"subjectAltName=DNS:{NAME}",
                    "-keyout", key, "-out", cert], check=True, capture_output=True, timeout=30)
    os.chmod(key, 0o600)
    return cert, key


class Coturn:
    """coturn on 127.0.0.1 at a free port, long-term credentials; stopped by its PID."""

    def __init__(self, work):
        self.port = free_port(socket.SOCK_DGRAM)
        self.user, password = "parley", "s3cret-" + os.urandom(6).hex()
        self.password_file = os.path.join(work, "turn.password")
        with open(os.open(self.password_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(password + "\n")
        relay = 30000 + (os.getpid() % 100) * 50
        self.log = open(os.path.join(work, "turnserver.out"), "w")
        self.process = subprocess.Popen([
            "turnserver", "-n", "--listening-ip=127.0.0.1", "--relay-ip=127.0.0.1", f"--listening-port={self.port}",
            f"--min-port={relay}", f"--max-port={relay + 49}", "--lt-cred-mech", f"--user={self.user}:{password}",
            "--realm=parley.test", "--no-tls", "--no-dtls", "--no-cli", "--allow-loopback-peers",
            f"--log-file={os.path.join(work, 'turnserver.log')}", "--simple-log", "--no-stdout-log",
            f"--pidfile={os.path.join(work, 'turnserver.pid')}", f"--db={os.path.join(work, 'turndb')}"],
            stdout=self.log, stderr=subprocess.STDOUT)

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def raw_request(port, host, secure=True):
    """One GET / over TLS (or plain TCP) to 127.0.0.1:port with `host` as Host: the response's head, b"" if none."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        if secure:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
            conn = context.wrap_socket(raw, server_hostname=NAME)
        else:
            conn = raw
        conn.sendall(f"GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        try:
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                data += chunk
        except (OSError, ssl.SSLError):
            pass
        return data.split(b"\r\n\r\n")[0]


def listener_checks(ck, port):
    head = raw_request(port, f"{NAME}:{port}").decode(errors="replace")
    ck.check("the page is served over TLS under the certificate's name", head.startswith("HTTP/1.1 200"), "200", head[:80])
    ck.check("the page's socket is wss:// under that name", f"wss://{NAME}:{port}/ws" in head, "wss:// in its CSP", head)
    head = raw_request(port, f"evil.test:{port}").decode(errors="replace")
    ck.check("another name gets 421", head.startswith("HTTP/1.1 421"), "421", head[:80])
    head = raw_request(port, f"{NAME}:{port}", secure=False)
    ck.check("plain HTTP on the TLS port gets no page", not head.startswith(b"HTTP/1.1 200"), "no HTTP answer", head[:80])


def plain_page_is_insecure(ck, s):
    """The control: a plain-HTTP page under a non-local name is no secure context, so it has no microphone."""
    server = http.server.HTTPServer(("127.0.0.1", free_port(socket.SOCK_STREAM)), http.server.SimpleHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        tab = s.browser.new_tab()
        tab.navigate(f"http://plain.{NAME}:{server.server_address[1]}/")
        got = tab.evaluate("({secure: window.isSecureContext, microphone: !!(navigator.mediaDevices && navigator.mediaDevices.getUserMedia)})")
        print(f"a plain-HTTP page at plain.{NAME}: {got}")
        ck.check("a plain-HTTP page off localhost has no microphone (the reason for TLS)",
                 got == {"secure": False, "microphone": False}, "insecure, no getUserMedia", got)
        tab.close()
    finally:
        server.shutdown()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parleyd", required=True)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    work = os.path.abspath(args.workdir)
    ck = Checker()
    s = turn = None
    try:
        cert, key = make_certificate(work)
        turn = Coturn(work)
        s = Stories(args, ck, a_options=(
            "--websocket-tls", cert, key, "--ice", "on", "--turn-server", f"turn:127.0.0.1:{turn.port}",
            "--turn-user", turn.user, "--turn-password-file", turn.password_file),
            page=lambda port, token: f"https://{NAME}:{port}/#token={token}",
            browser_flags=(f"--host-resolver-rules=MAP {NAME} 127.0.0.1, MAP plain.{NAME} 127.0.0.1",
                           "--ignore-certificate-errors"), script=ANSWERS)
        secure = s.tab.evaluate("window.isSecureContext")
        ck.check(f"the page at https://{NAME} is a secure context", secure is True, True, secure)
        listener_checks(ck, s.ws_port)
        plain_page_is_insecure(ck, s)
        call = incoming_answered(s)
        answers = s.tab.evaluate("window.__answers")
        relayed = [a for a in answers if " typ relay" in a]
        print(f"parleyd answered the page {len(answers)} times; {len(relayed)} with a relay candidate")
        ck.check("parleyd's answers to the page carry its TURN server's relay candidate", answers and len(relayed) == len(answers),
                 "every answer", f"{len(relayed)} of {len(answers)}")
        bob_heard_the_page(s, [call])
        s.a.log.flush()
        with open(os.path.join(work, "a.log")) as f, open(turn.password_file) as secret:
            password, log = secret.read().strip(), f.read()
        ck.check("the TURN password is in no log", password not in log, "absent", "present")
    except Failed as failure:
        ck.check("every story ran to its end", False, "no failure", str(failure))
        if s:
            for line in s.tab.console[-15:]:
                print("page console:", line)
    finally:
        if s:
            s.stop()
        if turn:
            turn.stop()
    failed = sorted(ck.failures.values())
    for line, times in failed:
        print(line + (f" (×{times})" if times > 1 else ""))
    print(f"browser audio over TLS: {ck.count} checks, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
