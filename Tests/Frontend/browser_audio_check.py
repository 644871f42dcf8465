#!/usr/bin/env python3
"""The browser as the phone (issue 45): the web softphone's "Use this browser for audio" in a real headless Chromium
with a fake microphone playing 440 Hz, against two real parleyd on loopback.

parleyd A serves the page (--websocket) and would send 300 Hz of its own; parleyd B is the SIP peer, playing 1,000 Hz
and recording what it hears. A wrapper around RTCPeerConnection, installed before the page's scripts run, taps each
remote track into a WebAudio AnalyserNode: the page's dominant frequency is read over the DevTools protocol. Stories:
an incoming call answered from the page, hold (both directions stop) and resume, a reload mid-call (audio back within
2 s), and a call placed from the page. B's recording is then checked for the page's 440 Hz.

    python3 Tests/Frontend/browser_audio_check.py --parleyd PATH --workdir DIR
"""
import argparse, json, math, os, shutil, socket, struct, sys, time, wave

from browser import Browser
from frontend_check import Checker, Daemon, Failed, free_port

TAP = """
(() => {
  const Original = window.RTCPeerConnection;
  window.__heard = { freq: 0, db: -200, tracks: 0 };
  window.RTCPeerConnection = function (...args) {
    const pc = new Original(...args);
    pc.addEventListener("track", (event) => {
      window.__heard.tracks += 1;
      const context = new AudioContext();
      const source = context.createMediaStreamSource(new MediaStream([event.track]));
      const analyser = context.createAnalyser();
      analyser.fftSize = 8192;
      analyser.smoothingTimeConstant = 0;
      source.connect(analyser);
      const bins = new Float32Array(analyser.frequencyBinCount);
      const timer = setInterval(() => {
        if (event.track.readyState === "ended") return clearInterval(timer);
        analyser.getFloatFrequencyData(bins);
        let best = 1;
        for (let i = 2; i < bins.length; i++) if (bins[i] > bins[best]) best = i;
        window.__heard = { freq: best * context.sampleRate / analyser.fftSize, db: Number.isFinite(bins[best]) ? bins[best] : -200, tracks: window.__heard.tracks,
          at: Date.now() };
      }, 100);
    });
    return pc;
  };
  window.RTCPeerConnection.prototype = Original.prototype;
})();
"""


def write_tone(path, hertz, seconds=60, rate=48000):
    with wave.open(path, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"".join(struct.pack("<h", int(12000 * math.sin(2 * math.pi * hertz * i / rate))) for i in range(rate * seconds)))


def goertzel_db(samples, rate, hertz):
    """The level (dB of full scale) of `hertz` in `samples`."""
    if not samples:
        return -200.0
    k = 2 * math.cos(2 * math.pi * hertz / rate)
    s1 = s2 = 0.0
    for x in samples:
        s1, s2 = x + k * s1 - s2, s1
    power = s1 * s1 + s2 * s2 - k * s1 * s2
    amplitude = 2 * math.sqrt(max(power, 0.0)) / len(samples) / 32768
    return 20 * math.log10(amplitude) if amplitude > 0 else -200.0


def read_wav(path):
    with wave.open(path) as f:
        rate, frames = f.getframerate(), f.readframes(f.getnframes())
    return rate, list(struct.unpack(f"<{len(frames) // 2}h", frames))


class Stories:
    """The two parleyd, the browser and a tab on A's page with browser audio on. `a_options` go to A (after the
    defaults), `page` builds the page's URL from the WebSocket port and A's token (default http://127.0.0.1:PORT),
    `browser_flags` go to Chromium and `script` runs in every page before its own (after the tap)."""

    def __init__(self, args, ck, a_options=(), page=None, browser_flags=(), script=""):
        self.ck, self.work = ck, os.path.abspath(args.workdir)
        self.port_a, self.port_b = free_port(socket.SOCK_DGRAM), free_port(socket.SOCK_DGRAM)
        self.ws_port = free_port(socket.SOCK_STREAM)
        self.alice_uri, self.bob_uri = f"sip:alice@127.0.0.1:{self.port_a}", f"sip:bob@127.0.0.1:{self.port_b}"
        self.recordings = os.path.join(self.work, "bob-heard")
        shutil.rmtree(self.recordings, ignore_errors=True)
        self.tone = os.path.join(self.work, "tone440.wav")
        write_tone(self.tone, 440)
        base = 20000 + (os.getpid() % 300) * 100
        self.a = Daemon(args.parleyd, "a", self.work, [
            "--listen", f"udp://127.0.0.1:{self.port_a}", "--user", "alice", "--websocket", f"127.0.0.1:{self.ws_port}",
            "--audio-source", "tone:300", "--audio-sink", "null", "--rtp-ports", f"{base}-{base + 49}", "--dbus", "off",
            *a_options])
        self.b = Daemon(args.parleyd, "b", self.work, [
            "--listen", f"udp://127.0.0.1:{self.port_b}", "--user", "bob", "--no-history", "--audio-source", "tone:1000",
            "--audio-sink", f"file:{self.recordings}", "--rtp-ports", f"{base + 50}-{base + 99}", "--dbus", "off"])
        for daemon in (self.a, self.b):
            daemon.wait_ready()
        self.peer = self.b.connect(ck, "B")
        self.peer.result("subscribe")
        self.control = self.a.connect(ck, "A")
        self.control.result("subscribe")
        self.page = (page or (lambda port, token: f"http://127.0.0.1:{port}/#token={token}"))(self.ws_port, self.a.token())
        self.script = TAP + script
        self.browser = Browser(os.path.join(self.work, "chromium"), extra_flags=(
            "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
            f"--use-file-for-fake-audio-capture={self.tone}", "--autoplay-policy=no-user-gesture-required", *browser_flags))
        self.tab = self.open_tab()
        self.tab.click("[data-browser-audio-toggle]")
        self.tab.wait_for("document.body.dataset.browserAudio === 'on'", what="browser audio on")

    def open_tab(self):
        """A tab on the page, its remote audio tapped, connected (the toggle is remembered by the profile)."""
        tab = self.browser.new_tab()
        tab.send("Page.addScriptToEvaluateOnNewDocument", {"source": self.script})
        tab.navigate(self.page)
        tab.wait_for("document.querySelector('[data-connection]').dataset.state === 'connected'", what="the page to connect")
        return tab

    def heard(self):
        return self.tab.evaluate("window.__heard")

    def wait_hearing(self, hertz, what, timeout=10.0):
        """Waits until the page's dominant frequency is `hertz` (±15 Hz) and loud; the seconds it took."""
        began = time.monotonic()
        deadline = began + timeout
        last = None
        while time.monotonic() < deadline:
            last = self.heard()
            if last and abs(last.get("freq", 0) - hertz) < 15 and last.get("db", -200) > -60:
                return time.monotonic() - began
            time.sleep(0.1)
        raise Failed(f"the page never heard {hertz} Hz ({what}); last {last}")

    def stop(self):
        for closing in (lambda: self.browser.close(), lambda: self.a.stop(), lambda: self.b.stop()):
            try:
                closing()
            except Exception:
                pass


def incoming_answered(s):
    """B calls A; the page answers; the page hears B's 1,000 Hz; hold silences it; resume and a reload bring it back."""
    call = s.peer.result("start", {"to": s.alice_uri})["conversation"]["uuid"]
    s.tab.wait_for("document.querySelector('[data-banner] button, [data-incoming] button') !== null", what="the ringing banner")
    s.tab.evaluate("[...document.querySelectorAll('button')].find(b => b.textContent.trim() === 'Answer').click()")
    s.peer.wait_event("B's call joined", lambda e: e["event"] == "conversationChanged"
                      and e["data"]["conversation"]["uuid"] == call and e["data"]["conversation"]["state"] == "joined")
    took = s.wait_hearing(1000, "after Answer")
    print(f"incoming: the page heard bob's 1000 Hz {took:.2f} s after the call joined")
    level = s.tab.wait_for("Number(document.querySelector('[data-mic-level]').value) > 20 && document.querySelector('[data-mic-level]').value",
                           what="the microphone meter to move")
    inputs = s.tab.evaluate("[...document.querySelectorAll('[data-audio-input] option')].map(o => o.textContent)")
    print(f"the page's microphone meter reads {level:.0f} of 60; inputs offered: {inputs}")
    s.ck.check("the page offers the browser's microphones", len(inputs) >= 1, "one or more", inputs)
    s.ck.check("the page's call shows its audio in this browser", "connected" in s.tab.evaluate("document.body.dataset.browserAudioCalls"),
               "connected", s.tab.evaluate("document.body.dataset.browserAudioCalls"))
    time.sleep(3)
    s.tab.evaluate("[...document.querySelectorAll('button')].find(b => b.textContent.trim() === 'Hold').click()")
    samples = []
    for _ in range(15):
        time.sleep(0.2)
        samples.append(s.heard())
    print("on hold the page heard:", [(round(h["freq"]), round(h["db"])) for h in samples])
    held = samples[-1]
    s.ck.check("on hold the page hears nothing of bob", held["db"] < -80 or abs(held["freq"] - 1000) > 15, "silence", held)
    s.tab.evaluate("[...document.querySelectorAll('button')].find(b => b.textContent.trim() === 'Resume').click()")
    s.wait_hearing(1000, "after Resume")
    time.sleep(2)
    s.tab.reload()
    s.tab.wait_for("document.querySelector('[data-connection]').dataset.state === 'connected'", what="the page to reconnect")
    took = s.wait_hearing(1000, "after a reload", timeout=6)
    print(f"reload: the page heard bob again {took:.2f} s after it reconnected")
    s.ck.check("a reload mid-call brings the audio back within 2 s", took <= 2.0, "≤ 2 s", f"{took:.2f} s")
    time.sleep(3)
    s.peer.result("end", {"conversation": call})
    return call


def outgoing_placed(s):
    """The page calls B (B answers by its control API); audio both ways."""
    s.tab.wait_for("document.querySelectorAll('audio[data-browser-audio-for]').length === 0", what="the first call's audio gone")
    s.tab.evaluate("window.__heard = { freq: 0, db: -200, tracks: 0 }")
    mark = s.peer.mark()
    s.tab.fill("[data-dial-input]", s.bob_uri)
    s.tab.press("Enter")
    ringing = s.peer.wait_event("B's incoming call", lambda e: e["event"] == "conversationChanged"
                                and e["data"]["conversation"]["state"] == "ringing", since=mark)
    call = ringing["data"]["conversation"]["uuid"]
    s.peer.result("join", {"conversation": call})
    took = s.wait_hearing(1000, "on the call placed from the page")
    print(f"outgoing: the page heard bob's 1000 Hz {took:.2f} s after bob answered")
    time.sleep(4)
    s.peer.result("end", {"conversation": call})
    s.tab.wait_for("Number(document.querySelector('[data-mic-level]').value) === 0 && !document.querySelector('audio[data-browser-audio-for]')",
                   what="the microphone released once no call needs it")
    return call


def fresh_mark(client):
    """The client's event count once everything sent before now was read (a request's answer comes after them)."""
    client.result("status")
    return client.mark()


def page_disappears(s):
    """B calls A, the page answers and carries the audio; the tab closes: within 5–7 s parleyd says the page's audio
    ended, the SIP call goes on, and B hears A's own 300 Hz again."""
    mark = fresh_mark(s.control)
    call = s.peer.result("start", {"to": s.alice_uri})["conversation"]["uuid"]
    s.tab.wait_for("document.querySelector('[data-incoming] button') !== null", what="the ringing banner")
    s.tab.evaluate("[...document.querySelectorAll('button')].find(b => b.textContent.trim() === 'Answer').click()")
    s.wait_hearing(1000, "before the tab closes")
    connected = s.control.wait_event("the page's audio connected", lambda e: e["event"] == "browserAudioChanged"
                                     and e["data"]["state"] == "connected", since=mark)
    time.sleep(1)
    closed_at = time.monotonic()
    s.tab.close()
    ended = s.control.wait_event("the page's audio ended", lambda e: e["event"] == "browserAudioChanged"
                                 and e["data"]["state"] == "ended" and e["data"]["session"] == connected["data"]["session"],
                                 since=mark, timeout=12)
    took = time.monotonic() - closed_at
    print(f"tab closed: parleyd took the call's audio back after {took:.1f} s ({ended['data']['reason']})")
    s.ck.check("a page that disappears hands the audio back within 8 s", took <= 8, "≤ 8 s", f"{took:.1f} s")
    time.sleep(3)
    live = [c for c in s.peer.result("list")["conversations"] if c["uuid"] == call]
    s.ck.check("the SIP call goes on after the page went", bool(live) and live[0]["state"] == "joined", "joined", live)
    s.peer.result("end", {"conversation": call})
    s.tab = s.open_tab()
    return call


def bad_offers(s):
    """Offers that are not SDP, carry no audio or list too many candidates are refused (invalidParams); an offer the
    page never follows up (no answer applied: DTLS never completes) ends after 10 s; the call keeps its own audio."""
    s.tab.click("[data-browser-audio-toggle]")
    s.tab.wait_for("document.body.dataset.browserAudio === 'off'", what="browser audio off (this story offers by hand)")
    mark = fresh_mark(s.control)
    call = s.peer.result("start", {"to": s.alice_uri})["conversation"]["uuid"]
    ringing = s.control.wait_event("A's incoming call", lambda e: e["event"] == "conversationChanged"
                                   and e["data"]["conversation"]["state"] == "ringing", since=mark)
    mine = ringing["data"]["conversation"]["uuid"]
    s.control.result("join", {"conversation": mine})
    offer = s.tab.evaluate("""(async () => {
        const pc = new RTCPeerConnection();
        const stream = await navigator.mediaDevices.getUserMedia({audio: true});
        stream.getTracks().forEach((t) => pc.addTrack(t, stream));
        await pc.setLocalDescription(await pc.createOffer());
        await new Promise((r) => { const t = setTimeout(r, 3000);
          pc.onicegatheringstatechange = () => pc.iceGatheringState === "complete" && (clearTimeout(t), r()); });
        window.__abandoned = pc;
        return pc.localDescription.sdp; })()""")
    no_audio = "\r\n".join(l for l in offer.split("\r\n") if not l.startswith("a=rtpmap:111")) 
    crowded = offer + "".join(f"a=candidate:{i} 1 udp 1 127.0.0.1 {20000 + i} typ host\r\n" for i in range(1000))
    for sdp, what in (("v=0\r\nthis is not SDP", "not SDP"), (no_audio, "no opus audio"), (crowded, "1,000 candidates")):
        reply = s.control.request("browserAudio", {"conversation": mine, "sdp": sdp})
        s.ck.check(f"an offer with {what} is refused as invalidParams",
                   reply.get("error", {}).get("code") == "invalidParams", "invalidParams", reply)
    mark = fresh_mark(s.control)
    began = time.monotonic()
    answered = s.control.result("browserAudio", {"conversation": mine, "sdp": offer})
    ended = s.control.wait_event("the abandoned offer's end", lambda e: e["event"] == "browserAudioChanged"
                                 and e["data"]["state"] == "ended" and e["data"]["session"] == answered["session"],
                                 since=mark, timeout=16)
    took = time.monotonic() - began
    print(f"an answer never applied: parleyd gave up after {took:.1f} s ({ended['data']['reason']})")
    s.ck.check("an offer whose page never connects is given up within 12 s", took <= 12, "≤ 12 s", f"{took:.1f} s")
    live = [c for c in s.peer.result("list")["conversations"] if c["uuid"] == call]
    s.ck.check("the SIP call goes on after an abandoned offer", bool(live) and live[0]["state"] == "joined", "joined", live)
    time.sleep(2.5)
    s.peer.result("end", {"conversation": call})
    return call


def bob_heard_the_page(s, calls):
    """Each of B's recordings holds the page's 440 Hz, not alice's own 300 Hz; the first call's has the hold's
    silence (a second or more)."""
    deadline = time.monotonic() + 10
    files = []
    while time.monotonic() < deadline:
        files = [f for f in os.listdir(s.recordings) if f.endswith(".wav")] if os.path.isdir(s.recordings) else []
        if len(files) >= len(calls) and all(os.path.getsize(os.path.join(s.recordings, f)) > 44 for f in files):
            break
        time.sleep(0.2)
    time.sleep(1)
    for call in calls:
        mine = sorted(f for f in files if f.startswith(call.upper()) or f.startswith(call))
        s.ck.check(f"bob recorded call {call[:8]}", bool(mine), "a recording", files)
        if not mine:
            continue
        rate, samples = read_wav(os.path.join(s.recordings, mine[-1]))
        # The call's last stretch (after the reload, for the first call), short of its very end.
        middle = samples[max(0, len(samples) - rate * 5 // 2): max(0, len(samples) - rate // 2)]
        tone, own = goertzel_db(middle, rate, 440), goertzel_db(middle, rate, 300)
        print(f"bob's recording {mine[-1]}: 440 Hz at {tone:.1f} dB, alice's own 300 Hz at {own:.1f} dB")
        s.ck.check(f"bob hears the page's microphone (440 Hz) on call {call[:8]}", tone > -50 and tone > own + 20,
                   "440 Hz loud, 300 Hz absent", f"440 Hz {tone:.1f} dB, 300 Hz {own:.1f} dB")
        if call == calls[0]:
            half = rate // 2
            quiet = sum(1 for i in range(0, len(samples) - half, half)
                        if max(abs(x) for x in samples[i:i + half]) < 100)
            print(f"bob's recording of the held call: {quiet / 2:.1f} s of silence")
            s.ck.check("on hold bob hears nothing of the page", quiet >= 2, "a second or more of silence", f"{quiet / 2} s")


def bob_heard_alice_again(s, call):
    """After the page went, B hears A's own source (300 Hz) for the rest of the call."""
    deadline = time.monotonic() + 10
    path = None
    while time.monotonic() < deadline and not path:
        found = sorted(f for f in os.listdir(s.recordings) if f.startswith(call))
        path = os.path.join(s.recordings, found[-1]) if found else None
        time.sleep(0.2)
    time.sleep(1.5)
    if not path:
        return s.ck.check("bob recorded the call whose page went", False, "a recording", os.listdir(s.recordings))
    rate, samples = read_wav(path)
    tail = samples[max(0, len(samples) - rate * 2): max(0, len(samples) - rate // 2)]
    own = goertzel_db(tail, rate, 300)
    print(f"after the page went bob hears alice's own 300 Hz at {own:.1f} dB")
    s.ck.check("after the page went the call's own source is heard again", own > -40, "300 Hz", f"{own:.1f} dB")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parleyd", required=True)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    ck = Checker()
    s = None
    try:
        s = Stories(args, ck)
        calls = [incoming_answered(s)]
        calls.append(outgoing_placed(s))
        bob_heard_the_page(s, calls)
        gone = page_disappears(s)
        bob_heard_alice_again(s, gone)
        bad_offers(s)
    except Failed as failure:
        ck.check("every story ran to its end", False, "no failure", str(failure))
        if s:
            for line in s.tab.console[-15:]:
                print("page console:", line)
    finally:
        if s:
            s.stop()
    failed = sorted(ck.failures.values())
    for line, times in failed:
        print(line + (f" (×{times})" if times > 1 else ""))
    print(f"browser audio: {ck.count} checks, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
