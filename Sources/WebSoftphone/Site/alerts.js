// Getting a person's attention for an incoming call: a desktop notification and a flashing title while the tab is
// in the background, and a ringtone — once the person has touched the page, as browsers' autoplay rules require.

/** Alerts for the calls that ring. */
export class Alerts {
  constructor() {
    this.audio = null; // an AudioContext, once a user gesture allowed it
    this.ringing = new Map(); // uuid → name
    this.notifications = new Map();
    this.flashTimer = null;
    this.ringTimer = null;
    this.baseTitle = document.title;
    // Until the audio runs: not every key counts as the user activation browsers ask for (Escape does not).
    const unlock = () => {
      this.unlockAudio();
      if (this.audible) {
        document.removeEventListener("pointerdown", unlock);
        document.removeEventListener("keydown", unlock);
      }
    };
    document.addEventListener("pointerdown", unlock);
    document.addEventListener("keydown", unlock);
    const button = document.querySelector("[data-enable-alerts]");
    button.addEventListener("click", async () => {
      this.unlockAudio();
      if ("Notification" in window && Notification.permission === "default") await Notification.requestPermission();
      this.showPermission();
    });
    document.addEventListener("visibilitychange", () => this.update());
    this.showPermission();
  }

  showPermission() {
    const button = document.querySelector("[data-enable-alerts]");
    const permission = "Notification" in window ? Notification.permission : "unsupported";
    button.dataset.notifications = permission;
    button.dataset.ringtone = !this.audible ? "off" : this.ringTimer ? "playing" : "on";
    button.textContent = permission === "granted" && this.audible ? "Alerts on"
      : permission === "denied" ? "Notifications blocked" : "Enable alerts";
  }

  /** Whether the ringtone can sound: the audio context runs (a user activation resumed it). */
  get audible() {
    return this.audio?.state === "running";
  }

  unlockAudio() {
    const Context = window.AudioContext || window.webkitAudioContext;
    if (!Context || this.audible) return;
    if (navigator.userActivation && !navigator.userActivation.isActive) return; // Escape, say: not a gesture
    this.audio ??= new Context();
    this.audio.onstatechange = () => { this.showPermission(); this.update(); };
    this.audio.resume().catch(() => {});
  }

  /** The incoming calls ringing now: [{uuid, name}]. */
  setRinging(calls) {
    const now = new Map(calls.map((c) => [c.uuid, c.name]));
    for (const uuid of this.ringing.keys()) {
      if (!now.has(uuid)) { this.notifications.get(uuid)?.close(); this.notifications.delete(uuid); }
    }
    this.ringing = now;
    this.update();
  }

  /** A notification per ringing call while the tab is in the background (also when it goes there mid-ring). */
  notify(uuid, name) {
    if (this.notifications.has(uuid)) return;
    if (!document.hidden || !("Notification" in window) || Notification.permission !== "granted") return;
    const note = new Notification("Incoming call", { body: name, tag: uuid, requireInteraction: true });
    note.onclick = () => { window.focus(); note.close(); };
    this.notifications.set(uuid, note);
  }

  update() {
    for (const [uuid, name] of this.ringing) this.notify(uuid, name);
    const ringing = this.ringing.size > 0;
    document.body.dataset.ringing = String(ringing);
    if (ringing && document.hidden) {
      if (!this.flashTimer) {
        let on = false;
        const [name] = this.ringing.values();
        this.flashTimer = setInterval(() => {
          on = !on;
          document.title = on ? `📞 ${name} is calling` : this.baseTitle;
        }, 1000);
      }
    } else {
      clearInterval(this.flashTimer);
      this.flashTimer = null;
      document.title = ringing ? `📞 ${[...this.ringing.values()][0]} is calling — Parley` : this.baseTitle;
    }
    if (ringing && this.audible && !this.ringTimer) {
      this.ring();
      this.ringTimer = setInterval(() => this.ring(), 3000);
    } else if (!ringing && this.ringTimer) {
      clearInterval(this.ringTimer);
      this.ringTimer = null;
    }
    this.showPermission();
  }

  /** One ring: two short 440/480 Hz bursts (the North American ringback's tones). */
  ring() {
    const start = this.audio.currentTime;
    for (const offset of [0, 0.5]) {
      const gain = this.audio.createGain();
      gain.gain.setValueAtTime(0.0001, start + offset);
      gain.gain.exponentialRampToValueAtTime(0.2, start + offset + 0.02);
      gain.gain.exponentialRampToValueAtTime(0.0001, start + offset + 0.4);
      gain.connect(this.audio.destination);
      for (const frequency of [440, 480]) {
        const tone = this.audio.createOscillator();
        tone.frequency.value = frequency;
        tone.connect(gain);
        tone.start(start + offset);
        tone.stop(start + offset + 0.42);
      }
    }
  }
}
