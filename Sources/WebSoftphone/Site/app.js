// The web softphone: a view of parleyd over its control API. Everything it shows comes from `list`, `status`,
// `history` and the events that follow `subscribe`; every button is one request. Calls live in the daemon, so a
// reload, a frozen or a closed tab loses nothing: on each (re)connect the page subscribes, lists, and is current.
import { Connection, takeCredentials } from "./connection.js";
import { CallsView } from "./calls.js";
import { DialView } from "./dial.js";
import { RecentsView } from "./recents.js";
import { Alerts } from "./alerts.js";
import { GroupsView, CollaborationsView } from "./groups.js";
import { toast, nameOf } from "./dom.js";
import { BrowserAudio } from "./audio.js";

const conversations = new Map(); // uuid → conversation, as parleyd last said
let connected = false;
let lastErrorAt = 0; // when the last error toast went up

const credentials = takeCredentials(window.location, window.sessionStorage, window.history);
const connectionChip = document.querySelector("[data-connection]");
const notice = document.querySelector("[data-notice]");
const retryNow = document.querySelector("[data-retry-now]");

function showNotice(text) {
  notice.textContent = text;
  notice.hidden = !text;
}

function showConnection(state, text) {
  connectionChip.dataset.state = state;
  connectionChip.textContent = text;
  document.body.dataset.connectionState = state;
  retryNow.hidden = !(state === "retrying" || state === "unreachable");
}

let countdown = null;
function onState(change) {
  if (change.state === "dropped") return toast(change.message, "error");
  clearInterval(countdown);
  const was = connected;
  connected = change.state === "connected";
  dial.refresh();
  // While disconnected what the page shows may be stale: no ringing, no buttons, until list says again.
  if (was && !connected) render();
  switch (change.state) {
    case "connecting":
      showConnection("connecting", "connecting…");
      break;
    case "connected":
      showConnection("connected", "connected");
      showNotice("");
      break;
    case "unauthorized":
      window.sessionStorage.removeItem("parley.token");
      showConnection("unauthorized", "token refused");
      showNotice("parleyd refused this page's token (it changes when parleyd's data directory does). "
        + "Run `parley web` again and open the address it prints.");
      break;
    case "retrying":
    case "unreachable": {
      let left = change.seconds;
      const say = () => {
        showConnection(change.state, `disconnected — retrying in ${left} s`);
        if (change.state === "unreachable") {
          showNotice(`Cannot connect to parleyd at ${credentials.server}. Is it running with --websocket? This page `
            + `comes from ${window.location.origin}, which parleyd must allow: start it with --allow-origin ${window.location.origin}.`);
        } else {
          showNotice("parleyd is not reachable. If it is still running, your calls go on in it; this page catches up "
            + "as soon as it can reach it again.");
        }
      };
      say();
      countdown = setInterval(() => { left = Math.max(0, left - 1); say(); }, 1000);
      break;
    }
  }
}

/** Runs a request, turning a failure into a toast; resolves with the result or null. */
async function act(method, params = {}) {
  try {
    return await connection.request(method, params);
  } catch (error) {
    console.warn(`${method} failed: ${error.code}: ${error.details?.technical ?? error.message}`);
    if (toast(error.message ?? `${method} failed`, "error")) lastErrorAt = Date.now();
    return null;
  }
}

function render() {
  if (connected) browserAudio.sync(conversations);
  const live = [...conversations.values()].sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  calls.render(live, { stale: !connected });
  alerts.setRinging(!connected ? [] : live.filter((c) => c.state === "ringing" && c.direction === "incoming")
    .map((c) => ({ uuid: c.uuid, name: nameOf(c) })));
  const count = live.length;
  document.querySelector("[data-live-count]").textContent = `${count} call${count === 1 ? "" : "s"}`;
  document.querySelector("[data-live-count]").dataset.count = String(count);
}

// Each account's registration, by name (one entry, "", without accounts).
const registrations = new Map();

function registrationText(registration) {
  const until = registration.expiresAt ? ` until ${new Date(registration.expiresAt).toLocaleTimeString()}` : "";
  return registration.state === "failed" ? `registration failed: ${registration.reason ?? "unknown"}`
    : registration.state === "registered" ? `registered${until}`
    : registration.state === "unregistered" ? "not registering" : registration.state;
}

// The chip: one account's registration as before; with several, the worst state, each account named in it.
function showRegistration(registration) {
  registrations.set(registration.name ?? "", registration);
  const all = [...registrations.values()];
  const chip = document.querySelector("[data-registration]");
  const worst = ["failed", "registering", "unregistered", "registered"].find((state) => all.some((r) => r.state === state));
  chip.dataset.state = worst ?? registration.state;
  chip.textContent = all.length === 1 ? registrationText(all[0])
    : all.map((r) => `${r.name}: ${registrationText(r)}`).join(" · ");
}

const ENDED_TEXT = {
  failed: "failed", remoteEnded: "ended by them", unanswered: "not answered", declined: "declined", busy: "busy",
  cancelled: "cancelled", localEnded: "ended", joinedElsewhere: "answered elsewhere", declinedElsewhere: "declined elsewhere",
  mediaTimeout: "ended: their audio stopped", sessionExpired: "ended: the session expired",
  mediaSecurityFailed: "ended: the audio could not be secured",
  crashed: "ended: parleyd stopped during the call", transferred: "transferred", forwarded: "forwarded",
  iceFailed: "ended: no path for the audio",
};

function onEvent(name, data) {
  if (groups.onEvent(name, data) || collaborations.onEvent(name, data)) return;
  if (browserAudio.onEvent(name, data)) return render();
  switch (name) {
    case "conversationChanged": {
      const conversation = data.conversation;
      if (conversation.state === "left") {
        // A failure this tab was just told about (its action's error) is not told again as the call's end.
        const toldAlready = conversation.endedReason === "failed" && Date.now() - lastErrorAt < 3000;
        if (conversations.delete(conversation.uuid) && !toldAlready) {
          const sip = conversation.sipStatus ? ` (${conversation.sipStatus} ${conversation.sipReason ?? ""})`.trimEnd() : "";
          const refused = conversation.endedReason === "localEnded" && conversation.direction === "incoming"
            && !conversation.connectedAt;
          const why = refused ? "declined" : ENDED_TEXT[conversation.endedReason] ?? conversation.endedReason ?? "ended";
          toast(`Call with ${nameOf(conversation)}: ${why}${sip}`, ["failed", "mediaTimeout", "sessionExpired", "mediaSecurityFailed"].includes(conversation.endedReason) ? "error" : "info");
        }
      } else {
        conversations.set(conversation.uuid, conversation);
      }
      render();
      break;
    }
    case "actionSettled":
      if (data.state !== "complete" && data.error && toast(data.error.message, "error")) lastErrorAt = Date.now();
      break;
    case "historyChanged":
      recents.load();
      break;
    case "registrationChanged":
      showRegistration(data);
      break;
    case "doNotDisturbChanged":
      showDoNotDisturb(data.enabled);
      break;
    case "pushReceived":
      if (data.handling === "notReported") toast(`A push could not be shown as a call: ${data.reason ?? "unknown"}`, "error");
      break;
    case "audioLevels":
      calls.showLevels(data);
      break;
    case "tonesReceived":
      toast(`Tones from ${nameOf(conversations.get(data.conversation) ?? {})}: ${data.digits}`);
      break;
    case "textMessage":
      // Text from outside the call's dialog is a claim anyone can make: say so.
      if (data.verified === false) toast(`Unverified, claims to be ${data.from ?? "?"}: ${data.text}`);
      else toast(`${nameOf(conversations.get(data.conversation) ?? {})}: ${data.text}`);
      break;
  }
}

// The live conversations, page after page (`list` is paged); a page shows at most the first thousand cards.
async function listConversations() {
  const found = [];
  let cursor = null;
  do {
    const page = await connection.request("list", cursor ? { limit: 200, cursor } : { limit: 200 });
    found.push(...page.conversations);
    cursor = page.nextCursor;
  } while (cursor && found.length < 1000);
  return found;
}

// Do-not-disturb: the header's toggle says parleyd's state and changes it.
function showDoNotDisturb(enabled) {
  document.querySelector("[data-dnd-toggle]").checked = enabled;
  document.body.dataset.doNotDisturb = enabled ? "on" : "off";
}
document.querySelector("[data-dnd-toggle]").addEventListener("change", async (event) => {
  const state = await act("doNotDisturb", { enabled: event.target.checked });
  if (state) showDoNotDisturb(state.enabled);
});

async function catchUp() {
  const [status, live, dnd] = await Promise.all([
    connection.request("status"), listConversations(), connection.request("doNotDisturb", {})]);
  showDoNotDisturb(dnd.enabled);
  document.querySelector("[data-user]").textContent = status.daemon.user ?? "no account";
  registrations.clear();
  for (const registration of status.accounts?.length ? status.accounts : [status.registration]) showRegistration(registration);
  dial.setAccounts((status.accounts ?? []).map((r) => r.name));
  calls.limits = status.limits;
  conversations.clear();
  for (const conversation of live) conversations.set(conversation.uuid, conversation);
  render();
  await Promise.all([recents.load(), groups.load(), collaborations.load()]);
}

const groups = new GroupsView({ request: (m, p) => connection.request(m, p), rerender: () => render(), toast });
const collaborations = new CollaborationsView({
  request: (m, p) => connection.request(m, p), rerender: () => render(), toast, groups, storage: window.sessionStorage });
const browserAudio = new BrowserAudio({ request: (m, p) => connection.request(m, p), toast });
const calls = new CallsView({ act, extras: (conversation, all, stale) => [
  browserAudio.panel(conversation), groups.panel(conversation, all, stale), collaborations.panel(conversation, all, stale)] });
document.querySelector("[data-browser-audio-toggle]").addEventListener("change", (event) => {
  browserAudio.setEnabled(event.target.checked, conversations);
  render();
});
const alerts = new Alerts();
let contactsAvailable = true;
const dial = new DialView({
  canCall: () => connected,
  call: async (to, video, account) => Boolean(await act("start", account ? { to, video, account } : { to, video })),
  suggest: async (query) => {
    if (!contactsAvailable || !connected) return [];
    try {
      return (await connection.request("contacts", { query, limit: 8 })).contacts;
    } catch (error) {
      if (error.code === "unavailable") contactsAvailable = false;
      return [];
    }
  },
});
const recents = new RecentsView({ request: (m, p) => connection.request(m, p), act, fill: (address) => dial.fill(address) });
const connection = new Connection({ ...credentials, onState, onEvent, onReady: catchUp });
retryNow.addEventListener("click", () => connection.retryNow());
connection.retryOnReturn(window);

if (credentials.token) {
  connection.open();
} else {
  showConnection("no-token", "no token");
  showNotice("This page needs parleyd's token. In a terminal, run `parley web` and open the address it prints "
    + "(the token travels in the part after #, which never leaves the browser).");
}
