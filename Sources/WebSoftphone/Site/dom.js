// Small DOM and formatting helpers shared by the page's modules.

/** Makes an element: el("button", {type: "button", "data-action": "end", onclick: f}, "End"); `onNAME` functions are
 *  listeners (the page's CSP allows no inline handlers). */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === false || value === null || value === undefined) continue;
    if (name.startsWith("on") && typeof value === "function") node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** "0:07", "12:04", "1:02:03" for a duration in milliseconds. */
export function clock(ms) {
  const total = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(total / 3600), m = Math.floor((total % 3600) / 60), s = total % 60;
  const mm = h > 0 ? String(m).padStart(2, "0") : String(m);
  return (h > 0 ? `${h}:` : "") + `${mm}:${String(s).padStart(2, "0")}`;
}

/** Milliseconds since an ISO 8601 timestamp, never negative (the daemon's clock may be a little ahead). */
export function since(timestamp, now = Date.now()) {
  return timestamp ? Math.max(0, now - Date.parse(timestamp)) : 0;
}

/** "14:02" today, "Mon 14:02" this week, else "2026-11-29 14:02". */
export function when(timestamp, now = new Date()) {
  const date = new Date(timestamp);
  const time = date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  if (date.toDateString() === now.toDateString()) return time;
  if (now - date < 6 * 86400 * 1000) return `${date.toLocaleDateString([], { weekday: "short" })} ${time}`;
  return `${date.toISOString().slice(0, 10)} ${time}`;
}

/** Who the other side of a conversation or a record is, for people. */
export function nameOf(item) {
  const first = item.members?.[0];
  return item.displayName || first?.contactName || first?.displayName || first?.value || "unknown";
}

/** The address of the other side ("sip:bob@…", "+1 415…"). */
export function handleOf(item) {
  return item.members?.[0]?.value ?? "";
}

const shown = new Map(); // toast text → when it was shown

/** Shows a short message for a few seconds; errors are announced at once (role=alert). The same text twice within
 *  3 s is shown once (a failed action is told by its answer and again by actionSettled). Returns null then. */
export function toast(text, kind = "info") {
  const now = Date.now();
  if (now - (shown.get(text) ?? 0) < 3000) return null;
  shown.set(text, now);
  const box = document.querySelector("[data-toasts]");
  const note = el("div", { class: `toast ${kind}`, "data-toast": kind, role: kind === "error" ? "alert" : "status" }, text);
  box.append(note);
  while (box.children.length > 3) box.firstElementChild.remove(); // the newest three
  setTimeout(() => note.remove(), kind === "error" ? 8000 : 5000);
  return note;
}
