// This browser as the call's microphone and speaker (docs/web-softphone.md, "Audio in the browser"): while "Use this
// browser for audio" is on, every call that is up gets an RTCPeerConnection to parleyd (opus, DTLS-SRTP over ICE),
// offered with `browserAudio`; parleyd hands the call's audio to it. The microphone is released when no call needs
// it. A reload offers again for the calls this tab carried (taking them back); another tab takes a call's audio only
// when asked.
//
//   joined, audio on ──► getUserMedia ─► offer (ICE gathered) ─► browserAudio ─► answer ─► connected
//        │  refused (another tab has it) ──► "Audio elsewhere" until the user takes it here
//        └─ the call ends, audio off, or parleyd says `browserAudioChanged` ended ──► closed (microphone released last)

const ENABLED_KEY = "parley.browserAudio", CARRIED_KEY = "parley.browserAudioCalls";
const GATHERING_MS = 3000;

export class BrowserAudio {
  constructor({ request, toast, storage = window.localStorage, session = window.sessionStorage }) {
    this.request = request;
    this.toast = toast;
    this.storage = storage;
    this.session = session;
    this.enabled = storage.getItem(ENABLED_KEY) === "on";
    this.links = new Map(); // uuid → { pc, audio, state }
    this.elsewhere = new Set(); // calls another page carries
    this.microphone = null;
    this.devices = { input: storage.getItem("parley.audioInput") || "", output: storage.getItem("parley.audioOutput") || "" };
    this.publish();
  }

  /** The calls this tab carried (taken back after a reload). */
  carried() {
    try { return JSON.parse(this.session.getItem(CARRIED_KEY) ?? "[]"); } catch { return []; }
  }

  remember() {
    this.session.setItem(CARRIED_KEY, JSON.stringify([...this.links.keys()]));
  }

  /** Turns browser audio on or off (remembered for this page). */
  setEnabled(on, conversations) {
    this.enabled = on;
    this.storage.setItem(ENABLED_KEY, on ? "on" : "off");
    if (!on) for (const uuid of [...this.links.keys()]) this.stop(uuid, true);
    else this.sync(conversations);
    this.publish();
  }

  /** Follows the live conversations: carries each joined call's audio while on; lets go of ended ones. */
  sync(conversations) {
    for (const uuid of [...this.links.keys()]) {
      const conversation = conversations.get(uuid);
      if (!conversation || conversation.state === "left") this.stop(uuid, false);
    }
    for (const uuid of [...this.elsewhere]) if (!conversations.has(uuid)) this.elsewhere.delete(uuid);
    if (!this.enabled) return;
    const carried = this.carried();
    for (const conversation of conversations.values()) {
      if (conversation.state !== "joined" || this.links.has(conversation.uuid) || this.elsewhere.has(conversation.uuid)) continue;
      this.start(conversation.uuid, carried.includes(conversation.uuid));
    }
  }

  /** Takes a call's audio here from another page. */
  takeOver(uuid) {
    this.elsewhere.delete(uuid);
    return this.start(uuid, true);
  }

  async start(uuid, takeOver) {
    const link = { pc: null, audio: null, state: "starting" };
    this.links.set(uuid, link);
    this.publish();
    try {
      if (!this.microphone) {
        this.microphone = await navigator.mediaDevices.getUserMedia({ audio: this.constraints() });
        this.meter(this.microphone);
        this.listDevices();
      }
      if (this.links.get(uuid) !== link) return;
      const pc = new RTCPeerConnection();
      link.pc = pc;
      for (const track of this.microphone.getAudioTracks()) pc.addTrack(track, this.microphone);
      pc.ontrack = (event) => {
        const audio = document.createElement("audio");
        audio.autoplay = true;
        audio.dataset.browserAudioFor = uuid;
        audio.srcObject = event.streams[0] ?? new MediaStream([event.track]);
        if (this.devices.output && audio.setSinkId) audio.setSinkId(this.devices.output).catch(() => {});
        document.body.append(audio);
        link.audio = audio;
      };
      pc.onconnectionstatechange = () => {
        link.state = pc.connectionState;
        this.publish();
      };
      await pc.setLocalDescription(await pc.createOffer());
      await gathered(pc);
      const answer = await this.request("browserAudio", { conversation: uuid, sdp: pc.localDescription.sdp, takeOver });
      if (this.links.get(uuid) !== link) return;
      link.session = answer.session;
      await pc.setRemoteDescription({ type: "answer", sdp: answer.sdp });
      link.state = "connecting";
      this.remember();
    } catch (error) {
      if (this.links.get(uuid) === link) this.close(uuid);
      if (error?.code === "refused" && /another page/i.test(error.message ?? "")) {
        this.elsewhere.add(uuid);
      } else {
        this.toast(`This browser cannot carry the call's audio: ${error?.message ?? error}`, "error");
      }
    }
    this.publish();
  }

  /** Stops carrying a call's audio; `giveBack`: tell parleyd (else it already knows: the call ended). */
  stop(uuid, giveBack) {
    if (!this.links.has(uuid)) return;
    this.close(uuid);
    if (giveBack) this.request("browserAudioEnd", { conversation: uuid }).catch(() => {});
  }

  close(uuid) {
    const link = this.links.get(uuid);
    this.links.delete(uuid);
    link?.pc?.close();
    link?.audio?.remove();
    if (this.links.size === 0 && this.microphone) {
      for (const track of this.microphone.getTracks()) track.stop();
      this.microphone = null;
      this.meter(null);
    }
    this.remember();
    this.publish();
  }

  /** An event from parleyd; true when it was ours. */
  onEvent(name, data) {
    if (name !== "browserAudioChanged") return false;
    if (data.state === "ended" && this.links.get(data.conversation)?.session === data.session) {
      this.close(data.conversation);
      if (/another page/.test(data.reason ?? "")) this.elsewhere.add(data.conversation);
      this.toast(`The call's audio left this browser: ${data.reason ?? "ended"}`);
    }
    return true;
  }

  constraints() {
    const audio = { echoCancellation: true, noiseSuppression: true, autoGainControl: true };
    if (this.devices.input) audio.deviceId = { exact: this.devices.input };
    return audio;
  }

  /** Picks the microphone or the speaker (a device id from enumerateDevices), remembered for this page. */
  async pick(kind, deviceId) {
    this.devices[kind] = deviceId;
    this.storage.setItem(kind === "input" ? "parley.audioInput" : "parley.audioOutput", deviceId);
    if (kind === "output") {
      for (const link of this.links.values()) if (link.audio?.setSinkId) await link.audio.setSinkId(deviceId).catch(() => {});
      return;
    }
    if (!this.microphone) return;
    const fresh = await navigator.mediaDevices.getUserMedia({ audio: this.constraints() });
    const track = fresh.getAudioTracks()[0];
    for (const link of this.links.values()) {
      for (const sender of link.pc?.getSenders() ?? []) if (sender.track?.kind === "audio") await sender.replaceTrack(track);
    }
    for (const old of this.microphone.getTracks()) old.stop();
    this.microphone = fresh;
    this.meter(fresh);
  }

  /** Shows the microphone's level (0–60 above -60 dBFS) five times a second while it is open. */
  meter(stream) {
    clearInterval(this.meterTimer);
    this.meterContext?.close();
    this.meterContext = null;
    const meter = document.querySelector("[data-mic-level]");
    if (meter) meter.value = 0;
    if (!stream || !meter) return;
    const context = new AudioContext();
    const analyser = context.createAnalyser();
    analyser.fftSize = 1024;
    context.createMediaStreamSource(stream).connect(analyser);
    const samples = new Float32Array(analyser.fftSize);
    this.meterContext = context;
    this.meterTimer = setInterval(() => {
      analyser.getFloatTimeDomainData(samples);
      const rms = Math.sqrt(samples.reduce((sum, x) => sum + x * x, 0) / samples.length);
      meter.value = Math.max(0, 60 + 20 * Math.log10(rms || 1e-6));
    }, 200);
  }

  /** Fills the microphone and speaker pickers (labels come once the microphone was allowed). */
  async listDevices() {
    const devices = await navigator.mediaDevices.enumerateDevices().catch(() => []);
    for (const [kind, selector] of [["audioinput", "[data-audio-input]"], ["audiooutput", "[data-audio-output]"]]) {
      const select = document.querySelector(selector);
      if (!select) continue;
      const wanted = kind === "audioinput" ? this.devices.input : this.devices.output;
      select.replaceChildren(...devices.filter((d) => d.kind === kind).map((d, index) => {
        const option = document.createElement("option");
        option.value = d.deviceId;
        option.textContent = d.label || `${kind === "audioinput" ? "Microphone" : "Speaker"} ${index + 1}`;
        option.selected = d.deviceId === wanted;
        return option;
      }));
      select.onchange = () => this.pick(kind === "audioinput" ? "input" : "output", select.value);
    }
  }

  /** What the page shows: the toggle, and each call's state (data attributes, for people and tests alike). */
  publish() {
    document.body.dataset.browserAudio = this.enabled ? "on" : "off";
    const devices = document.querySelector("[data-browser-devices]");
    if (devices) devices.hidden = !this.enabled;
    const toggle = document.querySelector("[data-browser-audio-toggle]");
    if (toggle) toggle.checked = this.enabled;
    const states = {};
    for (const [uuid, link] of this.links) states[uuid] = link.state;
    for (const uuid of this.elsewhere) states[uuid] = "elsewhere";
    document.body.dataset.browserAudioCalls = JSON.stringify(states);
  }

  /** A call card's audio line: where its audio is, and Take audio here when another page has it. */
  panel(conversation) {
    if (!this.enabled || !["joined", "paused"].includes(conversation.state)) return null;
    const line = document.createElement("p");
    line.className = "browser-audio";
    if (this.elsewhere.has(conversation.uuid)) {
      line.textContent = "Audio in another tab ";
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = "Take audio here";
      button.addEventListener("click", () => this.takeOver(conversation.uuid));
      line.append(button);
    } else {
      line.textContent = `Audio in this browser: ${this.links.get(conversation.uuid)?.state ?? "starting"}`;
    }
    return line;
  }
}

/** Resolves once the connection gathered its candidates (or after GATHERING_MS: what it has goes). */
function gathered(pc) {
  if (pc.iceGatheringState === "complete") return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, GATHERING_MS);
    pc.addEventListener("icegatheringstatechange", () => {
      if (pc.iceGatheringState === "complete") {
        clearTimeout(timer);
        resolve();
      }
    });
  });
}
