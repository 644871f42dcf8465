// The live conversations: a banner for each incoming call that rings, a card for every other one. Buttons come
// from the conversation's state and capabilities exactly as the lifecycle allows them (docs/lifecycle.md), so the
// page never offers an action the engine would refuse.
import { el, clock, since, nameOf, handleOf } from "./dom.js";

const STATE_TEXT = {
  idle: "calling…", ringing: "ringing", joining: "connecting…", joined: "connected", paused: "on hold",
  leaving: "ending…", left: "ended",
};
const TONES = ["1", "2", "3", "4", "5", "6", "7", "8", "9", "*", "0", "#"];
/** A level (-dBov, RFC 6464's scale) as a meter's value: 0 at -60 dBov and below, 60 at full scale; louder than
 *  -45 dBov counts as speaking. */
const METER_FLOOR = 60, SPEAKING = 45;
export function meterValue(level) {
  return level == null ? 0 : Math.max(0, METER_FLOOR - level);
}

/** The actions a conversation offers now: [method, label, params]. `others` are the other live conversations. */
export function actionsFor(conversation, others, limits = {}) {
  const { state, capabilities: can, direction, group, isMuted, isVideo } = conversation;
  const live = ["idle", "ringing", "joining", "joined", "paused"].includes(state);
  const actions = [];
  if (state === "ringing" && direction === "incoming") {
    // Call waiting: with a call up, answering holds it (parleyd's --on-new-call), or ends it first.
    const up = others.some((c) => c.uuid !== conversation.uuid && ["joined", "paused"].includes(c.state));
    if (up) actions.push(["join", "Hold & Answer"], ["joinEndingOthers", "End & Answer"]);
    else actions.push(["join", "Answer"]);
  }
  if (live) actions.push(["end", state === "ringing" && direction === "incoming" ? "Decline" : "End"]);
  if (state === "joined" && can.includes("pausing")) actions.push(["hold", "Hold"]);
  if (state === "paused") actions.push(["resume", "Resume"]);
  if (["joining", "joined", "paused"].includes(state)) actions.push(isMuted ? ["unmute", "Unmute"] : ["mute", "Mute"]);
  if (["joining", "joined"].includes(state) && can.includes("playingTones")) actions.push(["keypad", "Keypad"]);
  if (state === "joined" && can.includes("video")) actions.push(["video", isVideo ? "Video off" : "Video on"]);
  if (mergeTargets(conversation, others, limits).length > 0) actions.push(["merge", "Merge…"]);
  if (["joined", "paused"].includes(state) && !group) actions.push(["transfer", "Transfer…"]);
  if (group && ["joined", "paused"].includes(state) && can.includes("unmerging")) actions.push(["unmerge", "Unmerge"]);
  return actions;
}

/** The conversations `conversation` can be merged with: joined or paused, able to merge, not in its group, and
 *  within the manager's group limits (`status.limits`: how many groups, how many calls in one). `others` is every
 *  live conversation. */
export function mergeTargets(conversation, others, limits = {}) {
  const mergeable = (c) => ["joined", "paused"].includes(c.state) && c.capabilities.includes("merging");
  if (!mergeable(conversation)) return [];
  const groups = new Map();
  for (const c of others) if (c.group) groups.set(c.group, (groups.get(c.group) ?? 0) + 1);
  const maxGroups = limits.maxConversationGroups ?? Infinity, maxSize = limits.maxConversationsPerGroup ?? Infinity;
  return others.filter((c) => {
    if (c.uuid === conversation.uuid || !mergeable(c) || (c.group && c.group === conversation.group)) return false;
    if (!c.group && !conversation.group) return groups.size < maxGroups; // a new group
    if (c.group && conversation.group) return groups.get(c.group) + groups.get(conversation.group) <= maxSize;
    return (groups.get(c.group ?? conversation.group) ?? 0) + 1 <= maxSize; // one joins the other's group
  });
}

/** Renders `conversations` into the page and keeps their timers running. `act(method, params)` runs an action. */
export class CallsView {
  constructor({ act, extras = () => null }) {
    this.act = act;
    this.extras = extras; // (conversation, all, stale) → what a card shows below its buttons (group panel, collaborations)
    this.limits = {}; // status.limits: the merge limits
    this.panels = new Map(); // uuid → {keypad: bool, merge: bool, sent: string}
    this.sending = new Set(); // "uuid method" while the request is out
    this.tones = new Map(); // uuid → {waiting: digits not sent yet, sending: a playTone is out}
    this.conversations = [];
    /** Each call's last audio levels ({heard, said}), drawn into its card's meters as they come. */
    this.levels = new Map();
    setInterval(() => this.tick(), 1000);
  }

  /** Draws every conversation again. `stale`: parleyd is not connected, so nothing can be done (buttons off). The
   *  element that had the keyboard focus gets it back in the new drawing. */
  render(conversations, { stale = this.stale } = {}) {
    this.conversations = conversations;
    this.stale = stale;
    const focused = this.focusKey(document.activeElement);
    const incoming = conversations.filter((c) => c.state === "ringing" && c.direction === "incoming");
    const cards = conversations.filter((c) => !incoming.includes(c));
    document.querySelector("[data-incoming-list]").replaceChildren(...incoming.map((c) => this.banner(c)));
    document.querySelector("[data-calls]").replaceChildren(...cards.map((c) => this.card(c, conversations)));
    if (focused) {
      const again = [...document.querySelectorAll("[data-uuid] button, [data-uuid] input")].find((b) => this.focusKey(b) === focused);
      again?.focus();
    }
    document.querySelector("[data-no-calls]").hidden = conversations.length > 0;
    for (const map of [this.panels, this.tones, this.levels]) {
      for (const uuid of map.keys()) if (!conversations.some((c) => c.uuid === uuid)) map.delete(uuid);
    }
    this.tick();
  }

  /** "uuid hook=value&…" (its data-* hooks: action, tone, merge-with, the group and collaboration buttons') for a
   *  button inside a conversation, else null. */
  focusKey(element) {
    const owner = element?.closest?.("[data-uuid]");
    if (!owner || !(element instanceof HTMLButtonElement || element instanceof HTMLInputElement)) return null;
    return `${owner.dataset.uuid} ${Object.entries(element.dataset).map(([k, v]) => `${k}=${v}`).join("&")}`;
  }

  banner(conversation) {
    const name = nameOf(conversation);
    return el("section", {
        class: "incoming", role: "alert", "data-incoming": true, "data-uuid": conversation.uuid,
        "aria-label": `Incoming call from ${name}`,
      },
      el("div", { class: "who" },
        el("strong", { "data-name": true }, name),
        el("span", { class: "handle", "data-handle": true }, handleOf(conversation)),
        conversation.viaPush ? el("span", { class: "badge", "data-badge": "push" }, "via push") : null,
        conversation.isVideo ? el("span", { class: "badge", "data-badge": "video" }, "video") : null),
      el("span", { class: "timer", "data-ring-timer": true, "data-since": conversation.createdAt }, "0:00"),
      this.buttons(conversation, this.conversations));
  }

  card(conversation, all) {
    const name = nameOf(conversation);
    const panel = this.panels.get(conversation.uuid) ?? {};
    const badges = [
      conversation.state === "paused" ? ["held", "on hold"] : null,
      conversation.isRemotelyHeld ? ["remote-hold", "held by them"] : null,
      conversation.isMuted ? ["muted", "muted"] : null,
      conversation.isVideo ? ["video", "video"] : null,
      conversation.encryption ? ["encrypted", `encrypted (${conversation.encryption.toUpperCase()})`] : null,
      conversation.group ? ["group", `group ${conversation.group.slice(0, 4)}`] : null,
    ].filter(Boolean);
    const busy = conversation.pendingActions.length > 0;
    const timerStart = conversation.connectedAt ?? conversation.createdAt;
    return el("article", {
        class: "call", role: "listitem", "data-call": true, "data-uuid": conversation.uuid,
        "data-state": conversation.state, "data-direction": conversation.direction, "aria-busy": busy ? "true" : "false",
        "aria-label": `Call with ${name}`,
      },
      el("header", {},
        el("strong", { "data-name": true }, name),
        el("span", { class: "handle", "data-handle": true }, handleOf(conversation)),
        el("span", { class: "direction", "data-direction-text": true }, conversation.direction === "incoming" ? "↙ incoming" : "↗ outgoing")),
      el("div", { class: "status" },
        el("span", { "data-state-text": true }, STATE_TEXT[conversation.state] ?? conversation.state),
        el("span", { class: "timer", "data-timer": true, "data-since": timerStart, "data-connected": conversation.connectedAt ? "true" : "false" }, "0:00"),
        busy ? el("span", { class: "spinner", "data-spinner": true, role: "progressbar", "aria-label": `working: ${conversation.pendingActions.join(", ")}` }) : null,
        ...badges.map(([kind, text]) => el("span", { class: `badge ${kind}`, "data-badge": kind }, text))),
      this.meters(conversation),
      this.buttons(conversation, all),
      panel.keypad ? this.keypad(conversation, panel) : null,
      panel.merge ? this.mergePicker(conversation, all) : null,
      panel.transfer ? this.transferPanel(conversation, all) : null,
      // The group-messages panel and the collaboration banners.
      el("div", { class: "extras", "data-extras": true }, this.extras(conversation, all, this.stale)));
  }

  /** The call's two meters: what we hear from them (and whether they are speaking), what we say. */
  meters(conversation) {
    const levels = this.levels.get(conversation.uuid) ?? {};
    const meter = (which, label) => el("label", { class: "level" }, label,
      el("meter", { "data-level": which, min: 0, max: METER_FLOOR, low: METER_FLOOR - SPEAKING, value: meterValue(levels[which]) }));
    return el("div", { class: "levels", "data-levels": true,
        "data-speaking": String(levels.heard != null && levels.heard <= SPEAKING) },
      meter("heard", "them"), meter("said", "you"));
  }

  /** An `audioLevels` event: the card's meters move in place (four times a second: no redrawing). */
  showLevels({ conversation, heard, said }) {
    this.levels.set(conversation, { heard, said });
    const card = document.querySelector(`[data-call][data-uuid="${conversation}"]`);
    if (!card) return;
    for (const [which, level] of [["heard", heard], ["said", said]]) {
      const node = card.querySelector(`[data-level="${which}"]`);
      if (node) node.value = meterValue(level);
    }
    const box = card.querySelector("[data-levels]");
    if (box) box.dataset.speaking = String(heard != null && heard <= SPEAKING);
  }

  buttons(conversation, all) {
    const pending = new Set(conversation.pendingActions);
    return el("div", { class: "actions", role: "toolbar", "aria-label": "Call actions" },
      actionsFor(conversation, all, this.limits).map(([method, label]) => {
        const running = this.stale || pending.has(method) || this.sending.has(`${conversation.uuid} ${method}`);
        const panelToggle = method === "keypad" || method === "merge" || method === "transfer";
        const pressed = panelToggle ? String(Boolean(this.panels.get(conversation.uuid)?.[method])) : false;
        return el("button", {
          type: "button", class: method === "end" || method === "joinEndingOthers" ? "danger" : method === "join" ? "primary" : "",
          "data-action": method, disabled: running, "aria-busy": running ? "true" : false, "aria-pressed": pressed,
          onclick: () => this.press(conversation, method),
        }, label);
      }));
  }

  keypad(conversation, panel) {
    return el("div", { class: "call-keypad", "data-keypad": true },
      el("div", { class: "keypad", role: "group", "aria-label": "Send tones" },
        TONES.map((tone) => el("button", { type: "button", "data-tone": tone, disabled: this.stale,
          onclick: () => this.tone(conversation, tone) }, tone))),
      el("output", { "data-tones-sent": true, "aria-live": "polite" },
        `Sent: ${panel.sent || "—"}`, this.tones.get(conversation.uuid)?.waiting ? ` (then ${this.tones.get(conversation.uuid).waiting})` : ""));
  }

  mergePicker(conversation, all) {
    const targets = mergeTargets(conversation, all, this.limits);
    return el("div", { class: "merge-picker", "data-merge-picker": true, role: "group", "aria-label": "Merge with" },
      el("span", {}, "Merge with:"),
      targets.map((other) => el("button", {
        type: "button", "data-merge-with": other.uuid,
        onclick: () => { this.toggle(conversation.uuid, "merge"); this.run(conversation, "merge", { with: other.uuid }); },
      }, nameOf(other))));
  }

  /** Transfer: a blind one to an address typed here, or an attended one to another answered call (its peer takes
   *  this call's place: SIP Replaces). parleyd answers once the target answered; a failure is a toast. */
  transferPanel(conversation, all) {
    const others = all.filter((c) => c.uuid !== conversation.uuid && ["joined", "paused"].includes(c.state) && !c.group);
    // What is typed survives the redraws every event makes (the card is drawn again; focus comes back too).
    const panel = this.panels.get(conversation.uuid) ?? {};
    const field = el("input", { type: "text", name: "to", placeholder: "sip:carol@example.com or a number",
      "data-transfer-target": true, "aria-label": "Transfer to", autocomplete: "off",
      oninput: (event) => { panel.transferDraft = event.target.value; } });
    field.value = panel.transferDraft ?? "";
    const send = (params) => {
      panel.transferDraft = "";
      this.toggle(conversation.uuid, "transfer");
      this.run(conversation, "transfer", params);
    };
    return el("div", { class: "transfer-panel", "data-transfer-panel": true, role: "group", "aria-label": "Transfer" },
      el("form", { onsubmit: (event) => {
          event.preventDefault();
          const to = field.value.trim();
          if (to) send({ to });
        } },
        field, el("button", { type: "submit", "data-transfer-go": true, disabled: this.stale }, "Transfer")),
      others.length ? el("span", {}, "or hand over to:") : null,
      others.map((other) => el("button", { type: "button", "data-transfer-to": other.uuid, disabled: this.stale,
        onclick: () => send({ toConversation: other.uuid }) }, nameOf(other))));
  }

  press(conversation, method) {
    if (method === "keypad" || method === "merge" || method === "transfer") return this.toggle(conversation.uuid, method);
    const params = method === "mute" ? { muted: true } : method === "unmute" ? { muted: false }
      : method === "video" ? { enabled: !conversation.isVideo } : method === "joinEndingOthers" ? { endOthers: true } : {};
    const request = method === "unmute" ? "mute" : method === "joinEndingOthers" ? "join" : method;
    this.run(conversation, request, params, method);
  }

  toggle(uuid, panel) {
    const state = this.panels.get(uuid) ?? {};
    state[panel] = !state[panel];
    this.panels.set(uuid, state);
    this.render(this.conversations);
  }

  /** Keys pressed while tones are still going out wait, and leave together in one playTone once the last is
   *  answered: parleyd sends a conversation's tones one INFO at a time and refuses a second playTone meanwhile. */
  tone(conversation, digit) {
    const queue = this.tones.get(conversation.uuid) ?? { waiting: "", sending: false };
    queue.waiting += digit;
    this.tones.set(conversation.uuid, queue);
    this.render(this.conversations);
    if (!queue.sending) this.sendTones(conversation.uuid, queue);
  }

  async sendTones(uuid, queue) {
    queue.sending = true;
    while (queue.waiting) {
      const digits = queue.waiting;
      queue.waiting = "";
      const sent = await this.act("playTone", { conversation: uuid, digits });
      const panel = this.panels.get(uuid) ?? {};
      if (sent) panel.sent = ((panel.sent ?? "") + digits).slice(-24);
      this.panels.set(uuid, panel);
      this.render(this.conversations);
    }
    queue.sending = false;
  }

  async run(conversation, method, params, shown = method) {
    const key = `${conversation.uuid} ${shown}`;
    this.sending.add(key);
    this.render(this.conversations);
    try {
      await this.act(method, { conversation: conversation.uuid, ...params });
    } finally {
      this.sending.delete(key);
      this.render(this.conversations);
    }
  }

  tick() {
    const now = Date.now();
    for (const node of document.querySelectorAll("[data-timer], [data-ring-timer]")) {
      node.textContent = clock(since(node.dataset.since, now));
    }
  }
}
