// Group sessions on the call cards: share a chat in a call (and its merged group), join one a peer offers, read
// and send its text messages (docs/group-activities.md). A view of parleyd's sessions, kept from `groupSessions`
// and the group events. Below them, the collaborations that ride those sessions (docs/collaboration.md).
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
        // A session parleyd joins on its own as it is offered (a collaboration's) is told joined, then offered:
        // an offer never takes a joined session back to waiting.
        if (data.change === "offered" && this.sessions.get(data.session.session)?.state === "joined") break;
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

  /** Every session bound to a call card: activated or arrived on it, or on another call of its group. */
  sessionsFor(conversation, all) {
    const group = conversation.group;
    return [...this.sessions.values()].filter((session) => {
      if (session.conversation.toLowerCase() === conversation.uuid.toLowerCase()) return true;
      const anchor = all.find((c) => c.uuid.toLowerCase() === session.conversation.toLowerCase());
      return Boolean(group && anchor?.group === group);
    });
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

const COLLAB_STATE_TEXT = { active: "active", updating: "updating", ended: "ended" };
const PEOPLE_ACCESS_TEXT = { invited: "invited", granted: "granted", revoked: "revoked" };

/** What a `collaborationNotice` says, for people: "Alice edited 'Trip plan'". `you` is this device's person root
 *  (a mention's trigger is the mentioned root); `nameOf(root)` names another one. */
export function noticeText(notice, you, nameOf = (root) => `${root.slice(0, 8)}…`) {
  const who = notice.fromName || "Someone";
  const title = `'${notice.title ?? notice.url}'`;
  switch (`${notice.kind} ${notice.kind === "mention" ? "" : notice.trigger}`) {
    case "change edit": return `${who} edited ${title}`;
    case "change comment": return `${who} commented on ${title}`;
    case "mention ": return `${who} mentioned ${notice.trigger === you ? "you" : nameOf(notice.trigger)} in ${title}`;
    case "persistence created": return `${who} created ${title}`;
    case "persistence deleted": return `${who} deleted ${title}`;
    case "persistence renamed": return `${who} renamed ${title}`;
    case "persistence moved": return `${who} moved ${title}`;
    case "membership addedCollaborator": return `${who} added a collaborator to ${title}`;
    case "membership removedCollaborator": return `${who} removed a collaborator from ${title}`;
    default: return `${who}: ${notice.kind} ${notice.trigger} ${title}`;
  }
}

/** A recipient's access, for people: "not opened", "requested", "granted", "rejected: revoked". */
export function accessText(collaboration) {
  if (collaboration.access === "rejected") return `rejected: ${collaboration.rejection ?? "unknown"}`;
  return collaboration.access === "none" ? "not opened" : collaboration.access;
}

/** A link only for http(s) addresses; anything else (parley://…, javascript:…) is shown as text. */
function link(url) {
  let safe = false;
  try { safe = ["http:", "https:"].includes(new URL(url).protocol); } catch { safe = false; }
  return safe ? el("a", { href: url, target: "_blank", rel: "noopener noreferrer", "data-collab-url": true }, url)
    : el("span", { class: "handle", "data-collab-url": true }, url);
}

// Collaborations on the call cards (docs/collaboration.md): share a document in a call, a banner for each one that
// rides the call's group session (its title, link and state; on a recipient its access and Open, on the owner its
// people), the notices posted into it, and the participants updates that wait for Accept or Refuse. A view of
// parleyd's collaborations, kept from `collaborations`, `identity` and the collaboration events. Everything a peer
// chose (titles, names, links) goes into text nodes, never into HTML.
export class CollaborationsView {
  constructor({ request, rerender, toast, groups, storage = null }) {
    this.request = request;
    this.rerender = rerender;
    this.toast = toast;
    this.groups = groups; // the GroupsView: which sessions a call card carries
    this.storage = storage; // the tab's sessionStorage: the names learned survive a reload (parleyd tells them once)
    this.collaborations = new Map(); // collaboration id → the collaboration as parleyd shows it
    this.notices = new Map(); // collaboration id → [{kind, text}], the newest last
    this.updates = new Map(); // action → a participants update waiting for Accept or Refuse
    this.names = new Map(this.stored()); // person root → a name (identityAnnounced, the owner's participants)
    this.root = null; // this device's person root (`identity`): a mention of it is "you"
    this.titles = new Map(); // call uuid → the title typed and not shared yet
    this.confirming = new Set(); // call uuids whose "Ask before adding people" is on
    this.typing = null; // the call whose title input had the focus at the last drawing
    this.sending = new Set(); // "id method" while a request is out
  }

  async load() {
    try {
      const [{ collaborations }, identity] = await Promise.all([
        this.request("collaborations"), this.request("identity").catch(() => null)]);
      this.root = identity?.root ?? this.root;
      this.collaborations = new Map(collaborations.map((c) => [c.collaboration, c]));
      for (const c of collaborations) this.learn(c);
    } catch (error) {
      this.toast(error.message ?? String(error), "error");
    }
    this.rerender();
  }

  /** Takes a collaboration event; true when it was one. */
  onEvent(name, data) {
    switch (name) {
      case "collaborationChanged": {
        const c = data.collaboration, before = this.collaborations.get(c.collaboration);
        this.collaborations.set(c.collaboration, c);
        this.learn(c);
        if (c.state === "ended" && before && before.state !== "ended") this.toast(`'${c.title ?? c.url}' ended`);
        break;
      }
      case "collaborationParticipantsUpdate":
        if (data.requiresConfirmation) this.updates.set(data.action, data);
        break;
      case "collaborationActionCompleted":
        if (this.updates.delete(data.action) && data.outcome === "timedOut") this.toast("A participants update was not answered in time");
        break;
      case "collaborationVerified":
        if (!data.granted) this.add(data.collaboration, "refused", `A request for access was refused: ${data.reason ?? "unknown"}`);
        break;
      case "collaborationNotice":
        this.add(data.collaboration, data.kind, noticeText(data, this.root, (root) => this.nameOf(root)));
        break;
      case "identityAnnounced":
        this.name(data.root, data.name);
        break;
      default:
        return false;
    }
    this.rerender();
    return true;
  }

  learn(collaboration) {
    for (const person of collaboration.participants ?? []) if (person.name) this.name(person.root, person.name);
  }

  /** Keeps a root's name, in this tab's storage too (the newest 200). */
  name(root, name) {
    if (typeof root !== "string" || typeof name !== "string" || this.names.get(root) === name) return;
    this.names.delete(root);
    this.names.set(root, name);
    while (this.names.size > 200) this.names.delete(this.names.keys().next().value);
    try { this.storage?.setItem("parley.names", JSON.stringify([...this.names])); } catch { /* full or off: kept in memory */ }
  }

  stored() {
    try {
      const list = JSON.parse(this.storage?.getItem("parley.names") ?? "[]");
      return Array.isArray(list) ? list.filter((e) => Array.isArray(e) && e.every((v) => typeof v === "string")) : [];
    } catch {
      return [];
    }
  }

  nameOf(root) {
    return root === this.root ? "you" : this.names.get(root) ?? `${root.slice(0, 8)}…`;
  }

  add(collaboration, kind, text) {
    const list = this.notices.get(collaboration) ?? [];
    list.push({ kind, text });
    this.notices.set(collaboration, list.slice(-20));
  }

  /** The collaborations part of a call card (nothing for a call that is not up): a banner per collaboration on the
   *  call's group sessions, then the share control. */
  panel(conversation, all, stale) {
    if (!conversation.canShareActivity) return null;
    const sessions = new Set(this.groups.sessionsFor(conversation, all).map((s) => s.session));
    const here = [...this.collaborations.values()].filter((c) => sessions.has(c.session));
    return el("div", { class: "collabs", "data-collabs": true },
      here.map((c) => this.banner(c, stale)),
      this.share(conversation, stale));
  }

  share(conversation, stale) {
    const uuid = conversation.uuid, busy = this.sending.has(`${uuid} collaborationStart`);
    const input = el("input", { type: "text", "data-collab-title": true, "aria-label": "Title of the document to share",
      maxlength: 500, placeholder: "Document title", disabled: stale, value: this.titles.get(uuid) ?? "" });
    input.addEventListener("input", () => this.titles.set(uuid, input.value));
    input.addEventListener("focus", () => { this.typing = uuid; });
    input.addEventListener("blur", () => { if (this.typing === uuid) this.typing = null; });
    input.addEventListener("keydown", (event) => { if (event.key === "Enter") this.start(conversation); });
    if (this.typing === uuid) {
      queueMicrotask(() => { input.focus(); input.setSelectionRange(input.value.length, input.value.length); });
    }
    const confirm = el("input", { type: "checkbox", "data-collab-confirm": true, disabled: stale, checked: this.confirming.has(uuid) });
    confirm.addEventListener("change", () => { if (confirm.checked) this.confirming.add(uuid); else this.confirming.delete(uuid); });
    return el("div", { class: "collab-share", "data-collab-share": true },
      input,
      el("label", { class: "toggle", title: "People who join the call wait for your Accept" }, confirm, "Ask before adding people"),
      el("button", { type: "button", "data-collab-start": true, disabled: stale || busy, "aria-busy": busy ? "true" : false,
        onclick: () => this.start(conversation) }, "Share document"));
  }

  banner(c, stale) {
    const title = c.title || "Untitled document";
    const people = c.isOwner
      ? el("ul", { class: "collab-people", "data-collab-people": true, "aria-label": "People" },
        c.participants.length === 0 ? el("li", { class: "empty" }, "Nobody yet") : null,
        c.participants.map((p) => el("li", { "data-person": p.root, "data-access": p.access },
          el("strong", {}, p.name ?? this.nameOf(p.root)), " — ", PEOPLE_ACCESS_TEXT[p.access] ?? p.access)))
      : null;
    const opening = this.sending.has(`${c.collaboration} collaborationOpen`);
    const access = c.isOwner ? null : el("div", { class: "collab-access" },
      el("span", { "data-collab-access": c.access }, `Access: ${accessText(c)}`),
      c.state !== "ended" && c.access !== "granted"
        ? el("button", { type: "button", class: "primary", "data-collab-open": c.collaboration, disabled: stale || opening,
          "aria-busy": opening ? "true" : false, onclick: () => this.open(c) }, "Open")
        : null);
    const updates = [...this.updates.values()].filter((u) => u.collaboration === c.collaboration);
    const notices = this.notices.get(c.collaboration) ?? [];
    return el("section", { class: "collab", role: "group", "data-collab": c.collaboration, "data-collab-state": c.state,
        "data-owner": c.isOwner ? "true" : "false", "data-access": c.access, "aria-label": `Shared document ${title}` },
      el("div", { class: "collab-head" },
        el("strong", { "data-collab-name": true }, title),
        el("span", { class: `badge collab-${c.state}`, "data-collab-state-text": true }, COLLAB_STATE_TEXT[c.state] ?? c.state),
        el("span", { class: "handle" }, c.isOwner ? "yours" : "shared with you")),
      link(c.url),
      access,
      people,
      updates.map((u) => this.update(u, stale)),
      notices.length ? el("ol", { class: "collab-notices", "data-collab-notices": true, "aria-live": "polite" },
        notices.map((n) => el("li", { "data-notice-kind": n.kind }, n.text))) : null);
  }

  /** A participants update that waits: who would be added or removed, Accept and Refuse. */
  update(u, stale) {
    const names = (roots) => roots.map((root) => this.nameOf(root)).join(", ");
    const what = [u.added.length ? `add ${names(u.added)}` : null, u.removed.length ? `remove ${names(u.removed)}` : null]
      .filter(Boolean).join(" and ");
    const busy = this.sending.has(`${u.action} collaborationConfirm`);
    return el("div", { class: "collab-update", role: "alert", "data-collab-update": u.action },
      el("span", {}, `Update the people: ${what || "no change"}?`),
      el("span", { class: "actions" },
        el("button", { type: "button", class: "primary", "data-collab-accept": u.action, disabled: stale || busy,
          onclick: () => this.confirm(u, true) }, "Accept"),
        el("button", { type: "button", "data-collab-refuse": u.action, disabled: stale || busy,
          onclick: () => this.confirm(u, false) }, "Refuse")));
  }

  async start(conversation) {
    const uuid = conversation.uuid, title = (this.titles.get(uuid) ?? "").trim();
    const params = { conversation: uuid, confirmUpdates: this.confirming.has(uuid) };
    if (title) params.title = title;
    const c = await this.run(`${uuid} collaborationStart`, "collaborationStart", params);
    if (c?.collaboration) {
      if (!this.collaborations.has(c.collaboration)) this.collaborations.set(c.collaboration, c);
      this.titles.delete(uuid);
    }
    this.rerender();
  }

  async open(c) {
    const result = await this.run(`${c.collaboration} collaborationOpen`, "collaborationOpen", { collaboration: c.collaboration });
    // The answer says `requested`; a `granted` (or `rejected`) that came first is kept.
    const now = this.collaborations.get(c.collaboration);
    if (result?.collaboration && !(now && ["granted", "rejected"].includes(now.access) && result.access === "requested")) {
      this.collaborations.set(result.collaboration, result);
    }
    this.rerender();
  }

  async confirm(u, accept) {
    const result = await this.run(`${u.action} collaborationConfirm`, "collaborationConfirm", { action: u.action, accept }, true);
    if (result || result === undefined) this.updates.delete(u.action);
    this.rerender();
  }

  /** Runs a request, the key marking its button busy meanwhile; a failure becomes a toast with its sentence.
   *  Resolves with the result, or null (undefined when `forgetOnNotFound` and it is no longer pending). */
  async run(key, method, params, forgetOnNotFound = false) {
    this.sending.add(key);
    this.rerender();
    try {
      return await this.request(method, params);
    } catch (error) {
      this.toast(error.message ?? String(error), "error");
      return forgetOnNotFound && error.code === "notFound" ? undefined : null;
    } finally {
      this.sending.delete(key);
    }
  }
}
