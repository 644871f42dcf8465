// The dial panel: a SIP URI or number field with contact suggestions, a 12-key pad (clicks or the keyboard), a
// video switch and Call.
import { el } from "./dom.js";

const KEYS = [["1", ""], ["2", "ABC"], ["3", "DEF"], ["4", "GHI"], ["5", "JKL"], ["6", "MNO"],
              ["7", "PQRS"], ["8", "TUV"], ["9", "WXYZ"], ["*", ""], ["0", "+"], ["#", ""]];

/** Wires the dial panel. `call(to, video, account)` starts a call (through `account`, a name, when parleyd has
 *  several; resolves when parleyd took it); `suggest(query)`
 *  resolves with [{name, handles: [{value}]}] for the autocomplete; `canCall()` says whether we are connected. */
export class DialView {
  constructor({ call, suggest, canCall }) {
    Object.assign(this, { call, suggest, canCall });
    this.form = document.querySelector("[data-dial]");
    this.input = document.querySelector("[data-dial-input]");
    this.button = document.querySelector("[data-dial-call]");
    this.video = document.querySelector("[data-dial-video]");
    this.account = document.querySelector("[data-dial-account]");
    this.suggestions = document.querySelector("[data-suggestions]");
    this.asked = 0;
    document.querySelector("[data-dial-keypad]").replaceChildren(...KEYS.map(([key, letters]) =>
      el("button", { type: "button", "data-key": key, "aria-label": key, onclick: () => this.type(key) },
        key, letters ? el("small", {}, letters) : null)));
    document.querySelector("[data-dial-erase]").addEventListener("click", () => {
      this.input.value = this.input.value.slice(0, -1);
      this.changed();
    });
    this.input.addEventListener("input", () => this.changed());
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.submit();
    });
    // Digits typed anywhere on the page (outside fields and buttons, whose keys are their own) go to the dial field.
    document.addEventListener("keydown", (event) => {
      if (event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) return;
      if (event.target instanceof Element && event.target.closest("input, textarea, select, button, a")) return;
      if (/^[0-9*#+]$/.test(event.key)) { this.type(event.key); event.preventDefault(); }
      else if (event.key === "Backspace") { this.input.value = this.input.value.slice(0, -1); this.changed(); }
      else if (event.key === "Enter" && this.input.value.trim()) this.submit();
    });
    this.refresh();
  }

  type(key) {
    this.input.value += key;
    this.changed();
  }

  /** The accounts to call through (names, the default first): a picker when there are several, none otherwise. */
  setAccounts(names) {
    const chosen = this.account.value;
    this.account.replaceChildren(...names.map((name) => el("option", { value: name }, name)));
    if (names.includes(chosen)) this.account.value = chosen;
    this.account.hidden = names.length < 2;
  }

  /** Puts an address in the field (a click on a recent call). */
  fill(address) {
    this.input.value = address;
    this.changed();
    this.input.focus();
  }

  changed() {
    this.refresh();
    const query = this.input.value.trim();
    const asked = ++this.asked;
    clearTimeout(this.suggestTimer);
    if (query.length < 2) return this.suggestions.replaceChildren();
    this.suggestTimer = setTimeout(async () => {
      const contacts = await this.suggest(query);
      if (asked !== this.asked) return;
      this.suggestions.replaceChildren(...contacts.flatMap((contact) =>
        contact.handles.map((handle) => el("option", { value: handle.value, label: `${contact.name} — ${handle.value}` }))));
    }, 150);
  }

  /** Enables Call when connected and the field holds something. */
  refresh() {
    this.button.disabled = !this.canCall() || this.input.value.trim() === "" || this.busy === true;
  }

  async submit() {
    const to = this.input.value.trim();
    if (!to || !this.canCall()) return;
    this.busy = true;
    this.refresh();
    try {
      const account = this.account.hidden ? null : this.account.value;
      if (await this.call(to, this.video.checked, account)) this.input.value = "";
    } finally {
      this.busy = false;
      this.refresh();
    }
  }
}
