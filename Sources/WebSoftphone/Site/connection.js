// The page's one connection to parleyd: the WebSocket at /ws, the hello with the token, requests answered by id,
// events, and reconnecting with back-off. Calls live in the daemon, so a reconnect only has to catch up
// (subscribe, then list): nothing is lost while the page is away.

const BACKOFF_SECONDS = [1, 2, 4, 8, 15];

/** Takes the token from the address (#token=…) into this tab's sessionStorage and removes it from the address
 *  bar, so it is neither bookmarked nor shared; a reload finds it in sessionStorage. `server=` may name another
 *  parleyd's socket (a page served elsewhere; that origin needs --allow-origin). */
export function takeCredentials(location, storage, history) {
  const fragment = new URLSearchParams(location.hash.replace(/^#/, ""));
  if (fragment.has("token")) {
    storage.setItem("parley.token", fragment.get("token"));
    if (fragment.has("server")) storage.setItem("parley.server", fragment.get("server"));
    else storage.removeItem("parley.server");
    history.replaceState(null, "", location.pathname + location.search);
  }
  const server = storage.getItem("parley.server") || `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`;
  return { token: storage.getItem("parley.token"), server, foreign: new URL(server).host !== location.host };
}

/** A connection that keeps itself open. `onState({state, ...})` hears: connecting, connected, retrying
 *  ({seconds}), unauthorized ({message}), unreachable ({seconds}, a page from another origin), dropped ({message},
 *  a connection-level error: retrying follows); `onEvent(name,
 *  data)` every event; `onReady()` after each (re)connect, once subscribed. */
export class Connection {
  constructor({ server, token, foreign, onState, onEvent, onReady }) {
    Object.assign(this, { server, token, foreign, onState, onEvent, onReady });
    this.nextID = 1;
    this.waiting = new Map();
    this.attempt = 0;
    this.socket = null;
    this.retryTimer = null;
    this.stopped = false;
  }

  /** Opens the socket (again). */
  open() {
    clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.onState({ state: "connecting" });
    let welcomed = false, opened = false;
    const socket = new WebSocket(this.server);
    this.socket = socket;
    socket.onopen = () => {
      opened = true;
      socket.send(JSON.stringify({ v: 1, type: "hello", token: this.token }));
    };
    socket.onmessage = (message) => {
      let data;
      try { data = JSON.parse(message.data); } catch { return; }
      if (!welcomed) {
        if (data.type === "welcome") {
          welcomed = true;
          this.attempt = 0;
          this.ready();
        } else if (data.type === "error" && data.error?.code === "unauthorized") {
          this.stopped = true;
          this.onState({ state: "unauthorized", message: data.error.message });
        }
        return;
      }
      this.receive(data);
    };
    socket.onclose = () => {
      if (this.socket !== socket) return;
      this.socket = null;
      for (const { reject } of this.waiting.values()) reject({ code: "disconnected", message: "parleyd went away." });
      this.waiting.clear();
      if (this.stopped) return;
      const seconds = BACKOFF_SECONDS[Math.min(this.attempt, BACKOFF_SECONDS.length - 1)];
      this.attempt += 1;
      this.onState({ state: !opened && this.foreign ? "unreachable" : "retrying", seconds });
      this.retryTimer = setTimeout(() => this.open(), seconds * 1000);
    };
  }

  /** Retries at once instead of waiting out the back-off. */
  retryNow() {
    if (!this.socket && !this.stopped) this.open();
  }

  /** Retries at once when the tab comes to the front or the network returns: a background tab's timers may be
   *  throttled to one a minute. */
  retryOnReturn(window) {
    window.addEventListener("online", () => this.retryNow());
    window.document.addEventListener("visibilitychange", () => {
      if (!window.document.hidden) this.retryNow();
    });
  }

  async ready() {
    try {
      // With audio levels: each card's meters show who is speaking.
      await this.request("subscribe", { audioLevels: true });
      this.onState({ state: "connected" });
      await this.onReady();
    } catch (error) {
      console.warn("catching up failed", error);
    }
  }

  receive(data) {
    if (data.type === "error") {
      // A connection-level error (evicted, frameTooLarge…): the close that follows retries.
      this.onState({ state: "dropped", message: data.error?.message ?? "parleyd closed the connection." });
    } else if (data.event) {
      this.onEvent(data.event, data.data);
    } else if (data.id !== undefined && data.id !== null && this.waiting.has(data.id)) {
      const { resolve, reject } = this.waiting.get(data.id);
      this.waiting.delete(data.id);
      if (data.error) reject(data.error); else resolve(data.result);
    }
  }

  /** Sends a request; resolves with its result, rejects with its error ({code, message, details}). */
  request(method, params = {}) {
    if (!this.socket || this.socket.readyState !== WebSocket.OPEN) {
      return Promise.reject({ code: "disconnected", message: "Not connected to parleyd; retrying." });
    }
    const id = this.nextID++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.socket.send(JSON.stringify({ v: 1, id, method, params }));
    });
  }
}
