#!/usr/bin/env python3
"""Self-test for browser.py: drives a local test page in headless Chromium.

    python3 Tests/Frontend/browser_selftest.py [--workdir DIR]

Prints "browser self-test: ok" and exits 0, else prints the failure and exits 1.
"""
import argparse, functools, http.server, os, shutil, struct, sys, tempfile, threading, time, traceback

from browser import Browser, PageError

PAGE = """<!doctype html>
<html><head><title>selftest</title></head><body>
<input id="name"> <button id="go">Go</button> <button id="off" disabled>Off</button>
<button id="hid" style="display: none">Hidden</button> <input id="keys">
<script>
  const body = document.body, name = document.getElementById('name'), keys = document.getElementById('keys');
  let inputs = 0;
  name.addEventListener('input', () => inputs++);
  name.addEventListener('change', () => body.dataset.changed = name.value);
  document.getElementById('go').addEventListener('click', () => body.dataset.greeting = `hello ${name.value} ${inputs}`);
  keys.addEventListener('keydown', e => {
    body.dataset.lastKey = e.key;
    if (e.key === 'Enter') body.dataset.entered = keys.value;
    if (e.key === 'Escape') body.dataset.escaped = 'yes';
  });
  sessionStorage.loads = Number(sessionStorage.loads || 0) + 1;
  console.log('page loaded', 42);
  setTimeout(() => { throw new Error('boom'); }, 0);
</script></body></html>
"""


def expect(label, got, want):
    if got != want:
        raise AssertionError(f"{label}: got {got!r}, want {want!r}")


def raises(label, exc_type, fn, contains=""):
    try:
        fn()
    except exc_type as e:
        if contains not in str(e):
            raise AssertionError(f"{label}: {exc_type.__name__} {e!r} does not mention {contains!r}")
        return
    raise AssertionError(f"{label}: no {exc_type.__name__}")


def check_png(path, width):
    """A PNG over 1 KB, width pixels wide (headless=new counts window chrome in --window-size: 600 high is 513)."""
    with open(path, "rb") as f:
        data = f.read()
    expect(f"{path} signature", data[:8], b"\x89PNG\r\n\x1a\n")
    if len(data) <= 1024:
        raise AssertionError(f"{path}: only {len(data)} bytes")
    expect(f"{path} width", struct.unpack(">I", data[16:20])[0], width)


def serve(directory):
    """An http.server on 127.0.0.1 (free port) serving directory from a daemon thread."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=directory))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def run(workdir):
    site = os.path.join(workdir, "site")
    os.makedirs(site, exist_ok=True)
    with open(os.path.join(site, "index.html"), "w") as f:
        f.write(PAGE)
    server = serve(site)
    origin = f"http://127.0.0.1:{server.server_address[1]}"
    t0 = time.monotonic()
    try:
        browser = Browser(workdir, size=(800, 600))
        with browser:
            print(f"  chromium up in {time.monotonic() - t0:.2f} s (DevTools port {browser.port})")
            tab = browser.new_tab(origin + "/index.html")
            expect("title", tab.evaluate("document.title"), "selftest")
            print(f"  viewport {tab.evaluate('[innerWidth, innerHeight]')} for --window-size=800,600")
            expect("a promise is awaited", tab.evaluate("new Promise(r => setTimeout(() => r(7), 50))"), 7)

            tab.fill("#name", "Ada")
            tab.click("#go")
            expect("click after fill", tab.wait_for("document.body.dataset.greeting", what="the greeting"),
                   "hello Ada 1")
            expect("change event", tab.evaluate("document.body.dataset.changed"), "Ada")
            raises("click on nothing", PageError, lambda: tab.click("#missing"), "no element matches #missing")
            raises("click on a disabled button", PageError, lambda: tab.click("#off"), "disabled")
            raises("click on a hidden button", PageError, lambda: tab.click("#hid"), "hidden")

            tab.evaluate("document.getElementById('keys').focus()")
            for key in ("5", "#", "*", "a", "Backspace"):
                tab.press(key)
            expect("typed keys", tab.evaluate("document.getElementById('keys').value"), "5#*")
            expect("last key", tab.evaluate("document.body.dataset.lastKey"), "Backspace")
            tab.press("Enter")
            expect("Enter", tab.wait_for("document.body.dataset.entered", what="Enter"), "5#*")
            tab.press("Escape")
            expect("Escape", tab.wait_for("document.body.dataset.escaped", what="Escape"), "yes")

            raises("a throwing expression", PageError, lambda: tab.evaluate("(() => { throw new Error('nope'); })()"),
                   "nope")
            raises("a rejected promise", PageError, lambda: tab.evaluate("Promise.reject(new Error('later'))"),
                   "later")
            raises("a syntax error", PageError, lambda: tab.evaluate("1 +* 2"), "SyntaxError")
            console = tab.console
            if "log: page loaded 42" not in console or not any("boom" in m for m in console if
                                                                  m.startswith("exception:")):
                raise AssertionError(f"console: {console!r}")

            t = time.monotonic()
            raises("wait_for timing out", AssertionError, lambda: tab.wait_for("false", 0.3, what="never"), "never")
            expect("wait_for gives up on time", time.monotonic() - t < 2, True)
            check_png(os.path.join(workdir, "timeout-1.png"), 800)

            tab.reload()
            expect("reload", (tab.evaluate("sessionStorage.loads"), tab.evaluate("document.body.dataset.greeting")),
                   ("2", None))
            tab.navigate(origin + "/index.html#fragment")
            expect("same-document navigation", tab.evaluate("location.hash"), "#fragment")

            tab.grant_notifications(origin)
            expect("notifications granted", tab.evaluate("Notification.permission"), "granted")

            tab2 = browser.new_tab(origin + "/index.html?two")
            expect("second tab", (tab2.evaluate("location.search"), tab2.evaluate("sessionStorage.loads")),
                   ("?two", "1"))
            for t in (tab, tab2):  # both tabs stay visible and keep rendering
                expect("visible", t.evaluate("document.visibilityState"), "visible")
                expect("animation frame", t.evaluate("new Promise(r => requestAnimationFrame(() => r(1)))", 3), 1)
            check_png(tab2.screenshot(os.path.join(workdir, "tab2.png")), 800)
            check_png(tab.screenshot(os.path.join(workdir, "tab1.png")), 800)
            t = time.monotonic()
            tab2.close()
            print(f"  tab closed in {time.monotonic() - t:.3f} s")
            tab2.close()
            targets = [t["targetId"] for t in browser.conn.send("Target.getTargets")["targetInfos"]]
            expect("closed tab gone", (tab2.target_id in targets, tab.target_id in targets), (False, True))
            pgid, profile = browser.pgid, browser.profile
        browser.close()  # a second close is harmless
        raises("process group gone", ProcessLookupError, lambda: os.killpg(pgid, 0))
        expect("profile removed", os.path.exists(profile), False)
    finally:
        server.shutdown()
        server.server_close()
    print(f"  total {time.monotonic() - t0:.2f} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", help="where the log and screenshots go (default: a temp dir, removed on success)")
    args = ap.parse_args()
    workdir = args.workdir or tempfile.mkdtemp(prefix="browser-selftest-")
    try:
        run(workdir)
    except Exception:
        traceback.print_exc()
        print(f"browser self-test: FAILED (log and screenshots in {workdir})")
        return 1
    if not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    print("browser self-test: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
