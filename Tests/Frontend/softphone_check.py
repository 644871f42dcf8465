#!/usr/bin/env python3
"""The web softphone in a real headless Chromium, one story per user story, against real parleyd on loopback.

parleyd A serves the page (--websocket); parleyd B is the peer, driven over its control socket. Each story works
the page as a person would (clicks, the keyboard), waits for what the page shows, and checks what the peer saw.
A screenshot is written after each step. Exits 0 when every check passes, else 1 with one line per failure.

    python3 Tests/Frontend/softphone_check.py --parleyd PATH --parley PATH --workdir DIR [--shots DIR]
"""
import argparse, functools, http.server, json, os, shutil, socket, subprocess, sys, threading, time, urllib.request

from browser import Browser, CDPError, PageError
from frontend_check import Checker, Daemon, Failed, changed, free_port, is_new

WAIT = 10.0  # seconds the page or the peer may take for any one step


def js(value):
    """A Python value as a JavaScript literal."""
    return json.dumps(value)


class Stories:
    """What the stories share: the two daemons, B's control client, the browser and its main tab."""

    def __init__(self, args, ck):
        self.ck, self.work = ck, os.path.abspath(args.workdir)
        self.shots = os.path.abspath(args.shots or os.path.join(self.work, "screenshots"))
        shutil.rmtree(self.shots, ignore_errors=True)
        os.makedirs(self.shots)
        self.port_a, self.port_b = free_port(socket.SOCK_DGRAM), free_port(socket.SOCK_DGRAM)
        self.ws_port = free_port(socket.SOCK_STREAM)
        self.alice_uri, self.bob_uri = f"sip:alice@127.0.0.1:{self.port_a}", f"sip:bob@127.0.0.1:{self.port_b}"
        self.parleyd, self.parley, self.push_port = args.parleyd, args.parley, free_port(socket.SOCK_STREAM)
        self.step = 0
        self.browser = self.tab = self.peer = self.push_sim = self.push_log = None
        self.a = self.b = None

    def start(self):
        """Starts the push simulator, both daemons and the browser (stop() ends whatever started)."""
        contacts = os.path.join(self.work, "contacts.json")
        with open(contacts, "w") as f:
            json.dump({"contacts": [{"name": "Bob Builder", "handles": [{"kind": "generic", "value": self.bob_uri}]},
                                    {"name": "Phone Pat", "handles": [{"kind": "phoneNumber", "value": "+14155550100"}]}]}, f)
        self.push_log = open(os.path.join(self.work, "push-sim.log"), "w")
        self.push_sim = subprocess.Popen([self.parley, "push-sim", "--listen", f"127.0.0.1:{self.push_port}"],
                                         stdin=subprocess.DEVNULL, stdout=self.push_log, stderr=subprocess.STDOUT)
        wait_for_port(self.push_port)
        self.a = Daemon(self.parleyd, "a", self.work, ["--listen", f"udp://127.0.0.1:{self.port_a}", "--user", "alice",
                                                       "--websocket", f"127.0.0.1:{self.ws_port}", "--contacts", contacts,
                                                       "--push-service", f"127.0.0.1:{self.push_port}",
                                                       "--push-token", "web-device", "--push-invite-wait", "15",
                                                       "--audio-source", "tone:440", "--audio-sink", "null"])
        self.b = Daemon(self.parleyd, "b", self.work, ["--listen", f"udp://127.0.0.1:{self.port_b}", "--user", "bob",
                                                       "--no-history", "--audio-source", "tone:1000", "--audio-sink", "null"])
        for daemon in (self.a, self.b):
            daemon.wait_ready()
        self.peer = self.b.connect(self.ck, "B")
        self.peer.result("subscribe")
        self.page = f"http://127.0.0.1:{self.ws_port}/"
        self.url = f"{self.page}#token={self.a.token()}"
        self.browser = Browser(self.work, size=(1280, 900), screenshot_dir=self.shots)
        self.browser.grant_notifications(self.page.rstrip("/"))
        self.tab = self.browser.new_tab(self.url)

    def stop(self):
        if self.browser:
            self.browser.close()
        for daemon in (self.a, self.b):
            if daemon:
                daemon.stop()
        if self.push_sim:
            self.push_sim.terminate()
            try:
                self.push_sim.wait(timeout=3)
            except subprocess.TimeoutExpired:
                self.push_sim.kill()
            self.push_log.close()

    # ------------------------------------------------------------------------------------------- page helpers

    def shot(self, name, tab=None):
        self.step += 1
        (tab or self.tab).screenshot(os.path.join(self.shots, f"{self.step:02d}-{name}.png"))

    def wait(self, expr, what, tab=None, timeout=WAIT):
        try:
            return (tab or self.tab).wait_for(expr, timeout=timeout, what=what)
        except AssertionError as e:
            raise Failed(str(e))

    def value(self, expr, tab=None):
        return (tab or self.tab).evaluate(expr)

    def click(self, selector, tab=None):
        try:
            (tab or self.tab).click(selector)
        except (PageError, CDPError) as e:
            raise Failed(f"click {selector}: {e}")

    @staticmethod
    def card(uuid):
        return f'[data-call][data-uuid="{uuid}"]'

    def card_state(self, uuid, state, what, tab=None):
        self.wait(f"document.querySelector({js(self.card(uuid))})?.dataset.state === {js(state)}", what, tab)

    def gone(self, uuid, what, tab=None):
        self.wait(f"!document.querySelector('[data-uuid={js(uuid)}]')", what, tab)

    def connected(self, tab=None):
        self.wait("document.querySelector('[data-connection]').dataset.state === 'connected'", "the page to connect", tab)

    def incoming_uuid(self):
        """Waits for an incoming banner and returns its conversation's uuid."""
        return self.wait("document.querySelector('[data-incoming]')?.dataset.uuid", "an incoming call banner")

    def recents_ready(self):
        """Waits until the Recents list matches the daemon's history (its newest record is shown)."""
        newest = self.a_client().result("history", {"limit": 1})["records"]
        if newest:
            self.wait(f"[...document.querySelectorAll('[data-recent]')].some(li => li.dataset.recordIds.split(',')"
                      f".includes({js(str(newest[0]['id']))}))", "Recents to show the newest record")

    def a_client(self):
        if not hasattr(self, "_a_client") or self._a_client is None:
            self._a_client = self.a.connect(self.ck, "A")
        return self._a_client

    def page_state(self):
        """What the main tab shows now, for a failure's message: its toasts and console errors."""
        try:
            toasts = self.value("[...document.querySelectorAll('[data-toast]')].map(t => t.textContent)")
            return f"page toasts {toasts}, console {[l for l in self.tab.console if not l.startswith('log')][-5:]}"
        except (PageError, CDPError) as e:
            return f"page state unknown ({e})"

    # ------------------------------------------------------------------------------------------- peer helpers

    def peer_calls(self):
        """B calls A; returns B's conversation uuid."""
        return self.peer.result("start", {"to": self.alice_uri})["conversation"]["uuid"]

    def peer_waits(self, uuid, test, what, since=0):
        return self.peer.wait_event(what, changed(uuid, test), since)

    def peer_incoming(self, since):
        return self.peer.wait_event("an incoming call at B", is_new("incoming"), since)["data"]["conversation"]["uuid"]


class QuietFiles(http.server.SimpleHTTPRequestHandler):
    """Serves a directory without logging each request."""

    def log_message(self, *args):
        pass


def wait_for_port(port, timeout=10.0):
    """Waits until something accepts TCP connections on the loopback port."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise Failed(f"nothing listens on 127.0.0.1:{port}")
            time.sleep(0.05)


# ------------------------------------------------------------------------------------------------ stories

def bad_entrances(s):
    """No token, a wrong token, a page from a foreign origin: each says what to do, none is blank."""
    ck = s.ck
    tab = s.browser.new_tab(s.page)
    s.wait("document.querySelector('[data-connection]').dataset.state === 'no-token'", "the no-token state", tab)
    ck.check("without a token the page says how to get one", "parley web" in s.value(
        "document.querySelector('[data-notice]').textContent", tab), "a notice naming `parley web`",
        s.value("document.querySelector('[data-notice]').outerHTML", tab))
    s.shot("no-token", tab)
    tab.navigate(f"{s.page}#token={'0' * 64}")
    tab.reload()
    s.wait("document.querySelector('[data-connection]').dataset.state === 'unauthorized'", "the token refused", tab)
    notice = s.value("document.querySelector('[data-notice]').textContent", tab)
    ck.check("a wrong token is refused with a clear message", "refused" in notice and "parley web" in notice,
             "a notice saying the token was refused", notice)
    s.shot("wrong-token", tab)
    tab.close()

    site = os.path.join(s.work, "elsewhere")
    os.makedirs(site, exist_ok=True)
    for name in ("index.html", "app.css", "app.js", "connection.js", "calls.js", "dial.js", "recents.js", "alerts.js",
                 "dom.js", "groups.js", "audio.js", "icon.svg"):
        with urllib.request.urlopen(s.page + ("" if name == "index.html" else name)) as response, \
                open(os.path.join(site, name), "wb") as f:
            f.write(response.read())
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietFiles, directory=site))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        origin = f"http://127.0.0.1:{server.server_address[1]}"
        tab = s.browser.new_tab(f"{origin}/#token={s.a.token()}&server=ws://127.0.0.1:{s.ws_port}/ws")
        s.wait("document.querySelector('[data-connection]').dataset.state === 'unreachable'", "the foreign origin refused", tab)
        notice = s.value("document.querySelector('[data-notice]').textContent", tab)
        ck.check("a page from a foreign origin is told to ask for --allow-origin", f"--allow-origin {origin}" in notice,
                 f"a notice naming --allow-origin {origin}", notice)
        s.shot("foreign-origin", tab)
        tab.close()
    finally:
        server.shutdown()


def entering(s):
    """The page with the token: connected, the token gone from the address bar, the user shown."""
    s.connected()
    s.ck.equal("the token is removed from the address bar", s.value("location.href"), s.page)
    s.ck.equal("the token stays in this tab's session storage", s.value("sessionStorage.getItem('parley.token')"), s.a.token())
    s.wait("document.querySelector('[data-user]').textContent.includes('alice')", "the user in the header")
    s.wait("document.querySelector('[data-live-count]').dataset.count === '0'", "no live calls")
    s.shot("connected")


def incoming_answered_then_remote_hangup(s):
    mark = s.peer.mark()
    b_uuid = s.peer_calls()
    uuid = s.incoming_uuid()
    banner = f'[data-incoming][data-uuid="{uuid}"]'
    s.wait(f"document.querySelector({js(banner)}).querySelector('[data-name]').textContent === 'Bob Builder'",
           "the caller's contact name on the banner")
    s.ck.equal("the banner shows the caller's handle",
               s.value(f"document.querySelector({js(banner)} + ' [data-handle]').textContent"), s.bob_uri)
    s.ck.equal("the banner is announced (role=alert)", s.value(f"document.querySelector({js(banner)}).getAttribute('role')"), "alert")
    s.wait("document.title.includes('Bob Builder is calling')", "the title to say who calls")
    s.wait(f"document.querySelector({js(banner + ' [data-ring-timer]')}).textContent !== ''", "a ring timer")
    s.shot("incoming")
    s.click(banner + ' [data-action="join"]')
    s.card_state(uuid, "joined", "the answered call's card to show joined")
    s.peer_waits(b_uuid, lambda c, d: c["state"] == "joined", "B's call joined", mark)
    s.wait(f"document.querySelector({js(s.card(uuid) + ' [data-timer]')}).dataset.connected === 'true'", "a call timer")
    s.wait(f"/^0:0[1-9]/.test(document.querySelector({js(s.card(uuid) + ' [data-timer]')}).textContent)",
           "the call timer to run")
    s.shot("answered")
    s.peer.result("end", {"conversation": b_uuid})
    s.gone(uuid, "the card to go when the peer hangs up")
    s.wait("[...document.querySelectorAll('[data-toast]')].some(t => t.textContent.includes('ended by them'))",
           "a toast saying they ended it")
    s.recents_ready()
    s.ck.equal("Recents shows the answered call first", s.value(
        "document.querySelector('[data-recent]').dataset.status"), "connected")
    s.shot("remote-hangup")


def outgoing_call(s):
    """Dialled with the keyboard into the field, ringing at B, answered by B: returns (our uuid, B's uuid)."""
    for key in "1#":
        s.click(f'[data-key="{key}"]')
    s.ck.equal("the dial pad types into the field", s.value("document.querySelector('[data-dial-input]').value"), "1#")
    s.click("[data-dial-erase]")
    s.ck.equal("⌫ erases the last character", s.value("document.querySelector('[data-dial-input]').value"), "1")
    s.tab.fill("[data-dial-input]", "build")
    s.wait(f"[...document.querySelectorAll('[data-suggestions] option')].some(o => o.value === {js(s.bob_uri)} "
           "&& o.label.includes('Bob Builder'))", "the contact suggested for part of its name")
    mark = s.peer.mark()
    s.tab.fill("[data-dial-input]", s.bob_uri[:-1])
    s.tab.click("body")  # outside the field: keys typed on the page go to the dial field
    s.tab.evaluate("document.activeElement.blur()")
    s.ck.equal("no ringtone before the person touched the page (autoplay rules)",
               s.value("document.querySelector('[data-enable-alerts]').dataset.ringtone"), "off")
    s.tab.press(s.bob_uri[-1])
    s.wait("document.querySelector('[data-enable-alerts]').dataset.ringtone === 'on'",
           "a key press to unlock the ringtone (its audio context runs)")
    s.ck.equal("a digit typed on the page lands in the dial field", s.value("document.querySelector('[data-dial-input]').value"),
               s.bob_uri)
    s.click("[data-dial-call]")
    b_uuid = s.peer_incoming(mark)
    uuid = s.wait("document.querySelector('[data-call][data-direction=outgoing]')?.dataset.uuid", "an outgoing card")
    s.card_state(uuid, "ringing", "the outgoing call to ring")
    s.ck.equal("the outgoing card names the contact", s.value(f"document.querySelector({js(s.card(uuid) + ' [data-name]')}).textContent"),
               "Bob Builder")
    s.shot("outgoing-ringing")
    s.peer.result("join", {"conversation": b_uuid})
    s.card_state(uuid, "joined", "the outgoing call to connect")
    s.ck.equal("the dial field is cleared once the call is placed", s.value("document.querySelector('[data-dial-input]').value"), "")
    s.shot("outgoing-joined")
    return uuid, b_uuid


def hold_and_resume(s, uuid, b_uuid):
    mark = s.peer.mark()
    s.click(s.card(uuid) + ' [data-action="hold"]')
    s.card_state(uuid, "paused", "the call to be on hold")
    s.wait(f"!!document.querySelector({js(s.card(uuid) + ' [data-badge=held]')})", "the held badge")
    s.peer_waits(b_uuid, lambda c, d: c["isRemotelyHeld"], "B to be held", mark)
    s.shot("held")
    s.click(s.card(uuid) + ' [data-action="resume"]')
    s.card_state(uuid, "joined", "the call to resume")
    s.peer_waits(b_uuid, lambda c, d: not c["isRemotelyHeld"], "B to be resumed", mark)


def tones_reach_the_peer(s, uuid, b_uuid):
    mark = s.peer.mark()
    s.tab.fill("[data-dial-input]", s.bob_uri)  # something a stray Enter could dial
    s.click(s.card(uuid) + ' [data-action="keypad"]')
    first_key = s.card(uuid) + ' [data-tone="1"]'
    s.value(f"document.querySelector({js(first_key)}).focus()")
    s.tab.press("Enter")  # the focused key sends its tone; it does not place a call
    for digit in "2#":
        s.click(f'{s.card(uuid)} [data-tone="{digit}"]')
    s.wait(f"document.querySelector({js(s.card(uuid) + ' [data-tones-sent]')}).textContent === 'Sent: 12#'", "the keypad's readout")
    received = ""
    deadline = time.monotonic() + WAIT
    while len(received) < 3 and time.monotonic() < deadline:
        ev = s.peer.wait_event("tones at B", lambda e: e.get("event") == "tonesReceived", mark)
        mark = s.peer.events.index(ev) + 1
        received += ev["data"]["digits"]
    s.ck.equal("the keypad's tones reach the peer, in order (SIP INFO)", received, "12#")
    s.ck.equal("the keypad shows what was sent", s.value(f"document.querySelector({js(s.card(uuid) + ' [data-tones-sent]')}).textContent"),
               "Sent: 12#")
    s.ck.equal("the focused key keeps the focus while the card is drawn again", s.value("document.activeElement.dataset.tone"), "1")
    s.ck.equal("Enter on a key placed no call", s.value("document.querySelector('[data-live-count]').dataset.count"), "1")
    s.tab.fill("[data-dial-input]", "")
    s.shot("keypad")
    s.click(s.card(uuid) + ' [data-action="keypad"]')


def mute_and_unmute(s, uuid):
    meter = lambda which: f"document.querySelector({js(s.card(uuid) + f' [data-level={which}]')})?.value"
    s.wait(f"{meter('heard')} > 40 && {meter('said')} > 40", "both meters to show the tones (-9 dBov: 51 of 60)")
    s.ck.equal("the card says the peer is speaking",
               s.value(f"document.querySelector({js(s.card(uuid) + ' [data-levels]')}).dataset.speaking"), "true")
    s.click(s.card(uuid) + ' [data-action="mute"]')
    s.wait(f"!!document.querySelector({js(s.card(uuid) + ' [data-badge=muted]')})", "the muted badge")
    s.wait(f"{meter('said')} === 0", "our meter to fall to nothing while muted")
    s.ck.check("their meter goes on while we are muted", s.value(meter("heard")) > 40, "> 40", s.value(meter("heard")))
    s.wait(f"!!document.querySelector({js(s.card(uuid) + ' [data-action=unmute]')})", "an Unmute button")
    s.shot("muted")
    s.click(s.card(uuid) + ' [data-action="unmute"]')
    s.wait(f"!document.querySelector({js(s.card(uuid) + ' [data-badge=muted]')})", "the muted badge to go")


def reload_keeps_the_call(s, uuid):
    before = s.value(f"document.querySelector({js(s.card(uuid) + ' [data-timer]')}).dataset.since")
    s.tab.reload()
    s.connected()
    s.card_state(uuid, "joined", "the call to be there after a reload")
    s.ck.equal("after a reload the timer counts from the same connectedAt",
               s.value(f"document.querySelector({js(s.card(uuid) + ' [data-timer]')}).dataset.since"), before)
    s.shot("reloaded")


def second_tab_follows(s, uuid):
    other = s.browser.new_tab(s.url)
    s.connected(other)
    s.card_state(uuid, "joined", "the second tab to show the call", other)
    s.click(s.card(uuid) + ' [data-action="hold"]')
    s.card_state(uuid, "paused", "the second tab to see the first tab's hold", other)
    s.click(s.card(uuid) + ' [data-action="resume"]', other)
    s.card_state(uuid, "joined", "the first tab to see the second tab's resume")
    s.shot("second-tab", other)
    other.close()


def several_accounts(s):
    """A parleyd with two accounts (their registrar never answers): the chip names both, and the dial panel's
    picker chooses the account a call goes out through (B sees that account's address of record calling); its
    calls offer SRTP (media-encryption sdes), and the answered call's card shows a lock."""
    s.ck.equal("one account (or none): no account picker", s.value("document.querySelector('[data-dial-account]').hidden"), True)
    ws, silent = free_port(socket.SOCK_STREAM), free_port(socket.SOCK_DGRAM)
    config = os.path.join(s.work, "accounts.conf")
    with open(config, "w") as f:
        f.write(f"media-encryption sdes\n[account work]\naor sip:carol@work.test\nregister sip:127.0.0.1:{silent}\n\n"
                f"[account home]\naor sip:carol@home.test\nregister sip:127.0.0.1:{silent}\n")
    c = Daemon(s.parleyd, "c", s.work, ["--listen", f"udp://127.0.0.1:{free_port(socket.SOCK_DGRAM)}", "--user", "carol",
                                        "--websocket", f"127.0.0.1:{ws}", "--config", config, "--no-history",
                                        "--audio-source", "silence", "--audio-sink", "null"])
    tab = None
    try:
        c.wait_ready()
        tab = s.browser.new_tab(f"http://127.0.0.1:{ws}/#token={c.token()}")
        s.connected(tab)
        chip = "document.querySelector('[data-registration]').textContent"
        s.wait(f"{chip}.includes('work: ') && {chip}.includes('home: ')", "the chip to name both accounts", tab)
        s.ck.equal("the picker offers both accounts, the default first",
                   s.value("[...document.querySelectorAll('[data-dial-account] option')].map(o => o.value).join(',')", tab),
                   "work,home")
        s.ck.equal("the picker shows", s.value("document.querySelector('[data-dial-account]').hidden", tab), False)
        s.shot("two-accounts", tab)
        tab.evaluate("document.querySelector('[data-dial-account]').value = 'home'")
        mark = s.peer.mark()
        tab.fill("[data-dial-input]", s.bob_uri)
        s.click("[data-dial-call]", tab)
        event = s.peer.wait_event("an incoming call at B", is_new("incoming"), mark)
        conversation = event["data"]["conversation"]
        s.ck.equal("B is called from the account picked", [m["value"] for m in conversation["members"]],
                   ["sip:carol@home.test"])
        # Its offer was SRTP keyed by SDES (media-encryption sdes): B answers in kind, and the card shows a lock.
        s.peer.result("join", {"conversation": conversation["uuid"]})
        uuid = s.wait("document.querySelector('[data-call][data-direction=outgoing]')?.dataset.uuid", "the outgoing card", tab)
        s.wait(f"document.querySelector({js(s.card(uuid) + ' [data-badge=encrypted]')})?.textContent.includes('SDES')",
               "the encrypted call's lock", tab)
        s.shot("encrypted-call", tab)
        s.peer.result("end", {"conversation": conversation["uuid"]})
    finally:
        if tab:
            tab.close()
        c.stop()


def group_messages(s, uuid, b_uuid):
    """The card's messages panel: share a chat, B joins and writes, the page answers, the page ends it."""
    mark = s.peer.mark()
    s.click(s.card(uuid) + " [data-group-start]")
    offered = s.peer.wait_event("B offered the chat", lambda e: e.get("event") == "groupSessionChanged"
                                and e["data"]["change"] == "offered", mark)
    session = offered["data"]["session"]["session"]
    s.peer.result("groupJoin", {"session": session})
    s.wait(f"document.querySelector({js(s.card(uuid) + ' [data-group-title]')})?.textContent.toLowerCase().includes('with bob')",
           "the panel to show B in the chat")
    mark = s.peer.mark()
    s.peer.result("groupSend", {"session": session, "type": "text", "data": "hi from bob"})
    s.wait(f"document.querySelector({js(s.card(uuid) + ' [data-group-messages]')}).textContent.includes('hi from bob')",
           "B's message on the card")
    s.tab.fill(s.card(uuid) + " [data-group-input]", "hello bob")
    s.click(s.card(uuid) + " [data-group-send]")
    got = s.peer.wait_event("the page's message at B", lambda e: e.get("event") == "groupMessage", mark)
    s.ck.equal("the page's message reaches B as text from Alice", (got["data"]["data"], got["data"]["type"]), ("hello bob", "text"))
    s.wait(f"document.querySelector({js(s.card(uuid) + ' [data-group-messages]')}).textContent.includes('You hello bob')",
           "the page's own message on the card")
    s.ck.equal("the input is empty once sent", s.value(f"document.querySelector({js(s.card(uuid) + ' [data-group-input]')}).value"), "")
    s.shot("group-messages")
    s.click(s.card(uuid) + " [data-group-leave]")
    s.peer.wait_event("B told the chat ended", lambda e: e.get("event") == "groupSessionChanged"
                      and e["data"]["change"] == "invalidated", mark)
    s.wait(f"!!document.querySelector({js(s.card(uuid) + ' [data-group-start]')})", "the Share button back")


def transfer_from_the_page(s, uuid, b_uuid):
    """Transfer… opens a field; a target B cannot reach makes the transfer fail: a toast says why (B's NOTIFY), and the
    call goes on."""
    s.value("document.querySelectorAll('[data-toast]').forEach(t => t.remove())")
    s.click(s.card(uuid) + ' [data-action="transfer"]')
    s.wait(f"!!document.querySelector({js(s.card(uuid) + ' [data-transfer-panel]')})", "the transfer panel")
    s.tab.fill(s.card(uuid) + " [data-transfer-target]", "sip:nobody@127.0.0.1:9")
    s.shot("transfer-panel")
    s.click(s.card(uuid) + " [data-transfer-go]")
    s.wait("[...document.querySelectorAll('[data-toast=error]')].some(t => /Couldn't transfer the call/.test(t.textContent))",
           "a toast saying the transfer failed", timeout=20)
    toast = s.value("[...document.querySelectorAll('[data-toast=error]')].pop().textContent")
    s.ck.check("the failed transfer says why, with the status", "503" in toast or "404" in toast or "408" in toast, "a SIP status", toast)
    s.card_state(uuid, "joined", "the call to go on")
    live = [c for c in s.peer.result("list")["conversations"] if c["uuid"] == b_uuid]
    s.ck.check("B's call goes on after the failed transfer", bool(live) and live[0]["state"] == "joined", "joined", live)
    s.shot("transfer-failed")


def merge_and_unmerge(s, uuid, b_uuid):
    s.tab.press("Escape")  # not a user activation: the ringtone stays off
    s.ck.equal("Escape does not unlock the ringtone", s.value("document.querySelector('[data-enable-alerts]').dataset.ringtone"), "off")
    s.tab.press("x")  # a key press that is one: the page may play its ringtone again (the reload forgot the last one)
    s.wait("document.querySelector('[data-enable-alerts]').dataset.ringtone === 'on'", "the ringtone unlocked again")
    mark = s.peer.mark()
    b2 = s.peer_calls()
    second = s.incoming_uuid()
    s.wait("document.querySelector('[data-enable-alerts]').dataset.ringtone === 'playing'", "the ringtone while it rings")
    s.click(f'[data-incoming][data-uuid="{second}"] [data-action="join"]')
    s.wait("document.querySelector('[data-enable-alerts]').dataset.ringtone === 'on'", "the ringtone to stop once answered")
    s.card_state(second, "joined", "the second call to connect")
    s.peer_waits(b2, lambda c, d: c["state"] == "joined", "B's second call joined", mark)
    s.wait("document.querySelector('[data-live-count]').dataset.count === '2'", "two live calls in the header")
    s.click(s.card(uuid) + ' [data-action="merge"]')
    s.click(f'{s.card(uuid)} [data-merge-with="{second}"]')
    for each in (uuid, second):
        s.wait(f"!!document.querySelector({js(s.card(each) + ' [data-badge=group]')})", "both calls in one group")
    s.shot("merged")
    s.click(s.card(second) + ' [data-action="unmerge"]')
    s.wait(f"!document.querySelector({js(s.card(second) + ' [data-badge=group]')})", "the call out of the group")
    s.shot("unmerged")
    for each, theirs in ((uuid, b_uuid), (second, b2)):
        s.click(s.card(each) + ' [data-action="end"]')
        s.gone(each, "the ended call's card to go")
        s.peer_waits(theirs, lambda c, d: c["state"] == "left", "B's call to end", mark)


def decline_and_recents(s):
    ck, a = s.ck, s.a_client()
    a.result("markRead", {"all": True})
    s.wait("document.querySelector('[data-missed-badge]').hidden", "no unread missed calls")
    mark = s.peer.mark()
    b_uuid = s.peer_calls()
    uuid = s.incoming_uuid()
    s.click(f'[data-incoming][data-uuid="{uuid}"] [data-action="end"]')
    s.gone(uuid, "the declined call to go")
    s.peer_waits(b_uuid, lambda c, d: c["state"] == "left", "B's call to be refused", mark)
    s.recents_ready()
    ck.equal("Recents shows the declined call", s.value("document.querySelector('[data-recent]').dataset.status"), "declined")
    ck.check("the declined line says so", "declined" in s.value("document.querySelector('[data-recent] [data-status-text]').textContent"),
             "declined", s.value("document.querySelector('[data-recent]').textContent"))
    # Calls B gives up on before anyone answers are missed calls: the badge counts them, Recents groups them.
    for _ in range(2):
        b_missed = s.peer_calls()
        missed = s.incoming_uuid()
        s.peer.result("end", {"conversation": b_missed})
        s.gone(missed, "the missed call's banner to go")
    s.recents_ready()
    count = a.result("historyCount", {"missed": True, "unread": True})["count"]
    ck.equal("the daemon counts the two unread missed calls", count, 2)
    ck.equal("Recents groups the two missed calls in one line with a count", s.value(
        "[document.querySelector('[data-recent]').dataset.status, document.querySelector('[data-recent] [data-count]')?.dataset.count]"),
        ["missed", "2"])
    s.wait(f"document.querySelector('[data-missed-badge]').textContent === {js(str(count))} && "
           "!document.querySelector('[data-missed-badge]').hidden", "the badge to count the missed calls")
    s.shot("recents-missed")
    s.click('[data-filter="missed"]')
    s.wait("[...document.querySelectorAll('[data-recent]')].length > 0 && "
           "[...document.querySelectorAll('[data-recent]')].every(li => ['missed'].includes(li.dataset.status))",
           "the missed filter to show missed calls only")
    s.click('[data-recent][data-unread="true"] [data-action="markRead"]')
    s.wait("document.querySelector('[data-missed-badge]').hidden", "the badge to clear once read")
    s.click('[data-filter="all"]')
    s.wait("[...document.querySelectorAll('[data-recent]')].some(li => li.dataset.status === 'declined')", "every call again")
    lines = s.value("document.querySelectorAll('[data-recent]').length")
    s.click('[data-recent] [data-action="delete"]')
    s.wait(f"document.querySelectorAll('[data-recent]').length === {lines - 1}", "a deleted line to go")
    mark = s.peer.mark()
    s.click('[data-recent] [data-action="redial"]')
    b_redial = s.peer_incoming(mark)
    uuid = s.wait("document.querySelector('[data-call][data-direction=outgoing]')?.dataset.uuid", "the redialled call")
    s.shot("redial")
    s.click(s.card(uuid) + ' [data-action="end"]')
    s.gone(uuid, "the redialled call to end")
    s.peer_waits(b_redial, lambda c, d: c["state"] == "left", "B's redialled call to end", mark)


def failures_are_told(s):
    """A call parleyd cannot place and a call the peer declines: each becomes a toast with the reason."""
    s.value("document.querySelectorAll('[data-toast]').forEach(t => t.remove())")
    s.tab.fill("[data-dial-input]", "sip:")
    s.click("[data-dial-call]")
    s.wait("[...document.querySelectorAll('[data-toast=error]')].some(t => t.textContent.length > 10)",
           "an error toast for an address parleyd cannot call")
    toast = s.value("[...document.querySelectorAll('[data-toast=error]')].pop().textContent")
    s.ck.check("the toast is the daemon's sentence, not a code", " " in toast and "invalidParams" not in toast,
               "a sentence", toast)
    time.sleep(0.5)  # anything else the failure would show comes at once
    s.ck.equal("one failure, one toast", s.value("document.querySelectorAll('[data-toast]').length"), 1)
    s.ck.equal("the address stays in the field to be corrected", s.value("document.querySelector('[data-dial-input]').value"), "sip:")
    s.shot("call-failed")
    mark = s.peer.mark()
    s.tab.fill("[data-dial-input]", s.bob_uri)
    s.click("[data-dial-call]")
    b_uuid = s.peer_incoming(mark)
    s.peer.result("end", {"conversation": b_uuid})
    # parleyd refuses a ringing call it ends with 486 Busy Here: the caller's conversation ends busy.
    s.wait("[...document.querySelectorAll('[data-toast]')].some(t => /Bob Builder: busy \\(486 Busy Here\\)/.test(t.textContent))",
           "a toast saying the peer refused, with the SIP status")
    time.sleep(0.5)
    s.ck.equal("the refused call is told once", s.value(
        "[...document.querySelectorAll('[data-toast]')].filter(t => t.textContent.includes('Bob Builder')).length"), 1)
    s.shot("declined-by-peer")


def buttons_follow_the_lifecycle(s):
    """For every state and direction, each button the page offers is an action docs/lifecycle.md accepts."""
    table = lifecycle_table()
    offered = s.value("""(async () => {
        const { actionsFor } = await import('/calls.js');
        const all = ['merging', 'unmerging', 'pausing', 'playingTones', 'video'];
        const other = { uuid: 'b', state: 'joined', capabilities: all, group: null };
        const result = {};
        for (const state of ['idle', 'ringing', 'joining', 'joined', 'paused', 'leaving', 'left'])
          for (const direction of ['incoming', 'outgoing'])
            for (const isMuted of [false, true])
              result[`${state} ${direction} ${isMuted}`] = actionsFor(
                { uuid: 'a', state, direction, isMuted, isVideo: false, capabilities: all, group: 'g' }, [other]).map(a => a[0]);
        return result;
      })()""")
    verbs = {"join": "join", "joinEndingOthers": "join", "end": "end", "hold": "pause", "resume": "resume", "mute": "mute", "unmute": "mute",
             "keypad": "playTone", "merge": "merge", "unmerge": "unmerge", "transfer": "transfer"}
    for key, actions in offered.items():
        state, direction, _ = key.split()
        for action in actions:
            if action == "video":  # not a manager action: the video method takes joined calls only
                s.ck.equal(f"{key}: video is offered only when joined", state, "joined")
                continue
            accepted = table[verbs[action]][state]
            s.ck.check(f"{key}: {action} is offered only where the lifecycle takes {verbs[action]}",
                       accepted == "all" or accepted == direction, f"perform({verbs[action]}) accepted in {state}",
                       f"lifecycle.md says {accepted or 'refused'}")
    s.ck.equal("a joined call offers every action its capabilities allow", sorted(offered["joined outgoing false"]),
               sorted(["end", "hold", "mute", "keypad", "video", "merge", "unmerge"]))
    alone_joined = s.value("""(async () => {
        const { actionsFor } = await import('/calls.js');
        const call = { uuid: 'a', state: 'joined', direction: 'outgoing', capabilities: ['pausing'], group: null };
        return actionsFor(call, [call]).map(a => a[0]);
      })()""")
    s.ck.equal("a joined call in no group offers Transfer", alone_joined, ["end", "hold", "mute", "transfer"])
    s.ck.equal("a ringing incoming call with another call up offers Hold & Answer, End & Answer and Decline",
               offered["ringing incoming false"], ["join", "joinEndingOthers", "end"])
    alone = s.value("""(async () => {
        const { actionsFor } = await import('/calls.js');
        const ringing = { uuid: 'a', state: 'ringing', direction: 'incoming', capabilities: [], group: null };
        const held = { uuid: 'b', state: 'paused', capabilities: [], group: null };
        const left = { uuid: 'c', state: 'left', capabilities: [], group: null };
        return [actionsFor(ringing, [ringing]).map(a => a[1]), actionsFor(ringing, [ringing, left]).map(a => a[1]),
                actionsFor(ringing, [ringing, held]).map(a => a[1])];
      })()""")
    s.ck.equal("alone it offers Answer and Decline; a held call up is call waiting too", alone,
               [["Answer", "Decline"], ["Answer", "Decline"], ["Hold & Answer", "End & Answer", "Decline"]])
    s.ck.equal("a left call offers nothing", offered["left outgoing true"], [])
    targets = s.value("""(async () => {
        const { mergeTargets } = await import('/calls.js');
        const call = (uuid, group) => ({ uuid, group, state: 'joined', capabilities: ['merging', 'unmerging'] });
        const all = [call('a', null), call('b', null), call('c', 'g1'), call('d', 'g1')];
        const names = (limits) => mergeTargets(all[0], all, limits).map(c => c.uuid);
        return [names({ maxConversationGroups: 1, maxConversationsPerGroup: 2 }),
                names({ maxConversationGroups: 2, maxConversationsPerGroup: 2 }),
                names({ maxConversationGroups: 1, maxConversationsPerGroup: 3 })];
      })()""")
    s.ck.equal("Merge respects the manager's group limits (status.limits): no new group past the maximum, no group "
               "past its size", targets, [[], ["b"], ["c", "d"]])
    limits = s.a_client().result("status")["limits"]
    s.ck.equal("status says the merge limits", (limits.get("maxConversationGroups"), limits.get("maxConversationsPerGroup")), (2, 5))


def lifecycle_table():
    """docs/lifecycle.md's perform rows: {verb: {state: "all" | "incoming" | "outgoing" | None}}."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "lifecycle.md")
    rows, states = {}, None
    with open(path) as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if states is None and "idle" in cells and "left" in cells:
                states = cells[1:]
            elif states and cells[0].startswith("`perform("):
                verb = cells[0][len("`perform("):-2]
                def accepted(cell):
                    if cell == "✗":
                        return None
                    if cell.startswith("in:"):
                        incoming, outgoing = (part.split(":", 1)[1].strip() for part in cell.split("/"))
                        return None if incoming == "✗" and outgoing == "✗" else "incoming" if outgoing == "✗" \
                            else "outgoing" if incoming == "✗" else "all"
                    return "all"
                rows[verb] = dict(zip(states, map(accepted, cells[1:])))
    if "pause" not in rows or "join" not in rows:
        raise Failed(f"no perform rows read from {path}")
    return rows


def background_tab_is_alerted(s):
    """A tab in the background gets a notification and a flashing title for an incoming call."""
    s.value("""(() => {
        window.__notes = [];
        const Real = window.Notification;
        window.Notification = class extends Real {
          constructor(title, options) { super(title, options); window.__notes.push(options.body); }
        };
        window.__titles = new Set();
        return true; })()""")
    cover = s.browser.new_tab("about:blank", new_window=False)
    try:
        s.wait("document.hidden", "the page to be in the background")
        mark = s.peer.mark()
        b_uuid = s.peer_calls()
        s.wait("window.__notes.includes('Bob Builder')", "a notification naming the caller")
        titles = set()
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline and len(titles) < 2:
            titles.add(s.value("document.title"))
            time.sleep(0.2)
        s.ck.equal("the background tab's title flashes between the caller and the page's name", sorted(titles),
                   sorted(["📞 Bob Builder is calling", "Parley"]))
        s.peer.result("end", {"conversation": b_uuid})
        s.peer_waits(b_uuid, lambda c, d: c["state"] == "left", "B's call to end", mark)
        s.wait("document.title === 'Parley'", "the title back once the call stopped ringing")
    finally:
        cover.close()
    s.wait("!document.hidden", "the page in front again")


def a_pushed_call_says_so(s):
    """A VoIP push announces a call before its INVITE: the banner says "via push", also after a reload."""
    deadline = time.monotonic() + WAIT
    while "push channel: registered" not in open(os.path.join(s.work, "a.log")).read():
        if time.monotonic() > deadline:
            raise Failed("parleyd A never registered with the push simulator")
        time.sleep(0.1)
    sent = subprocess.run([s.parley, "push", "send", "--to", f"127.0.0.1:{s.push_port}", "--token", "web-device",
                           "--caller", "sip:carol@127.0.0.1:9", "--name", "Carol", "--call-id", "web-push@parley"],
                          capture_output=True, text=True, timeout=WAIT)
    s.ck.check("the push simulator delivered the push", sent.returncode == 0 and "delivered" in sent.stdout,
               "delivered", sent.stdout + sent.stderr)
    uuid = s.incoming_uuid()
    banner = f'[data-incoming][data-uuid="{uuid}"]'
    s.wait(f"!!document.querySelector({js(banner + ' [data-badge=push]')})", "the banner to say via push")
    s.shot("via-push")
    s.tab.reload()
    s.connected()
    s.wait(f"!!document.querySelector({js(banner + ' [data-badge=push]')})", "via push still shown after a reload")
    s.click(banner + ' [data-action="end"]')
    s.gone(uuid, "the pushed call to go when declined")


def daemon_restart(s):
    """parleyd goes away while a call rings: the page says so, offers nothing, stops ringing; then catches up."""
    mark = s.peer.mark()
    b_uuid = s.peer_calls()
    uuid = s.incoming_uuid()
    s.a.stop(close_log=False)
    s._a_client = None
    s.wait("document.querySelector('[data-connection]').dataset.state === 'retrying'", "the page to show it is disconnected")
    text = s.value("document.querySelector('[data-connection]').textContent")
    s.ck.check("disconnected says when it retries", text.startswith("disconnected — retrying in "), "disconnected — retrying in N s", text)
    s.ck.equal("while disconnected the page offers no action and does not ring", s.value(
        "[document.querySelectorAll('[data-uuid] button:not(:disabled)').length, document.body.dataset.ringing]"), [0, "false"])
    s.shot("disconnected")
    s.peer_waits(b_uuid, lambda c, d: c["state"] == "left", "B's call to end with parleyd A", mark)
    s.a.proc = s.a.launch()
    s.a.wait_ready()
    s.connected(None)
    s.gone(uuid, "the call parleyd ended while the page was away to go once it caught up")
    s.recents_ready()
    s.shot("reconnected")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parleyd", required=True)
    parser.add_argument("--parley", required=True, help="the parley CLI (its push simulator and push sender)")
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--shots", help="where screenshots go (default WORKDIR/screenshots)")
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    ck, began = Checker(), time.monotonic()
    s = Stories(args, ck)
    run_story = functools.partial(run_story_with, page_state=s.page_state)
    try:
        s.start()
        stories = [
            ("bad entrances", lambda: bad_entrances(s)),
            ("entering", lambda: entering(s)),
            ("incoming, answered, remote hang-up", lambda: incoming_answered_then_remote_hangup(s)),
        ]
        for name, story in stories:
            run_story(ck, name, story)
        call = run_story(ck, "outgoing, ringing, answered", lambda: outgoing_call(s))
        if call:
            uuid, b_uuid = call
            run_story(ck, "hold and resume", lambda: hold_and_resume(s, uuid, b_uuid))
            run_story(ck, "tones reach the peer", lambda: tones_reach_the_peer(s, uuid, b_uuid))
            run_story(ck, "mute and unmute", lambda: mute_and_unmute(s, uuid))
            run_story(ck, "a reload keeps the call", lambda: reload_keeps_the_call(s, uuid))
            run_story(ck, "a second tab follows", lambda: second_tab_follows(s, uuid))
            run_story(ck, "group messages", lambda: group_messages(s, uuid, b_uuid))
            run_story(ck, "transfer from the page", lambda: transfer_from_the_page(s, uuid, b_uuid))
            run_story(ck, "merge and unmerge", lambda: merge_and_unmerge(s, uuid, b_uuid))
        run_story(ck, "several accounts", lambda: several_accounts(s))
        run_story(ck, "decline and recents", lambda: decline_and_recents(s))
        run_story(ck, "failures are told", lambda: failures_are_told(s))
        run_story(ck, "buttons follow the lifecycle", lambda: buttons_follow_the_lifecycle(s))
        run_story(ck, "a background tab is alerted", lambda: background_tab_is_alerted(s))
        run_story(ck, "a pushed call says so", lambda: a_pushed_call_says_so(s))
        run_story(ck, "parleyd restarted", lambda: daemon_restart(s))
        # The WebSocket's own failures while parleyd was down are expected network errors; anything else (a CSP
        # violation, a failed load, a script error) is not.
        problems = [line for line in s.tab.console if line.startswith(("exception", "error", "browser-error", "browser-warning"))
                    and not line.startswith(("browser-error: network: WebSocket connection", "error: WebSocket connection"))]
        ck.check("the page threw no exception and logged no error", not problems, "none", problems)
    except (Failed, OSError, CDPError) as e:
        ck.check("setup", False, "both daemons, the browser and the page up", f"{type(e).__name__}: {e}")
    finally:
        s.stop()
    for line, times in ck.failures.values():
        print(line + (f" [failed {times} times]" if times > 1 else ""))
    print(f"{ck.count} checks, {len(ck.failures)} failed, {time.monotonic() - began:.1f} s; screenshots in {s.shots}"
          + (f"; daemon logs in {s.work}" if ck.failures else ""))
    return 1 if ck.failures else 0


def run_story_with(ck, name, story, page_state):
    """Runs one story; its failure is one failed check, and the stories after it still run."""
    began = time.monotonic()
    try:
        result = story()
        ck.check(f"story: {name}", True, "", "")
        print(f"story: {name}: ok, {time.monotonic() - began:.1f} s", flush=True)
        return result if result is not None else True
    except (Failed, CDPError, PageError, OSError, KeyError, TypeError, ValueError) as e:
        ck.check(f"story: {name} runs to its end", False, "no error", f"{type(e).__name__}: {e}; {page_state()}")
        return None


if __name__ == "__main__":
    sys.exit(main())
