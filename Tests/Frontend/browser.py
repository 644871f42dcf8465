"""A small Chrome DevTools Protocol driver for headless Chromium, on the Python standard library.

    with Browser(workdir) as browser:
        tab = browser.new_tab("http://127.0.0.1:8080/")
        tab.fill("#number", "5")
        tab.click("#call")
        tab.wait_for("document.body.dataset.state === 'ringing'", what="the call to ring")

Chromium rejects DevTools WebSockets that carry an Origin header (unless --remote-allow-origins);
websocket_client sends none.
"""
import base64, collections, json, os, shutil, signal, subprocess, tempfile, time

from websocket_client import Closed, WebSocketTransport

CHROMIUM = "/usr/bin/chromium"
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-breakpad", "--disable-dev-shm-usage",
         "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
         "--disable-component-update", "--mute-audio")
# key -> (code, windowsVirtualKeyCode, text sent as a char event or None, shift held)
KEYS = {"Enter": ("Enter", 13, "\r", False), "Escape": ("Escape", 27, None, False),
        "Backspace": ("Backspace", 8, None, False), "Tab": ("Tab", 9, None, False), " ": ("Space", 32, " ", False),
        "*": ("Digit8", 56, "*", True), "#": ("Digit3", 51, "#", True), "+": ("Equal", 187, "+", True)}


class CDPError(Exception):
    """A DevTools command failed: an error reply, no reply in time, or the connection closed."""


class PageError(Exception):
    """JavaScript evaluated in the page threw; the message is the exception's description."""


class Connection:
    """One DevTools WebSocket: numbered commands matched to their replies, events queued as they arrive."""

    def __init__(self, port, path, on_event=None):
        self.ws = WebSocketTransport(port, path, timeout=10.0)
        self.next_id, self.on_event = 0, on_event
        self.events = collections.deque(maxlen=2000)

    def _read(self, deadline):
        """Read one message; queue it (and tell on_event) if it is an event; return it."""
        msg = json.loads(self.ws.recv_text(deadline))
        if "method" in msg:
            self.events.append(msg)
            if self.on_event:
                self.on_event(msg)
        return msg

    def send(self, method, params=None, timeout=10.0):
        """Run a command and return its result; CDPError on an error reply, a timeout or a closed connection."""
        self.next_id += 1
        ident, deadline = self.next_id, time.monotonic() + timeout
        try:
            self.ws.send_text(json.dumps({"id": ident, "method": method, "params": params or {}}))
            while True:
                msg = self._read(deadline)
                if msg.get("id") == ident:
                    break
        except TimeoutError:
            raise CDPError(f"{method}: no reply within {timeout} s") from None
        except (Closed, OSError) as e:
            raise CDPError(f"{method}: DevTools connection closed ({e})") from None
        if "error" in msg:
            err = msg["error"]
            raise CDPError(f"{method} failed: {err.get('message')} (code {err.get('code')}) {err.get('data', '')}")
        return msg.get("result", {})

    def wait_event(self, method, timeout=10.0):
        """The first queued or newly arriving event named method (taken off the queue); CDPError on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            for ev in self.events:
                if ev["method"] == method:
                    self.events.remove(ev)
                    return ev
            try:
                self._read(deadline)
            except TimeoutError:
                raise CDPError(f"no {method} within {timeout} s") from None
            except (Closed, OSError) as e:
                raise CDPError(f"DevTools connection closed while waiting for {method} ({e})") from None

    def drain(self):
        """Read whatever messages have already arrived, without waiting."""
        try:
            while True:
                self._read(time.monotonic() + 0.01)
        except (TimeoutError, Closed, OSError):
            pass

    def close(self):
        """Close the WebSocket."""
        self.ws.close()


class Browser:
    """Headless Chromium in its own process group with a throw-away profile; a context manager.

    Browser(workdir, size=(1280, 800), screenshot_dir=None, log_name="chromium.log", extra_flags=()): Chromium's
    output goes to workdir/log_name, timeout screenshots to screenshot_dir (default workdir); extra_flags are added
    to its command line (a fake microphone).
    """

    def __init__(self, workdir, size=(1280, 800), screenshot_dir=None, log_name="chromium.log",
                 binary=CHROMIUM, startup_timeout=15.0, extra_flags=()):
        os.makedirs(workdir, exist_ok=True)
        self.screenshot_dir = screenshot_dir or workdir
        self.log_path, self.timeouts, self.tabs, self.conn = os.path.join(workdir, log_name), 0, [], None
        self.closed, self.proc = False, None
        self.profile = tempfile.mkdtemp(prefix="chromium-profile-")
        try:
            with open(self.log_path, "wb") as log:
                self.proc = subprocess.Popen([binary, *FLAGS, *extra_flags, f"--window-size={size[0]},{size[1]}",
                                              "--remote-debugging-port=0", f"--user-data-dir={self.profile}",
                                              "about:blank"], stdin=subprocess.DEVNULL, stdout=log,
                                             stderr=subprocess.STDOUT, start_new_session=True)
            self.pgid = self.proc.pid
            self.port, path = self._devtools_address(startup_timeout)
            self.conn = Connection(self.port, path)
        except BaseException:
            self.close()
            raise

    def _devtools_address(self, timeout):
        """(port, browser path) from <profile>/DevToolsActivePort, polled until Chromium has written it."""
        active, deadline = os.path.join(self.profile, "DevToolsActivePort"), time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                with open(active) as f:
                    lines = f.read().split("\n")
                if len(lines) >= 2 and lines[0].isdigit() and lines[1].startswith("/devtools/browser/"):
                    return int(lines[0]), lines[1]
            except FileNotFoundError:
                pass
            time.sleep(0.05)
        with open(self.log_path, "rb") as f:
            tail = f.read()[-3000:].decode(errors="replace")
        raise RuntimeError(f"chromium gave no DevTools port within {timeout} s (exit status {self.proc.poll()}); "
                           f"{self.log_path} ends:\n{tail}")

    def new_tab(self, url="about:blank", new_window=True):
        """Open a new tab, wait for url to load, and return its Tab. In a window of its own by default: in a shared
        window only the newest tab is visible (the others are `document.hidden`, as a background tab is)."""
        target = self.conn.send("Target.createTarget", {"url": "about:blank", "newWindow": new_window})["targetId"]
        tab = Tab(self, target)
        self.tabs.append(tab)
        if url != "about:blank":
            tab.navigate(url)
        return tab

    def grant_notifications(self, origin):
        """Grant the notifications permission to origin (e.g. "http://127.0.0.1:8080")."""
        self.conn.send("Browser.grantPermissions", {"permissions": ["notifications"], "origin": origin})

    def close(self):
        """Kill Chromium's whole process group (SIGTERM, then SIGKILL after 3 s) and remove the profile; idempotent."""
        if self.closed:
            return
        self.closed = True
        for conn in [tab.conn for tab in self.tabs] + [self.conn]:
            if conn:
                try:
                    conn.close()
                except OSError:
                    pass
        self.tabs, self.conn = [], None
        if self.proc is None:
            shutil.rmtree(self.profile, ignore_errors=True)
            return
        if self.proc.returncode is None:
            try:
                os.killpg(self.pgid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(3)
            except subprocess.TimeoutExpired:
                pass
        # The main process exits at once on SIGTERM, its helpers (zygote, renderers) ~1 s later: SIGKILL them now,
        # then wait (bounded) until init has reaped them all, so the group is really gone.
        deadline = time.monotonic() + 5
        try:
            os.killpg(self.pgid, signal.SIGKILL)
            while time.monotonic() < deadline:
                if self.proc.returncode is None:
                    self.proc.poll()
                time.sleep(0.02)
                os.killpg(self.pgid, 0)  # ProcessLookupError once the whole group has gone
        except ProcessLookupError:
            pass
        self.proc.poll()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Tab:
    """One page target, driven over its own DevTools WebSocket (ws://127.0.0.1:PORT/devtools/page/ID).

    `console` lists "type: text" strings for console calls, "exception: text" for uncaught exceptions and
    "browser-LEVEL: source: text" for the browser's own log (CSP violations, failed loads: Log.entryAdded).
    Tabs come from Browser.new_tab().
    """

    def __init__(self, browser, target_id):
        self.browser, self.target_id, self._console = browser, target_id, []
        self.conn = Connection(browser.port, f"/devtools/page/{target_id}", self._on_event)
        self.send("Page.enable")
        self.send("Runtime.enable")
        self.send("Log.enable")

    def _on_event(self, ev):
        p = ev.get("params", {})
        if ev["method"] == "Runtime.consoleAPICalled":
            text = " ".join(str(a.get("value", a.get("description", a.get("type")))) for a in p.get("args", []))
            self._console.append(f"{p.get('type')}: {text}")
        elif ev["method"] == "Log.entryAdded":
            entry = p.get("entry", {})
            self._console.append(f"browser-{entry.get('level')}: {entry.get('source')}: {entry.get('text')}")
        elif ev["method"] == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            self._console.append(f"exception: {d.get('exception', {}).get('description') or d.get('text')}")

    @property
    def console(self):
        """Console messages ("log: text", "error: text", ...) and uncaught exceptions ("exception: text") so far."""
        self.conn.drain()
        return self._console

    def send(self, method, params=None, timeout=10.0):
        """Run a DevTools command on this page and return its result (CDPError on failure)."""
        return self.conn.send(method, params, timeout)

    def navigate(self, url, timeout=10.0):
        """Load url and wait for its load event; CDPError when the navigation fails."""
        self.conn.drain()
        self.conn.events.clear()
        result = self.send("Page.navigate", {"url": url}, timeout)
        if result.get("errorText"):
            raise CDPError(f"navigating to {url}: {result['errorText']}")
        if result.get("loaderId"):  # a same-document navigation (#fragment) has no loader and no load event
            self.conn.wait_event("Page.loadEventFired", timeout)

    def reload(self, timeout=10.0):
        """Reload the page and wait for its load event."""
        self.conn.drain()
        self.conn.events.clear()
        self.send("Page.reload", {}, timeout)
        self.conn.wait_event("Page.loadEventFired", timeout)

    def evaluate(self, expr, timeout=10.0):
        """The value of the JavaScript expression expr (promises awaited); PageError when it throws."""
        # No userGesture: only real input (press, and what the page does with it) gives the page user activation,
        # so autoplay rules hold in the tests as they do for people.
        r = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True}, timeout)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise PageError(d.get("exception", {}).get("description") or d.get("text") or repr(d))
        return r["result"].get("value")

    def wait_for(self, expr, timeout=10.0, what=None):
        """Poll expr every 50 ms until it is truthy and return its value; a throw counts as not yet.

        On timeout saves timeout-<n>.png in the browser's screenshot_dir and raises AssertionError.
        """
        deadline, last = time.monotonic() + timeout, None
        while True:
            try:
                last = self.evaluate(expr, timeout=max(1.0, deadline - time.monotonic()))
                if last:
                    return last
            except (PageError, CDPError) as e:
                last = e
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.browser.timeouts += 1
        shot = os.path.join(self.browser.screenshot_dir, f"timeout-{self.browser.timeouts}.png")
        try:
            self.screenshot(shot)
        except (CDPError, OSError) as e:
            shot = f"none: {e}"
        raise AssertionError(f"timed out after {timeout} s waiting for {what or expr}; last value {last!r} "
                             f"(screenshot {shot})")

    def _element_js(self, selector, action, body):
        return (f"(() => {{ const sel = {json.dumps(selector)}, el = document.querySelector(sel);\n"
                f"  if (!el) throw new Error('{action}: no element matches ' + sel);\n"
                f"  if (!el.getClientRects().length || !el.checkVisibility({{visibilityProperty: true}}))\n"
                f"    throw new Error('{action}: ' + sel + ' is hidden');\n"
                f"  if (el.matches(':disabled')) throw new Error('{action}: ' + sel + ' is disabled');\n"
                f"  {body} return true; }})()")

    def click(self, selector):
        """Click the element selector matches; PageError if there is none or it is hidden or disabled."""
        self.evaluate(self._element_js(selector, "click", "el.scrollIntoView({block: 'center'}); el.click();"))

    def fill(self, selector, text):
        """Set the value of the field selector matches and dispatch `input` and `change` (PageError as click)."""
        self.evaluate(self._element_js(selector, "fill", (
            f"el.focus(); el.value = {json.dumps(text)};"
            " el.dispatchEvent(new Event('input', {bubbles: true}));"
            " el.dispatchEvent(new Event('change', {bubbles: true}));")))

    def press(self, key):
        """Type one key into the focused element: a single character ("5", "#", "*") or Enter/Escape/Backspace/Tab."""
        if key in KEYS:
            code, vk, text, shift = KEYS[key]
        elif len(key) == 1:
            code = f"Digit{key}" if key.isdigit() else f"Key{key.upper()}" if key.isascii() and key.isalpha() else ""
            vk, text, shift = ord(key.upper()) if key.isascii() and key.isalnum() else 0, key, key.isupper()
        else:
            raise ValueError(f"press: unsupported key {key!r}")
        base = {"key": key, "code": code, "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk,
                "modifiers": 8 if shift else 0}
        self.send("Input.dispatchKeyEvent", {"type": "rawKeyDown", **base})
        if text:
            self.send("Input.dispatchKeyEvent", {"type": "char", "text": text, "unmodifiedText": text, **base})
        self.send("Input.dispatchKeyEvent", {"type": "keyUp", **base})

    def screenshot(self, path):
        """Save a PNG of the visible page at path and return path."""
        data = self.send("Page.captureScreenshot", {"format": "png"}, timeout=20.0)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path

    def grant_notifications(self, origin):
        """Grant the notifications permission to origin, over the browser-level connection."""
        self.browser.grant_notifications(origin)

    def close(self, timeout=5.0):
        """Close this tab (Target.closeTarget) and wait until the target is gone; idempotent."""
        if self not in self.browser.tabs:
            return
        self.browser.tabs.remove(self)
        self.conn.close()
        conn, deadline = self.browser.conn, time.monotonic() + timeout
        conn.send("Target.closeTarget", {"targetId": self.target_id})
        # closeTarget answers before the target has gone (Chromium 156); wait, so later target lists are right
        while any(t["targetId"] == self.target_id for t in conn.send("Target.getTargets")["targetInfos"]):
            if time.monotonic() > deadline:
                raise CDPError(f"tab {self.target_id} still open {timeout} s after Target.closeTarget")
            time.sleep(0.02)
