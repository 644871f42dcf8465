// Recents: the call history, newest first, consecutive calls with the same party and outcome grouped with a count;
// missed calls in red with the unread badge; filters; click a line to redial or put its address in the dial field.
import { el, when, clock, nameOf, handleOf } from "./dom.js";

const STATUS_TEXT = {
  connected: "answered", missed: "missed", declined: "declined", blocked: "blocked", doNotDisturb: "do not disturb", busy: "busy", cancelled: "cancelled",
  failed: "failed", answeredElsewhere: "answered elsewhere", declinedElsewhere: "declined elsewhere", forwarded: "forwarded",
};
const FILTERS = { all: {}, missed: { missed: true }, incoming: { direction: "incoming" }, outgoing: { direction: "outgoing" } };

/** Groups consecutive records of the same party, direction and status. */
export function groupRecords(records) {
  const groups = [];
  for (const record of records) {
    const last = groups[groups.length - 1];
    const key = `${handleOf(record)} ${record.direction} ${record.status}`;
    if (last && last.key === key) last.records.push(record);
    else groups.push({ key, records: [record] });
  }
  return groups;
}

/** The Recents panel. `request(method, params)` talks to parleyd; `act` runs an action (redial); `fill(address)`
 *  puts an address in the dial field. */
export class RecentsView {
  constructor({ request, act, fill }) {
    Object.assign(this, { request, act, fill });
    this.filter = "all";
    this.available = true;
    for (const button of document.querySelectorAll("[data-filter]")) {
      button.addEventListener("click", () => {
        this.filter = button.dataset.filter;
        for (const other of document.querySelectorAll("[data-filter]")) other.setAttribute("aria-pressed", String(other === button));
        this.load();
      });
    }
    document.querySelector("[data-mark-all-read]").addEventListener("click", () => this.act("markRead", { all: true }));
  }

  /** Fetches the first page and the badge again. */
  async load() {
    if (!this.available) return;
    const asked = (this.loads = (this.loads ?? 0) + 1);
    try {
      const [page, badge] = await Promise.all([
        this.request("history", { limit: 50, ...FILTERS[this.filter] }),
        this.request("historyCount", { missed: true, unread: true }),
      ]);
      if (asked !== this.loads) return; // answers may come in any order: only the newest load is shown
      this.render(page.records, badge.count);
    } catch (error) {
      if (error.code === "unavailable") {
        this.available = false;
        document.querySelector("[data-recents]").hidden = true;
      }
    }
  }

  render(records, unreadMissed) {
    const badge = document.querySelector("[data-missed-badge]");
    badge.textContent = String(unreadMissed);
    badge.hidden = unreadMissed === 0;
    badge.setAttribute("aria-label", `${unreadMissed} unread missed calls`);
    document.querySelector("[data-no-recents]").hidden = records.length > 0;
    document.querySelector("[data-recents-list]").replaceChildren(...groupRecords(records).map((group) => this.line(group)));
  }

  line(group) {
    const [newest] = group.records;
    const ids = group.records.map((r) => r.id);
    const unread = group.records.filter((r) => !r.isRead).map((r) => r.id);
    const count = group.records.length;
    const status = STATUS_TEXT[newest.status] ?? newest.status;
    return el("li", {
        class: `recent ${newest.status}`, "data-recent": true, "data-status": newest.status, "data-direction": newest.direction,
        "data-record-ids": ids.join(","), "data-unread": unread.length > 0 ? "true" : "false",
      },
      el("button", { type: "button", class: "who link", "data-action": "redial", title: `Call ${handleOf(newest)} again`,
          onclick: () => this.act("redial", { id: newest.id }) },
        el("strong", { "data-name": true }, nameOf(newest)),
        count > 1 ? el("span", { class: "count", "data-count": count }, ` (${count})`) : null),
      el("span", { class: "what", "data-status-text": true },
        `${newest.direction === "incoming" ? "↙" : "↗"} ${status}${newest.isVideo ? " · video" : ""}`),
      el("span", { class: "when" }, when(newest.endedAt ?? newest.createdAt),
        newest.durationMs > 0 ? ` · ${clock(newest.durationMs)}` : ""),
      el("span", { class: "line-actions" },
        el("button", { type: "button", class: "link", "data-action": "fill", title: "Put this address in the dial field",
          onclick: () => this.fill(handleOf(newest)) }, "Edit"),
        unread.length > 0 ? el("button", { type: "button", class: "link", "data-action": "markRead",
          onclick: () => Promise.all(unread.map((id) => this.act("markRead", { id }))) }, "Mark read") : null,
        el("button", { type: "button", class: "link", "data-action": "delete", "aria-label": `Delete ${count > 1 ? "these calls" : "this call"}`,
          onclick: () => Promise.all(ids.map((id) => this.act("deleteRecord", { id }))) }, "Delete")));
  }
}
