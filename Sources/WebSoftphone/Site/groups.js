// Group sessions on the call cards: share a chat in a call (and its merged group), join one a peer offers, read
// and send its text messages (docs/group-activities.md). A view of parleyd's sessions, kept from `groupSessions`
// and the group events.
import { el } from "./dom.js";

/** The text of a `text` message: its data as a string, or the object's `text`; other types show their JSON. */
export function textOf(message) {
  if (typeof message.data === "string") return message.data;
  if (message.type === "text" && typeof message.data?.text === "string") return message.data.text;
  return `${message.type}: ${JSON.stringify(message.data)}`;
}

export class GroupsView {
  constructor({ request, rerender, toast }) {
    this.request = request;
    this.rerender = rerender;
    this.toast = toast;
    this.sessions = new Map(); // session id → the session as parleyd shows it
    this.messages = new Map(); // session id → [{from, text, mine}], the newest last
    this.drafts = new Map(); // session id → what is typed and not sent yet
    this.typing = null; // the session whose input had the focus at the last drawing
  }

  async load() {
    const { sessions } = await this.request("groupSessions");
    this.sessions = new Map(sessions.map((session) => [session.session, session]));
    this.rerender();
  }

  /** Takes a group event; true when it was one. */
  onEvent(name, data) {
    switch (name) {
      case "groupSessionChanged":
        if (data.session.state === "invalidated") {
          this.forget(data.session.session);
          if (data.session.reason !== "left") this.toast(`“${data.session.activity.title}” ended`);
        } else {
          this.sessions.set(data.session.session, data.session);
        }
        break;
      case "groupParticipantsChanged": {
        const session = this.sessions.get(data.session);
        if (session) session.activeParticipants = data.active;
        break;
      }
      case "groupMessage":
        this.add(data.session, { from: data.source.name, text: textOf(data), mine: false });
        break;
      default:
        return false;
    }
    this.rerender();
    return true;
  }

  /** A session that is over: its messages and draft go, and its input no longer takes the focus back. */
  forget(session) {
    this.sessions.delete(session);
    this.messages.delete(session);
    this.drafts.delete(session);
    if (this.typing === session) this.typing = null;
  }

  add(session, message) {
    const list = this.messages.get(session) ?? [];
    list.push(message);
    this.messages.set(session, list.slice(-30));
  }

  /** The session a call card shows: the one activated on it or arrived on it, or its group's. */
  sessionFor(conversation, all) {
    const group = conversation.group;
    for (const session of this.sessions.values()) {
      if (session.conversation.toLowerCase() === conversation.uuid.toLowerCase()) return session;
      const anchor = all.find((c) => c.uuid.toLowerCase() === session.conversation.toLowerCase());
      if (group && anchor?.group === group) return session;
    }
    return null;
  }

  /** The panel inside a call card (nothing for a call that is not up). */
  panel(conversation, all, stale) {
    if (!conversation.canShareActivity) return null;
    const session = this.sessionFor(conversation, all);
    if (!session) {
      return el("div", { class: "group", "data-group": true },
        el("button", { type: "button", "data-group-start": true, disabled: stale,
          onclick: () => this.run("groupActivate", { conversation: conversation.uuid, identifier: "org.parley.chat", title: "Chat" }) },
        "Share a chat"));
    }
    const title = `“${session.activity.title}”`;
    if (session.state === "waiting") {
      return el("div", { class: "group", "data-group": true, "data-group-state": "waiting" },
        el("span", {}, `${title} is offered`),
        el("button", { type: "button", class: "primary", "data-group-join": true, disabled: stale,
          onclick: () => this.run("groupJoin", { session: session.session }) }, "Join"));
    }
    const others = session.activeParticipants.filter((p) => p.id !== session.localParticipant.id).map((p) => p.name);
    const input = el("input", { type: "text", "data-group-input": true, "aria-label": `Message to ${title}`,
      maxlength: 700, placeholder: "Message", disabled: stale, value: this.drafts.get(session.session) ?? "" });
    input.addEventListener("input", () => this.drafts.set(session.session, input.value));
    input.addEventListener("focus", () => { this.typing = session.session; });
    input.addEventListener("blur", () => { if (this.typing === session.session) this.typing = null; });
    input.addEventListener("keydown", (event) => { if (event.key === "Enter") this.send(session, input); });
    if (this.typing === session.session) {
      queueMicrotask(() => { input.focus(); input.setSelectionRange(input.value.length, input.value.length); });
    }
    return el("div", { class: "group", "data-group": true, "data-group-state": "joined", "data-session": session.session },
      el("div", { class: "group-title", "data-group-title": true },
        `${title} with ${others.length ? others.join(", ") : "nobody yet"}`),
      el("ol", { class: "group-messages", "data-group-messages": true, "aria-live": "polite" },
        (this.messages.get(session.session) ?? []).map((m) => el("li", { "data-mine": m.mine ? "true" : "false" },
          el("strong", {}, m.mine ? "You" : m.from), " ", m.text))),
      el("div", { class: "group-compose" },
        input,
        el("button", { type: "button", "data-group-send": true, disabled: stale, onclick: () => this.send(session, input) }, "Send"),
        el("button", { type: "button", "data-group-leave": true, disabled: stale,
          onclick: () => this.run(session.isHost ? "groupEnd" : "groupLeave", { session: session.session }) },
        session.isHost ? "End" : "Leave")));
  }

  async send(session, input) {
    const text = input.value.trim();
    if (!text) return;
    try {
      await this.request("groupSend", { session: session.session, type: "text", data: text });
      this.drafts.delete(session.session);
      this.add(session.session, { from: "You", text, mine: true });
      this.rerender();
    } catch (error) {
      this.toast(error.message ?? String(error), "error");
    }
  }

  async run(method, params) {
    try {
      const session = await this.request(method, params);
      if (session?.session && session.state !== "invalidated") this.sessions.set(session.session, session);
      else if (session?.session) this.forget(session.session);
      this.rerender();
    } catch (error) {
      this.toast(error.message ?? String(error), "error");
    }
  }
}
