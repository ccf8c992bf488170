// Parley's browser chat app: plain TypeScript and the DOM, no framework.
import "./style.css";
import type { Conversation, ConversationMessage } from "../../ts/src/gen/parley/v1/conversation_pb";
import type { GenerationEvent, Part } from "../../ts/src/gen/parley/v1/common_pb";
import { FinishReason, Role } from "../../ts/src/gen/parley/v1/common_pb";
import type { Model } from "../../ts/src/gen/parley/v1/model_pb";
import { ModelKind } from "../../ts/src/gen/parley/v1/model_pb";
import { ResponseCacheMode } from "../../ts/src/gen/parley/v1/api_key_pb";
import type { User } from "../../ts/src/gen/parley/v1/auth_pb";
import { SignUpPolicy } from "../../ts/src/gen/parley/v1/auth_pb";
import { ArchivedFilter, ExportFormat, MessageStatus, Rating } from "../../ts/src/gen/parley/v1/conversation_pb";
import {
  auth, billing, Code, ConnectError, convs, describe, keys, models, tierName, timestampMs, attachments,
  isNetworkError, retryDelayMs, LimitKind,
} from "./api";
import { FieldViolationSchema, LimitExceededSchema, RetryInfoSchema } from "../../ts/src/gen/parley/v1/errors_pb";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { preloadHighlight, render, StreamingMarkdown, upgrade } from "./markdown";
import { attachAccept, refusedFile, upload, uploadError } from "./upload";

import { $, h, timeEl, when } from "./dom";
import { limitRows } from "./limits";
import { showShared } from "./share";
import { initProjects, loadProjects, markProject, projectName, showProject } from "./projects";
import { citationsOf, onCitationClick, showCitations } from "./citations";
import { rememberDialog, showUsedMemories } from "./memory";
import { t, tp, num, locale, loadLanguage, type MessageId } from "./i18n";

// The language's catalogue is loaded before anything is drawn (t() needs it).
await loadLanguage();
// A page the server rendered (a share link's) outlives the app's shell.
const serverRendered = document.getElementById("shared");
const ctrl = `<kbd translate="no">${t("shortcuts.ctrl")}</kbd>`;
const kbd = (k: string) => `<kbd translate="no">${k}</kbd>`;
document.body.innerHTML = `
<section id="offline-screen" class="auth" hidden><div class="card"><h1 translate="no">Parley</h1><p><strong>${t("offline.title")}</strong></p><p class="muted">${t("offline.body")}</p></div></section>
<section id="auth" class="auth" hidden>
  <form id="auth-form" class="card">
    <h1 translate="no">Parley</h1>
    <p class="muted" id="auth-sub">${t("auth.subSignUp")}</p>
    <label>${t("auth.email")} <input name="email" type="email" required autocomplete="username"></label>
    <label>${t("auth.password")} <input name="password" type="password" required minlength="10" maxlength="256" autocomplete="current-password" aria-describedby="password-rule"></label>
    <p class="muted small" id="password-rule">${t("auth.passwordRule")}</p>
    <label id="name-row">${t("auth.name")} <input name="display_name" autocomplete="name"></label>
    <label id="invite-row" hidden>${t("auth.invitationCode")} <input name="invitation_code" autocomplete="off" spellcheck="false" placeholder="inv_…"></label>
    <p class="muted" id="signup-closed" hidden>${t("auth.signUpClosed")}</p>
    <button type="submit" id="auth-submit" class="primary">${t("auth.signUp")}</button>
    <p class="error" id="auth-error" role="alert"></p>
    <button type="button" class="link" id="auth-toggle">${t("auth.toLogIn")}</button>
    <a id="sso-login" class="button" href="/auth/oidc/login" hidden>${t("auth.ssoWith", { name: t("auth.ssoGeneric") })}</a>
  </form>
</section>
<div id="main" class="main" hidden>
  <a class="skip-link" href="#input" id="skip-link">${t("side.skipToInput")}</a>
  <aside id="sidebar">
    <div class="side-top"><a id="new-chat" class="button primary" href="#/">${t("side.newChat")}</a></div>
    <input id="search" type="search" placeholder="${t("side.search")}" aria-label="${t("side.search")}" autocomplete="off">
    <ul id="search-results" hidden></ul>
    <section id="projects-side" aria-labelledby="projects-heading">
      <div class="side-head"><h2 id="projects-heading">${t("side.projects")}</h2><button type="button" id="new-project" class="link" aria-haspopup="dialog">${t("side.newProject")}</button></div>
      <ul id="project-list"></ul>
    </section>
    <h2 class="side-label" id="chats-heading">${t("side.chats")}</h2>
    <ul id="conv-list" aria-labelledby="chats-heading"></ul>
    <div id="conv-sentinel"></div>
    <button id="conv-more" class="link" hidden>${t("side.loadMore")}</button>
    <label class="archived"><input type="checkbox" id="show-archived"> ${t("side.showArchived")}</label>
  </aside>
  <div id="scrim"></div>
  <div id="chat">
    <header>
      <button id="menu" type="button" aria-label="${t("nav.conversations")}">☰</button>
      <select id="model" aria-label="${t("nav.model")}"></select>
      <span class="spacer"></span>
      <button id="nav-toggle" type="button" aria-label="${t("nav.menu")}" aria-expanded="false" aria-controls="nav">⋯</button>
      <nav id="nav">
        <a id="usage-btn" class="button" href="#/usage">${t("nav.usage")}</a>
        <button id="limits-btn" type="button">${t("nav.limits")}</button>
        <a id="keys-btn" class="button" href="#/keys">${t("nav.keys")}</a>
        <a id="orgs-btn" class="button" href="#/orgs">${t("nav.teams")}</a>
        <a id="settings-btn" class="button" href="#/settings">${t("nav.settings")}</a>
        <a id="admin-btn" class="button" href="#/admin" hidden>${t("nav.admin")}</a>
        <button id="theme" type="button" aria-label="${t("nav.darkMode")}" aria-pressed="false">◐</button>
        <span id="me" class="muted"></span>
        <button id="logout" type="button">${t("nav.logOut")}</button>
      </nav>
    </header>
    <div id="banner" class="banner" role="alert" hidden><span id="banner-text"></span><button type="button" id="banner-close" class="link" aria-label="${t("banner.dismiss")}">×</button></div>
    <main id="messages" role="log" aria-live="off" aria-label="${t("chat.log")}"></main>
    <div id="announcer" class="sr-only" aria-live="polite" aria-atomic="false"></div>
    <button type="button" id="jump" class="jump" hidden>${t("chat.jump")}</button>
    <section id="usage-page" class="page" tabindex="0" hidden></section>
    <section id="settings-page" class="page" tabindex="0" hidden></section>
    <section id="admin-page" class="page" tabindex="0" hidden></section>
    <section id="orgs-page" class="page" tabindex="0" hidden></section>
    <section id="keys-page" class="page" tabindex="0" hidden>
      <h2>${t("nav.keys")}</h2>
      <p class="muted">${t("keys.intro", { code: `<code translate="no">Authorization: Bearer …</code>` })}</p>
      <p id="key-needs" class="needs">${t("keys.needs", { link: `<a href="#/usage">${t("keys.needsLink")}</a>` })}</p>
      <form id="key-form" class="row">
        <input name="name" required maxlength="100" placeholder="${t("keys.namePlaceholder")}">
        <label>${t("keys.expiresIn")} <input name="days" type="number" min="1" max="30" value="30" required> ${t("keys.days")}</label>
        <label title="${t("keys.cacheHint")}">${t("keys.responseCache")} <select name="cache"><option value="">${t("keys.cacheServerDefault")}</option><option value="on">${t("keys.cacheOn")}</option><option value="off">${t("keys.cacheOff")}</option></select></label>
        <button class="primary">${t("keys.create")}</button>
      </form>
      <div id="key-secret" class="secret" hidden>
        <p><strong>${t("keys.copyNow")}</strong> ${t("keys.notAgain")}</p>
        <div class="row"><code id="secret-value" translate="no"></code><button id="copy-secret" type="button">${t("msg.copy")}</button></div>
      </div>
      <p class="error" id="keys-error" role="alert"></p>
      <div class="table"><table><thead><tr><th>${t("keys.colName")}</th><th>${t("keys.colKey")}</th><th>${t("keys.colCreated")}</th><th>${t("keys.colExpires")}</th><th>${t("keys.colLastUsed")}</th><th>${t("keys.colCache")}</th><th></th></tr></thead><tbody id="key-rows"></tbody></table></div>
    </section>
    <form id="composer">
      <ul id="prompt-menu" role="listbox" aria-label="${t("chat.savedPrompts")}" hidden></ul>
      <div id="pending"></div>
      <p id="queued" class="muted small" role="status" hidden><span id="queued-text"></span> <button type="button" class="link" id="unqueue">${t("chat.dontSend")}</button></p>
      <div class="row">
        <button type="button" id="attach" class="attach" title="${t("chat.attachTitle")}" aria-label="${t("chat.attach")}"><svg width="16" height="16" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2"><path d="M21 11.5l-8.5 8.5a6 6 0 01-8.5-8.5l9-9a4 4 0 015.7 5.7l-9 9a2 2 0 01-2.9-2.9l8.5-8.4"/></svg></button><input type="file" id="file" multiple hidden tabindex="-1" accept="${attachAccept}">
        <textarea id="input" rows="1" aria-label="${t("chat.message")}" aria-keyshortcuts="Shift+Escape" placeholder="${t("chat.placeholder")}"></textarea>
        <button type="button" id="chat-settings-btn" class="attach" title="${t("chat.settings")}" aria-label="${t("chat.settings")}" aria-haspopup="dialog">⚙</button>
        <button type="submit" id="send" class="primary">${t("chat.send")}</button>
        <button type="button" id="stop" hidden>${t("chat.stop")}</button>
      </div>
    </form>
  </div>
</div>
<dialog id="share" aria-label="${t("shareDialog.title")}"><form method="dialog"><h2>${t("shareDialog.title")}</h2><div id="share-body"></div><button>${t("dlg.close")}</button></form></dialog>
<dialog id="sysprompt" aria-label="${t("sysprompt.title")}"><form method="dialog" id="sysprompt-form"><h2>${t("sysprompt.title")}</h2>
  <p class="muted">${t("sysprompt.intro")}</p>
  <textarea id="sysprompt-text" rows="8" maxlength="8000" aria-label="${t("sysprompt.title")}" translate="no"></textarea><p class="error" id="sysprompt-error" role="alert"></p>
  <div class="row"><button id="sysprompt-save" class="primary">${t("dlg.save")}</button><button value="cancel">${t("dlg.cancel")}</button></div></form></dialog>
<dialog id="project-dialog" aria-labelledby="project-dialog-title"><form method="dialog" id="project-create-form" class="project-form"><h2 id="project-dialog-title">${t("projectDialog.title")}</h2>
  <p class="muted">${t("projectDialog.intro")}</p>
  <label for="project-name">${t("projectDialog.name")}</label><input id="project-name" name="name" required maxlength="100" autocomplete="off">
  <label for="project-instructions">${t("projectDialog.instructions")} <span class="muted">${t("projectDialog.optional")}</span></label>
  <textarea id="project-instructions" name="instructions" rows="5" maxlength="8000" placeholder="${t("projectDialog.placeholder")}"></textarea>
  <p class="error" id="project-dialog-error" role="alert"></p>
  <div class="row"><button id="project-create" class="primary">${t("projectDialog.create")}</button><button value="cancel" formnovalidate>${t("dlg.cancel")}</button></div></form></dialog>
<dialog id="chat-settings" aria-labelledby="chat-settings-title"><form method="dialog" id="chat-settings-form"><h2 id="chat-settings-title">${t("chat.settings")}</h2>
  <label><input type="checkbox" name="temp-on"> ${t("chatSettings.temperature")} <input type="range" name="temp" min="0" max="2" step="0.1" value="1" aria-label="${t("chatSettings.temperature")}"> <output name="temp-out">${oneDecimal(1)}</output></label>
  <p class="muted small">${t("chatSettings.temperatureHelp")}</p>
  <label>${t("chatSettings.longest")} <input type="number" name="max" min="1" placeholder="${t("chatSettings.maxPlaceholder")}" aria-label="${t("chatSettings.maxLabel")}"> ${t("chatSettings.tokens")}</label>
  <p class="muted small" id="chat-settings-max"></p>
  <div class="row"><button class="primary" value="save">${t("dlg.save")}</button><button value="cancel" formnovalidate>${t("dlg.cancel")}</button></div></form></dialog>
<dialog id="shortcuts" aria-labelledby="shortcuts-title"><form method="dialog"><h2 id="shortcuts-title">${t("shortcuts.title")}</h2><table>
  <tr><td>${ctrl} ${kbd("Shift")} ${kbd("O")}</td><td>${t("shortcuts.newChat")}</td></tr>
  <tr><td>${kbd("Shift")} ${kbd("Esc")}</td><td>${t("shortcuts.focus")}</td></tr>
  <tr><td>${ctrl} ${kbd("K")}</td><td>${t("shortcuts.search")}</td></tr>
  <tr><td>${ctrl} ${kbd("Shift")} ${kbd("C")}</td><td>${t("shortcuts.copyLast")}</td></tr>
  <tr><td>${kbd("Esc")}</td><td>${t("shortcuts.stop")}</td></tr>
  <tr><td>${kbd("Enter")} / ${kbd("Shift")} ${kbd("Enter")}</td><td>${t("shortcuts.sendNewLine")}</td></tr>
  <tr><td>${kbd("?")} ${t("shortcuts.or")} ${ctrl} ${kbd("/")}</td><td>${t("shortcuts.these")}</td></tr>
</table><p class="muted small">${t("shortcuts.mac")}</p><button>${t("dlg.close")}</button></form></dialog>
<dialog id="limits"><form method="dialog"><h2>${t("limitsDialog.title")}</h2><div id="limits-body"></div><button>${t("dlg.close")}</button></form></dialog>`;
if (serverRendered) document.body.append(serverRendered);

// ---------- state ----------
let me: User | undefined;
let modelList: Model[] = [];
let currentId = ""; // the open conversation; "" is a new chat
let newChatProject = ""; // the project a new chat is started in (its page is open)
let listToken: string | undefined = "";
let lastSeen = 0; // the open conversation's updated_at as last shown
let listLoading = false;

interface Gen {
  convId: string;
  abort: AbortController;
  lastSeq: bigint;
  view?: AssistantView;
  pendingCancel: boolean;
  finished: boolean;
  /** Followed, not sent here: what started it (another tab's message) may have been stored after this tab read the conversation. */
  followed?: boolean;
}
let gen: Gen | undefined;

const messagesEl = $("messages");
const input = $<HTMLTextAreaElement>("input");
const modelSel = $<HTMLSelectElement>("model");

// ---------- theme ----------
// No choice stored: the system's. The toggle stores the opposite of what shows.
const darkQuery = matchMedia("(prefers-color-scheme: dark)");
function applyTheme() {
  const theme = localStorage.getItem("parley.theme");
  if (theme === "dark" || theme === "light") document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
  const dark = theme ? theme === "dark" : darkQuery.matches;
  $("theme").setAttribute("aria-pressed", String(dark));
  $("theme").title = dark ? t("nav.toLight") : t("nav.toDark");
}
$("theme").onclick = () => {
  const dark = document.documentElement.dataset.theme ? document.documentElement.dataset.theme === "dark" : darkQuery.matches;
  localStorage.setItem("parley.theme", dark ? "light" : "dark");
  applyTheme();
};
darkQuery.addEventListener("change", applyTheme);
applyTheme();

// ---------- errors ----------
// A banner belongs to the page that showed it: leaving the page clears it,
// and × dismisses it. While the server cannot be reached, a probe retries
// with back-off and the banner goes once it answers.
let bannerPage = "";
function banner(msg: string) {
  $("banner-text").textContent = msg;
  $("banner").hidden = !msg;
  $("banner").classList.remove("offline");
  bannerPage = msg ? location.hash : "";
}
$("banner-close").onclick = () => banner("");
function fail(err: unknown) {
  if (ConnectError.from(err).code === Code.Unauthenticated) return showAuth();
  if (isNetworkError(err)) return offline(err);
  banner(describe(err));
}

let probe: { timer: number; delay: number } | undefined;
/** Shows that Parley is unreachable and probes it with back-off until it answers. */
function offline(err: unknown) {
  if (probe) return;
  const first = Math.max(1000, retryDelayMs(err) ?? 0);
  probe = { timer: 0, delay: first };
  const schedule = () => {
    const p = probe!;
    let left = Math.ceil(p.delay / 1000);
    const tick = () => {
      banner(t("banner.retrying", { error: describe(err), n: num(left) }));
      $("banner").classList.add("offline");
    };
    tick();
    p.timer = window.setInterval(async () => {
      if (--left > 0) return tick();
      clearInterval(p.timer);
      try {
        await auth.getMe({});
      } catch (e) {
        if (ConnectError.from(e).code === Code.Unauthenticated) { probe = undefined; banner(""); return showAuth(); }
        p.delay = Math.min(p.delay * 2, 30_000);
        err = e;
        return schedule();
      }
      probe = undefined;
      if ($("banner").classList.contains("offline")) banner("");
      if (me) { reloadList(); route(); }
    }, 1000);
  };
  schedule();
}

// ---------- auth ----------
// Someone who has signed in on this browser before is offered Log in first,
// unless the link carries an invitation (?invite=CODE). The server's sign-up
// policy decides whether the form asks for a code or says sign-up is closed.
let signingUp = true;
let signUpPolicy = SignUpPolicy.UNSPECIFIED;
const inviteInput = document.querySelector<HTMLInputElement>("input[name=invitation_code]")!;
const invited = new URLSearchParams(location.search).get("invite")?.trim() ?? "";
if (invited) inviteInput.value = invited;
// A sign-in through the identity provider that failed comes back with why.
const ssoError = new URLSearchParams(location.search).get("sso_error") ?? "";
if (ssoError) history.replaceState(null, "", location.pathname + location.hash);
function showAuth() {
  me = undefined;
  $("main").hidden = true;
  $("auth").hidden = false;
  authMode(!!invited || !localStorage.getItem("parley.returning"));
  document.title = "Parley";
  if (signUpPolicy === SignUpPolicy.UNSPECIFIED) {
    auth.getSignUpPolicy({}).then((r) => {
      signUpPolicy = r.policy;
      authMode(signingUp);
      const sso = $<HTMLAnchorElement>("sso-login");
      if (r.ssoLoginUrl) {
        sso.href = `${r.ssoLoginUrl}?return=${encodeURIComponent(location.pathname + location.hash)}`;
        sso.textContent = t("auth.ssoWith", { name: r.ssoName || t("auth.ssoGeneric") });
      }
      sso.hidden = !r.ssoLoginUrl;
      if (ssoError) $("auth-error").textContent = ssoError;
    }, () => { /* the form stays as it is; SignUp says */ });
  }
}
$("auth-toggle").onclick = () => authMode(!signingUp);
function authMode(up: boolean) {
  signingUp = up;
  const invite = signingUp && signUpPolicy === SignUpPolicy.INVITE;
  const closed = signingUp && signUpPolicy === SignUpPolicy.CLOSED;
  $("auth-submit").textContent = signingUp ? t("auth.signUp") : t("auth.logIn");
  $<HTMLButtonElement>("auth-submit").disabled = closed;
  $("auth-toggle").textContent = signingUp ? t("auth.toLogIn") : t("auth.toSignUp");
  $("auth-sub").textContent = !signingUp ? t("auth.welcomeBack") : invite ? t("auth.subInvite") : t("auth.subSignUp");
  $("name-row").hidden = !signingUp;
  $("password-rule").hidden = !signingUp;
  $("invite-row").hidden = !invite;
  inviteInput.required = invite;
  $("signup-closed").hidden = !closed;
  $("auth-error").textContent = "";
}
$<HTMLFormElement>("auth-form").onsubmit = async (e) => {
  e.preventDefault();
  const f = new FormData(e.target as HTMLFormElement);
  const email = String(f.get("email")), password = String(f.get("password"));
  try {
    const r = signingUp
      ? await auth.signUp({ email, password, displayName: String(f.get("display_name") ?? ""), invitationCode: String(f.get("invitation_code") ?? "").trim() })
      : await auth.login({ email, password });
    if (invited) history.replaceState(null, "", location.pathname + location.hash); // the code is spent
    start(r.user!);
  } catch (err) {
    const c = ConnectError.from(err);
    // The policy may have changed since the page asked: a refusal naming
    // the code (or closed sign-up) shows the form the server wants.
    if (signingUp && c.code === Code.PermissionDenied) {
      const next = c.findDetails(FieldViolationSchema).some((v) => v.field === "invitation_code") ? SignUpPolicy.INVITE
        : /sign-up policy: closed/.test(c.rawMessage) ? SignUpPolicy.CLOSED : signUpPolicy;
      if (next !== signUpPolicy) { signUpPolicy = next; authMode(true); }
    }
    $("auth-error").textContent = c.code === Code.AlreadyExists ? t("auth.emailTaken") : describe(err);
  }
};
$("logout").onclick = async () => {
  try { await auth.logout({}); } catch { /* the session is gone either way */ }
  location.hash = "";
  showAuth();
};

async function start(user: User) {
  me = user;
  localStorage.setItem("parley.returning", "1");
  $("admin-btn").hidden = !user.admin;
  $("auth").hidden = true;
  $("main").hidden = false;
  $("me").replaceChildren(h("span", { translate: "no" }, user.displayName || user.email), ` · ${tierName(user.tier)}`);
  fitHeader();
  await Promise.all([loadModels(), reloadList(), loadProjects()]);
  fitHeader();
  if (joinCode) {
    history.replaceState(null, "", "/#/orgs");
    if (location.hash === "#/orgs") return route();
  }
  route();
}

// ---------- models ----------
async function loadModels() {
  try {
    // Embedding models answer no chat: the picker offers chat models only.
    modelList = (await models.listModels({})).models.filter((m) => m.kind !== ModelKind.EMBEDDING);
  } catch (err) { return fail(err); }
  const saved = localStorage.getItem("parley.model");
  modelSel.replaceChildren(...modelList.map((m) => {
    const name = m.displayName || m.id;
    const simulated = m.simulated && !/simulated/i.test(name);
    return h("option", { value: m.id, title: m.description, translate: simulated ? undefined : "no" }, simulated ? t("nav.simulated", { name }) : name);
  }));
  if (saved && modelList.some((m) => m.id === saved)) modelSel.value = saved;
}
// The picker's choice sticks to the open conversation and becomes the model of
// new chats; a conversation without a choice of its own uses its stored model.
modelSel.onchange = () => {
  localStorage.setItem("parley.model", modelSel.value);
  if (currentId) localStorage.setItem(`parley.model.${currentId}`, modelSel.value);
};
function pickModel(convId: string, fallback = "") {
  for (const m of [convId && localStorage.getItem(`parley.model.${convId}`), fallback, localStorage.getItem("parley.model")]) {
    if (m && modelList.some((x) => x.id === m)) { modelSel.value = m; return; }
  }
}

// ---------- conversation list ----------
const listEl = $("conv-list");
async function reloadList() {
  listToken = "";
  listEl.textContent = "";
  await loadMore();
}
async function loadMore() {
  if (!me || listLoading || listToken === undefined) return;
  listLoading = true;
  try {
    const archived = $<HTMLInputElement>("show-archived").checked ? ArchivedFilter.ARCHIVED : ArchivedFilter.ACTIVE;
    const r = await convs.listConversations({ pageSize: 30, pageToken: listToken, archived });
    for (const c of r.conversations) listEl.append(convItem(c));
    regroup();
    listToken = r.nextPageToken || undefined;
  } catch (err) { fail(err); } finally { listLoading = false; }
  $("conv-more").hidden = listToken === undefined;
  markActive();
}
$("conv-more").onclick = loadMore;
$("show-archived").onchange = reloadList;
new IntersectionObserver((es) => es.some((e) => e.isIntersecting) && loadMore(), { root: $("sidebar") }).observe($("conv-sentinel"));

function convItem(c: Conversation): HTMLLIElement {
  const li = h("li", { "data-id": c.conversationId, "data-updated": c.updatedAt ? timestampMs(c.updatedAt) : 0, "data-pinned": c.pinned ? "1" : undefined, "data-folder": c.folder || undefined });
  const title = h("a", { href: `#/c/${c.conversationId}`, class: "title", translate: c.title ? "no" : undefined, title: c.titleGenerated ? t("conv.titleGenerated", { title: c.title }) : c.title },
    c.title || t("conv.newChat"), c.titleGenerated ? h("span", { class: "generated", "aria-label": t("conv.generatedMark") }, " ✦") : "");
  const menu = h("div", { class: "menu", hidden: true },
    h("button", { type: "button", class: "rename", onclick: () => rename(li, c) }, t("conv.rename")),
    h("button", { type: "button", class: "pin", onclick: () => pin(li, c) }, c.pinned ? t("conv.unpin") : t("conv.pin")),
    h("button", { type: "button", class: "file", onclick: () => fileIn(li, c) }, c.folder ? t("conv.moveToFolder") : t("conv.addToFolder")),
    h("button", { type: "button", class: "archive", onclick: () => archive(li, c) }, c.archived ? t("conv.unarchive") : t("conv.archive")),
    h("button", { type: "button", class: "share", onclick: () => share(c) }, t("conv.share")),
    h("button", { type: "button", class: "export-md", onclick: () => exportConv(c, ExportFormat.MARKDOWN) }, t("conv.exportMd")),
    h("button", { type: "button", class: "export-json", onclick: () => exportConv(c, ExportFormat.JSON) }, t("conv.exportJson")),
    h("button", { type: "button", class: "system-prompt", onclick: () => systemPrompt(c) }, t("conv.systemPrompt")),
    h("button", { type: "button", class: "delete danger", onclick: () => remove(li, c) }, t("conv.delete")));
  const more = h("button", { type: "button", class: "more", "aria-label": t("conv.more"), "aria-expanded": "false", onclick: () => { menu.hidden = !menu.hidden; more.setAttribute("aria-expanded", String(!menu.hidden)); } }, "⋯");
  menu.addEventListener("click", (e) => { if ((e.target as HTMLElement).closest("button")) { menu.hidden = true; more.setAttribute("aria-expanded", "false"); } });
  li.append(title, more, menu);
  return li;
}
function upsertItem(c: Conversation) {
  listEl.querySelector(`[data-id="${c.conversationId}"]`)?.remove();
  listEl.prepend(convItem(c));
  markActive();
  regroup();
}

// The list is grouped by when each conversation last changed: Today,
// Yesterday, Previous 7 days, Previous 30 days, then by month.
const recent = (ms: number) => { const d = new Date(); d.setHours(0, 0, 0, 0); return ms >= d.getTime() - 30 * 86400_000; };
function groupOf(ms: number): string {
  const start = new Date(); start.setHours(0, 0, 0, 0);
  const day = 86400_000, t0 = start.getTime();
  if (ms >= t0) return t("group.today");
  if (ms >= t0 - day) return t("group.yesterday");
  if (ms >= t0 - 7 * day) return t("group.prev7");
  if (ms >= t0 - 30 * day) return t("group.prev30");
  return new Date(ms).toLocaleDateString(locale(), { month: "long", year: "numeric" });
}
// Pinned conversations come first, then each folder (by name), then the
// rest by when they last changed.
function regroup() {
  for (const g of listEl.querySelectorAll(".group")) g.remove();
  const items = [...listEl.children] as HTMLElement[];
  const pinned = items.filter((li) => li.dataset.pinned);
  const filed = items.filter((li) => !li.dataset.pinned && li.dataset.folder)
    .sort((a, b) => a.dataset.folder!.localeCompare(b.dataset.folder!));
  const rest = items.filter((li) => !li.dataset.pinned && !li.dataset.folder);
  const out: HTMLElement[] = [];
  let last = "";
  // (A folder's name is the person's words and a month is a date: neither is translated.)
  const add = (li: HTMLElement, g: string, cls = "", own = false) => {
    if (g !== last) out.push(h("li", { class: `group${cls}`, translate: own ? "no" : undefined }, g));
    last = g;
    out.push(li);
  };
  for (const li of pinned) add(li, t("group.pinned"), " pinned-group");
  for (const li of filed) add(li, `📁 ${li.dataset.folder}`, " folder-group", true);
  for (const li of rest) { const ms = Number(li.dataset.updated); add(li, groupOf(ms), "", !recent(ms)); }
  listEl.replaceChildren(...out);
}

// ---------- search ----------
const searchEl = $<HTMLInputElement>("search");
const resultsEl = $("search-results");
let searchTimer = 0, searchSeq = 0;
searchEl.addEventListener("input", () => {
  clearTimeout(searchTimer);
  searchTimer = window.setTimeout(runSearch, 250);
});
searchEl.addEventListener("keydown", (e) => { if (e.key === "Escape" && searchEl.value) { e.stopPropagation(); searchEl.value = ""; runSearch(); } });
/** The snippet with its highlight ranges (code points) as <mark>. */
function highlighted(snippet: string, ranges: { start: number; end: number }[]): Node[] {
  const cps = Array.from(snippet);
  const out: Node[] = [];
  let at = 0;
  for (const r of ranges) {
    if (r.start > at) out.push(document.createTextNode(cps.slice(at, r.start).join("")));
    out.push(h("mark", {}, cps.slice(r.start, r.end).join("")));
    at = r.end;
  }
  if (at < cps.length) out.push(document.createTextNode(cps.slice(at).join("")));
  return out;
}
async function runSearch() {
  const q = searchEl.value.trim();
  const seq = ++searchSeq;
  resultsEl.hidden = !q;
  listEl.hidden = !!q;
  $("conv-more").hidden = !!q || listToken === undefined;
  if (!q) { resultsEl.textContent = ""; return; }
  resultsEl.textContent = "";
  await searchPage(q, seq, "");
}
/** Appends a page of results for q, and a "More results" button while there are more. */
async function searchPage(q: string, seq: number, pageToken: string, focusNew = false) {
  try {
    const r = await convs.searchConversations({ query: q, pageSize: 30, pageToken });
    if (seq !== searchSeq) return;
    resultsEl.querySelector(".more-results")?.remove();
    const first = resultsEl.children.length;
    resultsEl.append(...r.results.map((x) => h("li", { "data-id": x.conversation!.conversationId },
      h("a", { href: `#/c/${x.conversation!.conversationId}`, class: "title", translate: x.conversation!.title ? "no" : undefined }, x.conversation!.title || t("conv.newChat")),
      h("div", { class: "snippet", translate: "no" }, ...highlighted(x.snippet, x.highlights)))));
    if (!resultsEl.children.length) resultsEl.append(h("li", { class: "none muted" }, t("search.none")));
    if (focusNew) resultsEl.children[first]?.querySelector("a")?.focus(); // keyboard users go on from the first new result
    if (r.nextPageToken) {
      const more = h("button", { type: "button", class: "link", id: "search-more" }, t("search.more")) as HTMLButtonElement;
      more.onclick = () => { more.disabled = true; more.textContent = t("main.loading"); searchPage(q, seq, r.nextPageToken, true); };
      resultsEl.append(h("li", { class: "more-results" }, more));
    }
  } catch (err) {
    if (seq !== searchSeq) return;
    resultsEl.querySelector(".more-results")?.remove();
    resultsEl.append(h("li", { class: "none error" }, describe(err)));
  }
}
function markActive() {
  for (const li of listEl.children) li.classList.toggle("active", (li as HTMLElement).dataset.id === currentId);
}
/**
 * Edits one of a conversation's fields in place of its title: Enter or
 * leaving saves (when save says what changed), Escape keeps it as it was.
 */
function editInline(li: HTMLElement, c: Conversation, attrs: Record<string, unknown>, save: (value: string) => Promise<Conversation | undefined>) {
  const field = h("input", { class: "rename-input", ...attrs }) as HTMLInputElement;
  li.querySelector(".title")!.replaceWith(field);
  field.focus();
  field.select();
  let done = false;
  const finish = async (keep: boolean) => {
    if (done) return;
    done = true;
    let next = c;
    if (keep) {
      try { next = (await save(field.value.trim())) ?? c; } catch (err) { fail(err); }
    }
    li.replaceWith(convItem(next));
    markActive();
    regroup();
    if (next.conversationId === currentId) document.title = `${next.title || t("conv.newChat")} · Parley`;
  };
  field.onkeydown = (e) => { if (e.key === "Enter") finish(true); if (e.key === "Escape") { e.stopPropagation(); finish(false); } };
  field.onblur = () => finish(true);
}
function rename(li: HTMLLIElement, c: Conversation) {
  editInline(li, c, { value: c.title, maxlength: 200, "aria-label": t("conv.titleField"), translate: "no" }, async (t) =>
    t && t !== c.title ? (await convs.updateConversation({ conversationId: c.conversationId, title: t })).conversation : undefined);
}
async function pin(li: HTMLElement, c: Conversation) {
  try {
    const r = await convs.updateConversation({ conversationId: c.conversationId, pinned: !c.pinned });
    li.replaceWith(convItem(r.conversation!));
    markActive();
    regroup();
  } catch (err) { fail(err); }
}
/** Files a conversation in a folder (a name; empty takes it out). */
function fileIn(li: HTMLElement, c: Conversation) {
  editInline(li, c, { class: "rename-input folder-input", value: c.folder, maxlength: 60, placeholder: t("conv.folderPlaceholder"), "aria-label": t("conv.folderField"), translate: "no" }, async (f) =>
    f !== c.folder ? (await convs.updateConversation({ conversationId: c.conversationId, folder: f })).conversation : undefined);
}
// ---------- share, export, system prompt ----------
async function share(c: Conversation) {
  const body = $("share-body");
  body.textContent = t("shareDialog.creating");
  ($("share") as HTMLDialogElement).showModal();
  const show = (path: string) => {
    const url = location.origin + path;
    body.replaceChildren(
      h("p", {}, t("shareDialog.explain")),
      h("div", { class: "row" }, h("input", { id: "share-url", readonly: true, value: url, "aria-label": t("shareDialog.link"), translate: "no" }),
        h("button", { type: "button", class: "primary", onclick: (e: Event) => copyText(url).then(() => { (e.target as HTMLElement).textContent = t("msg.copied"); }) }, t("shareDialog.copyLink"))),
      h("div", { class: "row" }, h("a", { href: path, target: "_blank", rel: "noopener" }, t("shareDialog.open")),
        h("button", { type: "button", id: "unshare", class: "danger", onclick: unshare }, t("shareDialog.stop"))));
  };
  const unshare = async () => {
    try {
      await convs.unshareConversation({ conversationId: c.conversationId });
      body.replaceChildren(h("p", {}, t("shareDialog.gone")));
    } catch (err) { body.replaceChildren(h("p", { class: "error" }, describe(err))); }
  };
  try {
    const r = await convs.shareConversation({ conversationId: c.conversationId });
    show(r.path || `/share/${r.shareId}`);
  } catch (err) { body.replaceChildren(h("p", { class: "error" }, describe(err))); }
}
async function exportConv(c: Conversation, format: ExportFormat) {
  try {
    const r = await convs.exportConversation({ conversationId: c.conversationId, format });
    const a = h("a", { href: URL.createObjectURL(new Blob([r.content as BlobPart], { type: r.contentType })), download: r.filename }) as HTMLAnchorElement;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
  } catch (err) { fail(err); }
}
async function systemPrompt(c: Conversation) {
  try { c = (await convs.getConversation({ conversationId: c.conversationId })).conversation!; } catch (err) { return fail(err); }
  promptDialog(c.systemPrompt, async (text) => { await convs.updateConversation({ conversationId: c.conversationId, systemPrompt: text }); });
}
/** The system prompt dialog: shows text, and closes once save(the new text) succeeds. */
function promptDialog(text: string, save: (text: string) => Promise<void>) {
  const dlg = $("sysprompt") as HTMLDialogElement;
  const ta = $<HTMLTextAreaElement>("sysprompt-text");
  $("sysprompt-error").textContent = "";
  ta.value = text;
  dlg.showModal();
  ta.focus();
  $<HTMLFormElement>("sysprompt-form").onsubmit = async (e) => {
    if ((e as SubmitEvent).submitter?.id !== "sysprompt-save") return;
    e.preventDefault();
    try {
      await save(ta.value);
      dlg.close();
    } catch (err) { $("sysprompt-error").textContent = describe(err); }
  };
}
// A new chat's system prompt, set before its first message: the conversation
// is created with it when that message is sent.
let newChatPrompt = "", creatingChat = false;
function newChatPromptButton(): HTMLElement {
  const b = h("button", { type: "button", id: "new-sysprompt", class: "link" }) as HTMLButtonElement;
  const label = () => { b.textContent = newChatPrompt.trim() ? t("sysprompt.set") : t("sysprompt.add"); };
  label();
  b.onclick = () => promptDialog(newChatPrompt, async (text) => {
    if ([...text].length > 8000) throw new Error(t("sysprompt.tooLong"));
    newChatPrompt = text;
    label();
  });
  return b;
}

async function archive(li: HTMLLIElement, c: Conversation) {
  try {
    await convs.updateConversation({ conversationId: c.conversationId, archived: !c.archived });
    li.remove();
    if (c.conversationId === currentId) location.hash = "#/";
  } catch (err) { fail(err); }
}
async function remove(li: HTMLLIElement, c: Conversation) {
  if (!confirm(t("conv.deleteConfirm", { title: c.title || t("conv.newChat") }))) return;
  try {
    await convs.deleteConversation({ conversationId: c.conversationId });
    li.remove();
    if (c.conversationId === currentId) location.hash = "#/";
  } catch (err) { fail(err); }
}

// ---------- routing ----------
let ignoreHash = "";
window.addEventListener("hashchange", () => {
  if (location.hash === ignoreHash) { ignoreHash = ""; return; }
  route();
});
const pages: Record<string, [MessageId, () => void]> = {
  "#/keys": ["nav.keys", () => showKeys()],
  "#/usage": ["nav.usage", () => void import("./pages").then((m) => m.showUsage(modelSel.value))],
  "#/settings": ["nav.settings", () => void import("./pages").then((m) => m.showSettings())],
  "#/admin": ["nav.admin", () => void import("./pages").then((m) => m.showAdmin())],
  "#/orgs": ["nav.orgsTitle", () => void import("./orgs").then((m) => m.showOrgs(takeJoin()))],
};
// An organisation's invitation link (/join/CODE) opens the organisations
// page offering to join, once signed in; the address bar drops the code.
let joinCode = /^\/join\/([A-Za-z0-9_]+)$/.exec(location.pathname)?.[1] ?? "";
function takeJoin() { const c = joinCode; joinCode = ""; return c; }
function route() {
  if (!me) return;
  $("sidebar").classList.remove("open");
  navOpen(false);
  const hash = location.hash;
  if (bannerPage !== hash && !$("banner").classList.contains("offline")) banner("");
  const page = pages[hash];
  for (const k of Object.keys(pages)) $(`${k.slice(2)}-page`).hidden = k !== hash;
  messagesEl.hidden = !!page;
  $("composer").hidden = !!page;
  if (page) {
    if (gen) { gen.abort.abort(); gen = undefined; setBusy(false); }
    currentId = "";
    newChatProject = "";
    markActive();
    document.title = `${t(page[0])} · Parley`;
    return page[1]();
  }
  markProject();
  const pm = /^#\/p\/(.+)$/.exec(hash);
  if (pm) return void openProject(decodeURIComponent(pm[1]));
  const m = /^#\/c\/(.+)$/.exec(hash);
  openConversation(m ? decodeURIComponent(m[1]) : "");
}
function navOpen(open: boolean) {
  $("nav").classList.toggle("open", open);
  $("nav-toggle").setAttribute("aria-expanded", String(open));
}
$("nav-toggle").onclick = () => navOpen(!$("nav").classList.contains("open"));
// Fold the menu when the header overflows (measured with the menu unfolded).
const headerEl = $("nav").parentElement!;
function fitHeader() {
  headerEl.classList.remove("compact");
  if (headerEl.scrollWidth > headerEl.clientWidth + 1) headerEl.classList.add("compact");
}
// (The model picker widens with its options, without the header resizing.)
const headerFit = new ResizeObserver(fitHeader);
headerFit.observe(headerEl);
headerFit.observe($("model"));
$("nav").addEventListener("click", (e) => { if ((e.target as HTMLElement).closest("a,button:not(#theme)")) navOpen(false); });

// ---------- messages ----------
interface AssistantView { el: HTMLElement; md: StreamingMarkdown; }

function nearBottom() { return messagesEl.scrollHeight - messagesEl.scrollTop - messagesEl.clientHeight < 80; }
function toBottom() { messagesEl.scrollTop = messagesEl.scrollHeight; }

function partsView(parts: Part[]): Node[] {
  const out: Node[] = [];
  for (const p of parts) {
    if (p.kind.case === "text") out.push(h("div", { class: "text", translate: "no" }, p.kind.value));
    else if (p.kind.case === "attachmentId") out.push(attachmentChip(p.kind.value));
    else if (p.kind.case === "image") out.push(h("span", { class: "chip" }, t("msg.image")));
    else if (p.kind.case === "document") out.push(h("span", { class: "chip", translate: p.kind.value.filename ? "no" : undefined }, p.kind.value.filename || t("msg.document")));
  }
  return out;
}
function attachmentChip(id: string): HTMLElement {
  const chip = h("span", { class: "chip" }, t("msg.attachment"));
  attachments.getAttachment({ attachmentId: id }).then((r) => {
    const a = r.attachment!;
    if (a.mimeType.startsWith("image/") && r.downloadUrl) chip.replaceChildren(h("img", { src: r.downloadUrl, alt: a.filename, class: "thumb" }));
    else { chip.textContent = a.filename; chip.translate = false; }
  }, () => { chip.textContent = t("msg.attachmentUnavailable"); });
  return chip;
}
// The text each message's Copy button copies: an answer's Markdown source.
const sourceOf = new WeakMap<HTMLElement, () => string>();
const partsText = (parts: Part[]) => parts.map((p) => (p.kind.case === "text" ? p.kind.value : "")).join("");
function actions(el: HTMLElement, label: string, remember: string) {
  const bar = h("div", { class: "actions" },
    h("button", { type: "button", class: "copy-msg", "aria-label": label, title: label }, t("msg.copy")),
    h("button", { type: "button", class: "remember-msg", "aria-label": remember, title: remember, "aria-haspopup": "dialog" }, t("msg.remember")));
  el.append(bar);
  return bar;
}
function userView(parts: Part[], id = "") {
  const el = h("div", { class: "msg user", "data-id": id, title: when(Date.now()) }, h("div", { class: "bubble" }, ...partsView(parts)));
  sourceOf.set(el, () => partsText(parts));
  actions(el, t("msg.copyMessage"), t("msg.rememberMessage"));
  messagesEl.append(el);
  return el;
}
function assistantView(model: string, id = ""): AssistantView {
  const body = h("div", { class: "md", translate: "no" });
  const el = h("div", { class: "msg assistant", "data-id": id, title: when(Date.now()) }, h("div", { class: "who", translate: model ? "no" : undefined }, model ? `${model}` : t("msg.assistant")), body);
  messagesEl.append(el);
  const md = new StreamingMarkdown(body);
  md.onFlush = () => { if (stick) toBottom(); else showJump(); };
  sourceOf.set(el, () => md.text);
  actions(el, t("msg.copyAnswer"), t("msg.rememberAnswer"));
  return { el, md };
}
let stick = true;
messagesEl.addEventListener("scroll", () => { stick = nearBottom(); showJump(); });
// Scrolled up: a control back to the latest message, which says when an
// answer is still being written below.
const jump = $("jump");
function showJump() {
  jump.hidden = stick || !messagesEl.children.length || !$("composer").offsetParent;
  jump.textContent = gen ? t("chat.jumpAnswering") : t("chat.jump");
}
jump.onclick = () => { stick = true; toBottom(); showJump(); input.focus(); };

// Screen readers hear an answer politely, a sentence at a time (never per
// token): finished sentences move from the stream to a live region.
let spoken = "";
function speak(text: string, done: boolean) {
  const cut = done ? text.length : Math.max(text.lastIndexOf(". "), text.lastIndexOf("! "), text.lastIndexOf("? "), text.lastIndexOf("\n")) + 1;
  if (cut <= spoken.length) return;
  const fresh = text.slice(spoken.length, cut).trim();
  spoken = text.slice(0, cut);
  if (fresh) $("announcer").append(h("p", { translate: "no" }, fresh));
}
function quiet() { spoken = ""; $("announcer").textContent = ""; }

function note(v: AssistantView, reason: FinishReason, msg = "") {
  const text = reason === FinishReason.CANCELLED ? t("msg.stopped")
    : reason === FinishReason.LENGTH ? t("msg.lengthLimit")
    : reason === FinishReason.ERROR ? t("msg.failed", { error: msg || t("msg.errorWord") }) : "";
  v.el.querySelector(".note")?.remove();
  if (text) {
    v.el.querySelector(".actions")!.before(h("div", { class: `note${reason === FinishReason.ERROR ? " error" : ""}` }, text,
      reason === FinishReason.LENGTH ? h("button", { type: "button", class: "continue-msg link", "aria-label": t("msg.continueLabel") }, " ", t("msg.continue")) : ""));
  }
  v.el.classList.remove("streaming");
}

messagesEl.addEventListener("click", (e) => {
  if (onCitationClick(e)) return;
  const target = e.target as HTMLElement;
  const msg = target.closest<HTMLElement>(".msg");
  if (msg && target.closest(".regen")) return void regenerate(msg);
  if (msg && target.closest(".continue-msg")) return void continueAnswer(msg);
  if (msg && target.closest(".edit-msg")) return void edit(msg);
  if (msg && target.closest(".prev-ver")) return void switchVersion(msg, -1);
  if (msg && target.closest(".next-ver")) return void switchVersion(msg, 1);
  const rem = target.closest<HTMLElement>(".remember-msg");
  if (msg && rem) return void rememberDialog(sourceOf.get(msg)?.() ?? "", rem);
  if (msg && target.closest(".rate-good")) return void rate(msg, true);
  if (msg && target.closest(".rate-bad")) return void rate(msg, false);
  const b = target.closest(".copy, .copy-msg");
  if (!b) return;
  const text = b.classList.contains("copy")
    ? b.closest(".code")!.querySelector("code")!.textContent ?? ""
    : sourceOf.get(b.closest(".msg") as HTMLElement)?.() ?? "";
  const label = b.textContent; // a code block's Copy is markdown.ts's words, a message's ours
  copyText(text).then(() => {
    b.textContent = t("msg.copied");
    setTimeout(() => (b.textContent = label), 1500);
  }, () => banner(t("msg.copyRefused")));
});
async function copyText(text: string) {
  if (navigator.clipboard?.writeText) return navigator.clipboard.writeText(text);
  const ta = h("textarea", {}, text) as HTMLTextAreaElement;
  document.body.append(ta);
  ta.select();
  const ok = document.execCommand("copy");
  ta.remove();
  if (!ok) throw new Error("copy refused");
}

// ---------- projects ----------
initProjects({ fail, chatsChanged: () => { reloadList(); } });
/** A project's page (#/p/{id}): the composer under it starts a new chat in the project. */
async function openProject(id: string) {
  if (gen) { gen.abort.abort(); gen = undefined; setBusy(false); }
  currentId = "";
  newChatProject = id;
  markActive();
  if (!$("banner").classList.contains("offline")) banner("");
  stick = true;
  document.title = `${t("chat.project")} · Parley`;
  const p = await showProject(id, messagesEl, () => newChatProject === id && !currentId);
  if (newChatProject !== id || currentId) return; // left meanwhile
  if (!p) { newChatProject = ""; $("composer").hidden = true; return; }
  document.title = `${p.name} · Parley`;
  input.placeholder = t("chat.newChatIn", { name: p.name });
  pickModel("");
  input.focus();
}
/** The link back to a chat's project, above its messages. */
function projectCrumb(projectId: string): HTMLElement {
  const name = projectName(projectId);
  return h("nav", { class: "crumb", "aria-label": t("chat.project") },
    h("a", { href: `#/p/${projectId}`, class: "project-link", translate: name ? "no" : undefined }, h("span", { "aria-hidden": "true" }, "▣ "), name || t("chat.project")));
}

/** Shows a conversation; refresh redraws the open one in place (another tab changed it). */
async function openConversation(id: string, refresh = false) {
  if (queued && id !== currentId) unqueue();
  const cs = chatSettings(id);
  $("chat-settings-btn").classList.toggle("set", cs.temperature !== undefined || !!cs.maxOutputTokens);
  if (gen && gen.convId !== id) { gen.abort.abort(); gen = undefined; setBusy(false); }
  if (gen && gen.convId === id && id) return; // already showing it live
  currentId = id;
  newChatProject = "";
  placeholder();
  markActive();
  if (!refresh) {
    if (!$("banner").classList.contains("offline")) banner("");
    messagesEl.textContent = "";
    stick = true;
  }
  if (!id) {
    pickModel("");
    document.title = `${t("conv.newChat")} · Parley`;
    messagesEl.append(h("div", { class: "empty" }, h("h2", {}, t("chat.emptyTitle")), h("p", { class: "muted" }, t("chat.simulatedNote")),
      newChatPromptButton()));
    input.focus();
    return;
  }
  try {
    const [c, msgs] = await Promise.all([convs.getConversation({ conversationId: id }), allMessages(id)]);
    if (currentId !== id) return;
    const conv = c.conversation!;
    if (refresh) messagesEl.textContent = "";
    if (conv.projectId) messagesEl.append(projectCrumb(conv.projectId));
    pickModel(id, conv.model);
    document.title = `${conv.title || t("conv.newChat")} · Parley`;
    lastSeen = conv.updatedAt ? timestampMs(conv.updatedAt) : 0;
    let list = msgs;
    if (conv.generating && list.length && list[list.length - 1].role === Role.ASSISTANT && list[list.length - 1].finishReason === FinishReason.UNSPECIFIED) {
      list = list.slice(0, -1); // the live answer is replayed below
    }
    for (const m of list) showStored(m);
    if (stick) toBottom();
    if (conv.generating) follow(id);
  } catch (err) {
    if (ConnectError.from(err).code === Code.NotFound) { banner(t("chat.notFound")); return; }
    fail(err);
  }
  if (!refresh) input.focus();
}

// ---------- other tabs ----------
// Tabs of this browser tell each other at once (BroadcastChannel); tabs
// elsewhere notice within a few seconds: a visible tab polls the open
// conversation's updated_at (one small GetConversation) and redraws it when
// it changed or an answer is under way.
const channel = typeof BroadcastChannel === "function" ? new BroadcastChannel("parley") : undefined;
function announce(convId: string) { channel?.postMessage({ conv: convId }); }
if (channel) channel.onmessage = (e) => {
  const id = (e.data as { conv?: string })?.conv;
  if (!id || !me) return;
  if (id === currentId) refreshCurrent();
  else convs.getConversation({ conversationId: id }).then((c) => { if (listEl.querySelector(`[data-id="${id}"]`) || !$<HTMLInputElement>("show-archived").checked) upsertItem(c.conversation!); }, () => {});
};
let polling = false;
async function refreshCurrent() {
  const id = currentId;
  if (!me || !id || gen || polling || probe) return;
  polling = true;
  try {
    const c = (await convs.getConversation({ conversationId: id })).conversation!;
    const t = c.updatedAt ? timestampMs(c.updatedAt) : 0;
    if (currentId === id && !gen && (t !== lastSeen || c.generating)) {
      await openConversation(id, true);
      upsertItem(c);
    }
  } catch (err) {
    if (isNetworkError(err)) offline(err);
  } finally { polling = false; }
}
setInterval(() => { if (!document.hidden) refreshCurrent(); }, 4000);
document.addEventListener("visibilitychange", () => { if (!document.hidden) refreshCurrent(); });
/** The active branch, or the branch through leaf (made the active one). */
async function allMessages(id: string, leaf = ""): Promise<ConversationMessage[]> {
  const out: ConversationMessage[] = [];
  let pageToken = "";
  do {
    const r = await convs.listMessages({ conversationId: id, pageSize: 200, pageToken, leafMessageId: leaf, makeCurrent: !!leaf });
    out.push(...r.messages);
    pageToken = r.nextPageToken;
  } while (pageToken);
  return out;
}
/** A message's time, shown on hover. */
function stamp(el: HTMLElement, ms: number) { el.title = when(ms); }
function showStored(m: ConversationMessage) {
  const at = m.createdAt ? timestampMs(m.createdAt) : 0;
  if (m.role === Role.USER) { const el = userView(m.parts, m.messageId); if (at) stamp(el, at); branchControls(el, m); return; }
  if (m.role !== Role.ASSISTANT) return;
  const v = assistantView(m.model, m.messageId);
  if (at) stamp(v.el, at);
  const text = partsText(m.parts);
  const md = v.el.querySelector<HTMLElement>(".md")!;
  md.innerHTML = render(text);
  upgrade(md);
  showCitations(v.el, citationsOf(m.parts));
  sourceOf.set(v.el, () => text);
  note(v, m.finishReason);
  if (m.status === MessageStatus.INTERRUPTED) {
    v.el.querySelector(".actions")!.before(h("div", { class: "note error interrupted" }, t("msg.interrupted")));
  }
  branchControls(v.el, m);
}

// ---------- branches: edit, regenerate, versions ----------
// Messages form a tree: an edit sends the new text under the edited message's
// parent, a regeneration adds a sibling answer; ‹ 2/3 › shows another version
// (its branch becomes the active one).
const msgOf = new WeakMap<HTMLElement, ConversationMessage>();
function branchControls(el: HTMLElement, m: ConversationMessage) {
  msgOf.set(el, m);
  el.dataset.id = m.messageId;
  const bar = el.querySelector(".actions")!;
  bar.querySelector(".versions")?.remove();
  bar.querySelector(".edit-msg, .regen")?.remove();
  if (m.siblingCount > 1) {
    const i = m.siblingIndex;
    bar.prepend(h("span", { class: "versions" },
      h("button", { type: "button", class: "prev-ver", "aria-label": t("msg.prevVersion"), disabled: i === 0 }, "‹"),
      h("span", { class: "ver" }, `${num(i + 1)}/${num(m.siblingCount)}`),
      h("button", { type: "button", class: "next-ver", "aria-label": t("msg.nextVersion"), disabled: i >= m.siblingCount - 1 }, "›")));
  }
  bar.append(m.role === Role.USER
    ? h("button", { type: "button", class: "edit-msg", "aria-label": t("msg.editLabel") }, t("msg.edit"))
    : h("button", { type: "button", class: "regen", "aria-label": t("msg.regenerateLabel") }, t("msg.regenerate")));
  if (m.role === Role.ASSISTANT) {
    bar.querySelector(".rate")?.remove();
    const r = m.feedback?.rating ?? Rating.UNSPECIFIED;
    bar.append(h("span", { class: "rate" },
      h("button", { type: "button", class: "rate-good", "aria-label": t("msg.good"), title: t("msg.good"), "aria-pressed": String(r === Rating.GOOD) }, "👍"),
      h("button", { type: "button", class: "rate-bad", "aria-label": t("msg.bad"), title: t("msg.bad"), "aria-pressed": String(r === Rating.BAD) }, "👎")));
  }
}
/** Thumbs up or down (pressed again: taken back), then an optional note. */
async function rate(el: HTMLElement, good: boolean) {
  const m = msgOf.get(el);
  if (!m || !currentId) return;
  const want = good ? Rating.GOOD : Rating.BAD;
  const rating = m.feedback?.rating === want ? Rating.UNSPECIFIED : want;
  try {
    const r = await convs.rateMessage({ conversationId: currentId, messageId: m.messageId, rating });
    m.feedback = r.feedback;
  } catch (err) { return fail(err); }
  branchControls(el, m);
  el.querySelector(".feedback-note")?.remove();
  if (rating === Rating.UNSPECIFIED) return;
  const note = h("input", { name: "note", maxlength: 2000, placeholder: good ? t("msg.goodPlaceholder") : t("msg.badPlaceholder"), "aria-label": t("msg.feedbackNote") }) as HTMLInputElement;
  const form = h("form", { class: "feedback-note row" }, note, h("button", { class: "primary" }, t("chat.send")),
    h("button", { type: "button", onclick: () => form.remove() }, t("msg.skip"))) as HTMLFormElement;
  form.onsubmit = async (e) => {
    e.preventDefault();
    try {
      const r = await convs.rateMessage({ conversationId: currentId, messageId: m.messageId, rating, note: note.value });
      m.feedback = r.feedback;
      form.replaceWith(h("p", { class: "muted small feedback-thanks", role: "status" }, t("msg.thanks")));
    } catch (err) { fail(err); }
  };
  el.querySelector(".actions")!.after(form);
  note.focus();
}
/** Gives the messages shown without ids (just sent) their stored state and buttons. */
async function settleTail(id: string) {
  try {
    const msgs = (await allMessages(id)).filter((m) => m.role === Role.USER || m.role === Role.ASSISTANT);
    if (currentId !== id || gen) return;
    const els = [...messagesEl.querySelectorAll<HTMLElement>(":scope > .msg")];
    if (els.length !== msgs.length) return void openConversation(id, true);
    els.forEach((el, i) => { if (msgOf.get(el)?.messageId !== msgs[i].messageId || msgs[i].siblingCount > 1) branchControls(el, msgs[i]); });
  } catch { /* the next poll redraws it */ }
}
function dropFrom(el: HTMLElement) {
  while (el.nextElementSibling) el.nextElementSibling.remove();
  el.remove();
}
async function switchVersion(el: HTMLElement, delta: number) {
  const m = msgOf.get(el);
  const target = m?.siblingMessageIds[m.siblingIndex + delta];
  if (!m || !target || gen) return;
  try {
    const msgs = await allMessages(currentId, target);
    messagesEl.textContent = "";
    for (const x of msgs) showStored(x);
    messagesEl.querySelector<HTMLElement>(`.msg[data-id="${target}"]`)?.scrollIntoView({ block: "nearest" });
    messagesEl.querySelector<HTMLElement>(`.msg[data-id="${target}"] .${delta < 0 ? "prev" : "next"}-ver`)?.focus();
  } catch (err) { fail(err); }
}
async function regenerate(el: HTMLElement) {
  const m = msgOf.get(el);
  if (!m || gen) return;
  const convId = currentId;
  dropFrom(el);
  stick = true;
  const g: Gen = { convId, abort: new AbortController(), lastSeq: 0n, pendingCancel: false, finished: false };
  try {
    await drive(g, () => convs.regenerateMessage({ conversationId: convId, messageId: m.messageId, model: modelSel.value, ...requestSettings() }, { signal: g.abort.signal }));
    await settleTail(convId);
  } catch (err) {
    fail(err);
    if (g.lastSeq === 0n) openConversation(convId, true); // refused: show it as it was
  }
}
/** Goes on with an answer that stopped at its length limit, in place. */
async function continueAnswer(el: HTMLElement) {
  const m = msgOf.get(el);
  if (!m || gen) return;
  const convId = currentId;
  const body = el.querySelector<HTMLElement>(".md")!;
  const before = sourceOf.get(el)?.() ?? partsText(m.parts);
  body.textContent = "";
  const md = new StreamingMarkdown(body);
  md.onFlush = () => { if (stick) toBottom(); else showJump(); };
  md.append(before);
  sourceOf.set(el, () => md.text);
  el.querySelector(".note")?.remove();
  el.classList.add("streaming");
  stick = true;
  const g: Gen = { convId, abort: new AbortController(), lastSeq: 0n, pendingCancel: false, finished: false, view: { el, md } };
  try {
    await drive(g, () => convs.continueMessage({ conversationId: convId, messageId: m.messageId, ...requestSettings() }, { signal: g.abort.signal }));
    await settleTail(convId);
  } catch (err) {
    fail(err);
    if (g.lastSeq === 0n) openConversation(convId, true); // refused: show it as it was
  }
}
function edit(el: HTMLElement) {
  const m = msgOf.get(el);
  if (!m || gen) return;
  const bubble = el.querySelector<HTMLElement>(".bubble")!;
  const ta = h("textarea", { class: "edit-input", rows: 3, "aria-label": t("msg.editLabel"), translate: "no" }, partsText(m.parts)) as HTMLTextAreaElement;
  const cancel = () => { form.replaceWith(bubble); el.querySelector<HTMLElement>(".actions")!.hidden = false; };
  const form = h("form", { class: "edit-form" }, ta, h("div", { class: "row" },
    h("button", { class: "primary save-edit" }, t("msg.saveAndSend")), h("button", { type: "button", class: "cancel-edit", onclick: cancel }, t("dlg.cancel")))) as HTMLFormElement;
  bubble.replaceWith(form);
  el.querySelector<HTMLElement>(".actions")!.hidden = true;
  ta.focus();
  ta.onkeydown = (e) => { if (e.key === "Escape") { e.stopPropagation(); cancel(); } };
  form.onsubmit = (e) => {
    e.preventDefault();
    const text = ta.value.trim();
    if (!text) return;
    // Attachments stay; the text is replaced.
    const parts = m.parts.filter((p) => p.kind.case !== "text");
    parts.push({ kind: { case: "text", value: text } } as Part);
    const after = el.previousElementSibling;
    dropFrom(el);
    sendParts(parts, m.parentMessageId, () => openConversation(currentId, true), after);
  };
}

// ---------- generating ----------
function setBusy(busy: boolean) {
  $("send").hidden = busy;
  $("stop").hidden = !busy;
}

async function consume(g: Gen, stream: AsyncIterable<{ event?: GenerationEvent }>) {
  for await (const r of stream) {
    const ev = r.event;
    if (!ev || ev.seq <= g.lastSeq) continue;
    g.lastSeq = ev.seq;
    switch (ev.kind.case) {
      case "started": {
        const s = ev.kind.value;
        if (!g.convId) {
          adoptNewChatSettings(s.conversationId);
          g.convId = s.conversationId;
          currentId = s.conversationId;
          ignoreHash = `#/c/${s.conversationId}`;
          location.hash = ignoreHash;
          convs.getConversation({ conversationId: s.conversationId }).then((c) => upsertItem(c.conversation!), () => {});
        }
        announce(g.convId);
        if (!g.view) g.view = assistantView(s.model, s.messageId);
        g.view.el.classList.add("streaming");
        quiet();
        showUsedMemories(g.view.el, s.memoryIds);
        if (g.pendingCancel) stop();
        break;
      }
      case "delta":
        g.view ??= assistantView("");
        g.view.md.append(ev.kind.value.text);
        speak(g.view.md.text, false);
        break;
      case "finished": {
        const f = ev.kind.value;
        g.finished = true;
        g.view ??= assistantView("");
        g.view.md.finish();
        speak(g.view.md.text, true);
        showCitations(g.view.el, f.citations);
        note(g.view, f.finishReason, f.errorMessage);
        break;
      }
    }
  }
}

/** Runs a stream to its end, resuming with StreamGeneration if the network drops. */
async function drive(g: Gen, first: () => AsyncIterable<{ event?: GenerationEvent }>) {
  gen = g;
  setBusy(true);
  let attempt = 0;
  let next = first;
  try {
    while (true) {
      try {
        await consume(g, next());
        if (g.finished || !g.convId) break;
      } catch (err) {
        if (g.abort.signal.aborted) return;
        const code = ConnectError.from(err).code;
        if (code === Code.NotFound && attempt > 0 && g.convId) {
          // Resuming found no generation: it ended while we were away (or its
          // gateway died: the saved part is stored, marked interrupted). Show
          // what is stored.
          g.finished = true;
          if (gen === g) { gen = undefined; setBusy(false); }
          if (currentId === g.convId) await openConversation(g.convId, true);
          break;
        }
        const transient = isNetworkError(err) || code === Code.Unknown || code === Code.Canceled || code === Code.Internal;
        if (!g.convId || g.lastSeq === 0n || !transient || attempt >= 8) {
          if (g.view) note(g.view, FinishReason.ERROR, describe(err));
          throw err;
        }
        if (isNetworkError(err)) offline(err); // the banner, and its probe that clears it
      }
      if (attempt++ >= 8) break;
      // Back-off: 0.5, 1, 2, 4, then 8 s.
      await new Promise((r) => setTimeout(r, Math.min(8000, 500 * 2 ** (attempt - 1))));
      if (g.abort.signal.aborted) return;
      next = () => convs.streamGeneration({ conversationId: g.convId, afterSeq: g.lastSeq }, { signal: g.abort.signal });
    }
  } finally {
    if (gen === g) { gen = undefined; setBusy(false); }
    showJump();
    if (queued && !gen && g.convId === currentId) setTimeout(flushQueued, 0);
  }
  if (g.convId) {
    announce(g.convId);
    if (messagesEl.querySelectorAll(":scope > .msg").length <= 2) watchTitle(g.convId); // a first exchange
    convs.getConversation({ conversationId: g.convId }).then((c) => {
      upsertItem(c.conversation!);
      if (c.conversation!.conversationId === currentId && !gen) {
        // After a followed answer the next poll redraws the conversation as stored.
        if (!g.followed) lastSeen = c.conversation!.updatedAt ? timestampMs(c.conversation!.updatedAt) : 0;
        document.title = `${c.conversation!.title || t("conv.newChat")} · Parley`;
      }
    }, () => {});
  }
}

// A new chat's title is written by the model after its first answer (the
// server's --auto-titles): look for it a few times, then stop.
function watchTitle(id: string, tries = 6) {
  const item = listEl.querySelector<HTMLElement>(`[data-id="${id}"]`);
  if (item?.querySelector(".generated") || tries <= 0) return;
  setTimeout(async () => {
    try {
      const c = (await convs.getConversation({ conversationId: id })).conversation!;
      if (!c.titleGenerated) return watchTitle(id, tries - 1);
      const li = listEl.querySelector<HTMLElement>(`[data-id="${id}"]`);
      li?.replaceWith(convItem(c));
      markActive();
      if (id === currentId) document.title = `${c.title} · Parley`;
    } catch { /* the next poll shows it */ }
  }, 1000);
}

function follow(id: string) {
  const g: Gen = { convId: id, abort: new AbortController(), lastSeq: 0n, pendingCancel: false, finished: false, followed: true };
  drive(g, () => convs.streamGeneration({ conversationId: id, afterSeq: 0n }, { signal: g.abort.signal })).catch((err) => {
    if (ConnectError.from(err).code !== Code.NotFound) fail(err); // not_found: it just ended
  });
}

// ---------- per-chat model settings ----------
// Temperature and the longest answer, per conversation (a new chat's move to
// it when it starts), kept in this browser and sent with every message.
interface ChatSettings { temperature?: number; maxOutputTokens?: number }
const settingsKey = (id: string) => `parley.chat-settings.${id || "new"}`;
function chatSettings(id = currentId): ChatSettings {
  try { return JSON.parse(localStorage.getItem(settingsKey(id)) ?? "{}"); } catch { return {}; }
}
function requestSettings(): { temperature?: number; maxOutputTokens: bigint } {
  const cs = chatSettings();
  const cap = modelList.find((m) => m.id === modelSel.value)?.maxOutputTokens ?? 0n;
  const max = cs.maxOutputTokens && (!cap || BigInt(cs.maxOutputTokens) <= cap) ? BigInt(cs.maxOutputTokens) : 0n;
  return { temperature: cs.temperature, maxOutputTokens: max };
}
/** A temperature as people read it: 1.0, in German 1,0. */
function oneDecimal(x: number) { return x.toLocaleString(locale(), { minimumFractionDigits: 1, maximumFractionDigits: 1 }); }
function adoptNewChatSettings(id: string) {
  const fresh = localStorage.getItem(settingsKey(""));
  if (fresh) { localStorage.setItem(settingsKey(id), fresh); localStorage.removeItem(settingsKey("")); }
}
$("chat-settings-btn").onclick = () => {
  const d = $<HTMLDialogElement>("chat-settings"), f = $<HTMLFormElement>("chat-settings-form");
  const cs = chatSettings();
  const el = <T extends Element>(n: string) => f.elements.namedItem(n) as unknown as T;
  el<HTMLInputElement>("temp-on").checked = cs.temperature !== undefined;
  el<HTMLInputElement>("temp").value = String(cs.temperature ?? 1);
  el<HTMLOutputElement>("temp-out").value = oneDecimal(Number(el<HTMLInputElement>("temp").value));
  const cap = modelList.find((m) => m.id === modelSel.value)?.maxOutputTokens ?? 0n;
  el<HTMLInputElement>("max").max = cap ? String(cap) : "";
  el<HTMLInputElement>("max").value = cs.maxOutputTokens ? String(cs.maxOutputTokens) : "";
  $("chat-settings-max").textContent = cap ? tp("chatSettings.cap", cap, { model: modelSel.value }) : "";
  el<HTMLInputElement>("temp").oninput = () => { el<HTMLInputElement>("temp-on").checked = true; el<HTMLOutputElement>("temp-out").value = oneDecimal(Number(el<HTMLInputElement>("temp").value)); };
  d.onclose = () => {
    if (d.returnValue !== "save") return;
    const next: ChatSettings = {};
    if (el<HTMLInputElement>("temp-on").checked) next.temperature = Number(el<HTMLInputElement>("temp").value);
    const max = Number(el<HTMLInputElement>("max").value);
    if (max > 0) next.maxOutputTokens = Math.min(max, Number(cap || max));
    localStorage.setItem(settingsKey(currentId), JSON.stringify(next));
    $("chat-settings-btn").classList.toggle("set", next.temperature !== undefined || !!next.maxOutputTokens);
  };
  d.returnValue = "";
  d.showModal();
};

// ---------- a send that waits ----------
// A message sent while an answer is being written in this conversation (in
// this tab, another tab or another device) or while its files upload waits,
// says so, and goes when they end; switching conversations drops the wait.
let queued = false;
function queueSend(why: string) {
  queued = true;
  $("queued-text").textContent = why;
  $("queued").hidden = false;
}
function unqueue() { queued = false; $("queued").hidden = true; }
function flushQueued() {
  if (!queued || gen || pendingUploads.some((p) => !p.id)) return;
  unqueue();
  send();
}
$("unqueue").onclick = () => { unqueue(); input.focus(); };

async function send() {
  const text = input.value.trim();
  if (!text && !pendingUploads.length) return;
  if (gen) return queueSend(t("chat.waitAnswer"));
  if (pendingUploads.some((p) => !p.id)) return queueSend(t("chat.waitUploads"));
  unqueue();
  banner("");
  const parts: Part[] = pendingUploads.map((p) => ({ kind: { case: "attachmentId", value: p.id! } }) as Part);
  if (text) parts.push({ kind: { case: "text", value: text } } as Part);
  const fresh = !currentId;
  const project = fresh ? newChatProject : "";
  if (fresh && newChatPrompt.trim()) {
    // A new chat with a system prompt: made first, so its first answer has it.
    if (creatingChat) return; // a second Send while it is being made
    creatingChat = true;
    try {
      const c = (await convs.createConversation({ model: modelSel.value, systemPrompt: newChatPrompt, projectId: project })).conversation!;
      newChatPrompt = "";
      adoptNewChatSettings(c.conversationId);
      currentId = c.conversationId;
      ignoreHash = `#/c/${currentId}`;
      location.hash = ignoreHash;
      upsertItem(c);
      markActive();
    } catch (err) { return fail(err); } finally { creatingChat = false; }
  }
  if (fresh) {
    messagesEl.textContent = "";
    if (project) { newChatProject = ""; placeholder(); messagesEl.append(projectCrumb(project)); }
  }
  const saved = input.value;
  input.value = "";
  autosize();
  const sentUploads = pendingUploads;
  pendingUploads = [];
  $("pending").textContent = "";
  await sendParts(parts, undefined, () => {
    // Refused: nothing was stored. Put the message back.
    input.value = saved;
    pendingUploads = sentUploads;
    renderPending();
    autosize();
    if (project) openProject(project); // the project's page again
  }, null, project);
}

/** Sends a user message (under parent, or after the active leaf) and streams the answer. */
async function sendParts(parts: Part[], parent: string | undefined, refused: () => void, after: Element | null = null, projectId = "") {
  const mine = userView(parts);
  if (after) after.after(mine);
  stick = true;
  toBottom();
  const g: Gen = { convId: currentId, abort: new AbortController(), lastSeq: 0n, pendingCancel: false, finished: false };
  try {
    await drive(g, () => convs.sendMessage({ conversationId: currentId, model: modelSel.value, parts, parentMessageId: parent, projectId: currentId ? "" : projectId, ...requestSettings() }, { signal: g.abort.signal }));
    if (g.convId) await settleTail(g.convId);
  } catch (err) {
    if (g.lastSeq === 0n) { mine.remove(); refused(); }
    const c = ConnectError.from(err);
    if (g.lastSeq === 0n && c.code === Code.FailedPrecondition && /already running/.test(c.rawMessage) && currentId) {
      // Another tab's (or device's) answer is being written: show it, and
      // send this when it ends.
      queueSend(t("chat.waitOtherTab"));
      follow(currentId);
      return;
    }
    fail(err);
  }
}

async function stop() {
  const g = gen;
  if (!g) return;
  if (!g.convId) { g.pendingCancel = true; return; }
  try { await convs.cancelGeneration({ conversationId: g.convId }); } catch (err) { fail(err); }
}

$<HTMLFormElement>("composer").onsubmit = (e) => { e.preventDefault(); send(); };
$("stop").onclick = stop;
function autosize() {
  input.style.height = "auto";
  input.style.height = Math.min(input.scrollHeight, 200) + "px";
}
input.addEventListener("input", autosize);
// On a touch keyboard Enter inserts a new line; the Send button sends.
const touch = matchMedia("(pointer: coarse)");
const placeholder = () => { input.placeholder = touch.matches ? t("chat.placeholderTouch") : t("chat.placeholder"); };
touch.addEventListener("change", placeholder);
placeholder();
input.addEventListener("keydown", (e) => {
  if (promptKeys(e)) return;
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing && !touch.matches) { e.preventDefault(); send(); }
});

// ---------- saved prompts: / and a name ----------
// Typing / (and the start of a name) in an empty box offers the person's
// saved prompts (Settings); Enter or Tab inserts one, Escape closes.
let savedPrompts: { name: string; text: string }[] | undefined;
let promptPick = 0;
window.addEventListener("parley:prompts", () => { savedPrompts = undefined; });
const promptMenu = $("prompt-menu");
input.setAttribute("aria-controls", "prompt-menu");
input.setAttribute("aria-autocomplete", "list");
async function offerPrompts() {
  if (!/^\/[^\s]*$/.test(input.value)) return closePrompts();
  if (!savedPrompts) {
    try { savedPrompts = (await convs.listSavedPrompts({})).prompts.map((p) => ({ name: p.name, text: p.text })); } catch { savedPrompts = []; }
  }
  // What is typed now: more may have been typed while the list loaded.
  const m = /^\/([^\s]*)$/.exec(input.value);
  if (!m) return closePrompts();
  const q = m[1].toLowerCase();
  const found = savedPrompts.filter((p) => p.name.toLowerCase().startsWith(q)).concat(savedPrompts.filter((p) => !p.name.toLowerCase().startsWith(q) && p.name.toLowerCase().includes(q)));
  if (!found.length) return closePrompts();
  promptPick = Math.min(promptPick, found.length - 1);
  promptMenu.replaceChildren(...found.slice(0, 8).map((p, i) => h("li", { role: "option", id: `prompt-opt-${i}`, translate: "no", "aria-selected": String(i === promptPick), "data-text": p.text,
    onmousedown: (ev: Event) => { ev.preventDefault(); usePrompt(p.text); } }, h("code", {}, `/${p.name}`), " ", h("span", { class: "muted" }, p.text.slice(0, 60)))));
  promptMenu.hidden = false;
  input.setAttribute("aria-activedescendant", `prompt-opt-${promptPick}`);
}
function closePrompts() {
  promptMenu.hidden = true;
  promptPick = 0;
  input.removeAttribute("aria-activedescendant");
}
function usePrompt(text: string) {
  input.value = text;
  closePrompts();
  autosize();
  input.focus();
  input.setSelectionRange(text.length, text.length);
}
/** The / menu's keys; true when it took the key. */
function promptKeys(e: KeyboardEvent): boolean {
  if (promptMenu.hidden) return false;
  const n = promptMenu.children.length;
  if (e.key === "ArrowDown" || e.key === "ArrowUp") {
    e.preventDefault();
    promptPick = (promptPick + (e.key === "ArrowDown" ? 1 : n - 1)) % n;
    void offerPrompts();
    return true;
  }
  if ((e.key === "Enter" && !e.shiftKey) || e.key === "Tab") {
    e.preventDefault();
    usePrompt((promptMenu.children[promptPick] as HTMLElement).dataset.text ?? "");
    return true;
  }
  if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); closePrompts(); return true; }
  return false;
}
input.addEventListener("input", () => { void offerPrompts(); });
input.addEventListener("blur", () => setTimeout(closePrompts, 100));
$("attach").onclick = () => $("file").click();
// Shortcuts (the ? overlay lists them), as ChatGPT's where it has one.
document.addEventListener("keydown", (e) => {
  if (!me || $("main").hidden) return;
  const mod = e.ctrlKey || e.metaKey, key = e.key.toLowerCase();
  const typing = e.target instanceof HTMLInputElement || e.target instanceof HTMLTextAreaElement || e.target instanceof HTMLSelectElement;
  const open = document.querySelector("dialog[open]");
  if (e.key === "Escape" && e.shiftKey) { e.preventDefault(); input.focus(); return; }
  if (e.key === "Escape" && gen && !open) { e.preventDefault(); stop(); return; }
  if (mod && e.shiftKey && key === "o") { e.preventDefault(); location.hash = "#/"; input.focus(); return; }
  if (mod && !e.shiftKey && key === "k") { e.preventDefault(); $("sidebar").classList.add("open"); $("search").focus(); return; }
  if (mod && e.shiftKey && key === "c") {
    const last = [...messagesEl.querySelectorAll<HTMLElement>(".msg.assistant")].pop();
    if (last) { e.preventDefault(); navigator.clipboard?.writeText(sourceOf.get(last)?.() ?? ""); banner(t("banner.copiedLast")); }
    return;
  }
  if ((mod && e.key === "/") || (e.key === "?" && !typing && !open)) { e.preventDefault(); $<HTMLDialogElement>("shortcuts").showModal(); }
});
$("menu").onclick = () => $("sidebar").classList.toggle("open");
$("scrim").onclick = () => $("sidebar").classList.remove("open");

// ---------- attachments ----------
interface Pending { name: string; id?: string; bar: HTMLProgressElement; el: HTMLElement; }
let pendingUploads: Pending[] = [];
function renderPending() { $("pending").replaceChildren(...pendingUploads.map((p) => p.el)); }
async function addFiles(files: FileList | File[]) {
  for (const file of Array.from(files)) {
    const why = refusedFile(file);
    if (why) { banner(why); continue; }
    const bar = h("progress", { max: 1, value: 0 }) as HTMLProgressElement;
    const p: Pending = { name: file.name, bar, el: h("span", { class: "chip upload", translate: "no" }) };
    p.el.append(file.name, bar, h("button", { type: "button", class: "link", "aria-label": t("chat.removeFile"), onclick: () => { pendingUploads = pendingUploads.filter((x) => x !== p); renderPending(); } }, "×"));
    pendingUploads.push(p);
    renderPending();
    try {
      const r = await upload(file, (f) => { bar.value = f; });
      p.id = r.id;
      p.el.classList.add("ready");
    } catch (err) {
      pendingUploads = pendingUploads.filter((x) => x !== p);
      renderPending();
      banner(uploadError(file, err));
    }
    if (queued) flushQueued();
  }
}
$<HTMLInputElement>("file").onchange = (e) => { const t = e.target as HTMLInputElement; if (t.files) addFiles(t.files); t.value = ""; };
$("chat").addEventListener("dragover", (e) => { e.preventDefault(); $("chat").classList.add("drop"); });
$("chat").addEventListener("dragleave", () => $("chat").classList.remove("drop"));
$("chat").addEventListener("drop", (e) => {
  e.preventDefault();
  $("chat").classList.remove("drop");
  if (e.dataTransfer?.files.length) addFiles(e.dataTransfer.files);
});
// Pasted images and files attach as if picked (text pastes as text).
input.addEventListener("paste", (e) => {
  const files = e.clipboardData?.files;
  if (files?.length) { e.preventDefault(); addFiles(files); }
});

// ---------- limits ----------
$("limits-btn").onclick = async () => {
  const body = $("limits-body");
  body.textContent = t("main.loading");
  ($("limits") as HTMLDialogElement).showModal();
  try {
    const r = await billing.getLimits({ model: modelSel.value });
    body.replaceChildren(h("p", { class: "muted" }, t("limitsDialog.tier", { tier: tierName(r.tier), model: modelSel.value })), limitRows(r.limits));
  } catch (err) { body.textContent = describe(err); }
};

// ---------- API keys ----------
async function showKeys() {
  $("keys-error").textContent = "";
  try {
    const r = await keys.listApiKeys({ pageSize: 200 });
    const now = Date.now();
    $("key-rows").replaceChildren(...r.apiKeys.map((k) => {
      const revoked = !!k.revokedAt;
      const expired = k.expiresAt && timestampMs(k.expiresAt) < now;
      const status = revoked ? "revoked" : expired ? "expired" : ""; // a class, and shown in words
      return h("tr", { "data-id": k.keyId, class: status },
        h("td", { translate: "no" }, k.name), h("td", { translate: "no" }, h("code", {}, `${k.prefix}…`)),
        h("td", {}, k.createdAt ? timeEl(timestampMs(k.createdAt)) : ""),
        h("td", {}, k.expiresAt ? timeEl(timestampMs(k.expiresAt)) : ""),
        k.lastUsedAt ? h("td", {}, timeEl(timestampMs(k.lastUsedAt))) : h("td", {}, t("keys.never")),
        h("td", {}, cacheModeName()[k.responseCache] ?? t("keys.cacheDefault")),
        h("td", {}, status ? h("span", { class: "muted status" }, revoked ? t("keys.revoked") : t("keys.expired")) : h("button", { type: "button", class: "revoke danger", onclick: () => revoke(k.keyId, k.name) }, t("keys.revoke"))));
    }));
  } catch (err) { $("keys-error").textContent = describe(err); }
}
const cacheModeName = (): Record<number, string> => ({ [ResponseCacheMode.ON]: t("keys.cacheOn"), [ResponseCacheMode.OFF]: t("keys.cacheOff") });
async function revoke(id: string, name: string) {
  if (!confirm(t("keys.revokeConfirm", { name }))) return;
  try { await keys.revokeApiKey({ keyId: id }); } catch (err) { $("keys-error").textContent = describe(err); }
  showKeys();
}
$<HTMLFormElement>("key-form").onsubmit = async (e) => {
  e.preventDefault();
  const form = e.target as HTMLFormElement;
  const f = new FormData(form);
  const days = Math.min(30, Math.max(1, Number(f.get("days")) || 30));
  try {
    const responseCache = f.get("cache") === "on" ? ResponseCacheMode.ON : f.get("cache") === "off" ? ResponseCacheMode.OFF : ResponseCacheMode.UNSPECIFIED;
    const r = await keys.createApiKey({ name: String(f.get("name")), ttl: { seconds: BigInt(days * 86400) }, responseCache });
    $("secret-value").textContent = r.secret;
    $("key-secret").hidden = false;
    form.reset();
    showKeys();
  } catch (err) { $("keys-error").textContent = describe(err); }
};
$("copy-secret").onclick = async () => {
  try {
    await navigator.clipboard.writeText($("secret-value").textContent ?? "");
    $("copy-secret").textContent = t("msg.copied");
  } catch {
    getSelection()?.selectAllChildren($("secret-value")); // select it for a manual copy
  }
};

// ---------- rendering hooks (used by the end-to-end tests) ----------
// parleyStream feeds Markdown, `chunk` characters per 4 ms tick, through the
// same renderer as a live answer; parleyBench feeds n synthetic tokens.
function streamInto(next: () => string | undefined): Promise<HTMLElement> {
  return new Promise((done) => {
    const v = assistantView("bench");
    v.el.classList.add("streaming");
    const t = setInterval(() => {
      const s = next();
      if (s === undefined) { clearInterval(t); v.md.finish(); v.el.classList.remove("streaming"); done(v.el); return; }
      v.md.append(s);
    }, 4);
  });
}
(window as unknown as Record<string, unknown>).parleyStream = (text: string, chunk = 3) => {
  let i = 0;
  return streamInto(() => (i >= text.length ? undefined : text.slice(i, (i += chunk))));
};
(window as unknown as Record<string, unknown>).parleyBench = async (n: number, perTick: number) => {
  const words = ["the", "rabbit", "`hole`", "**very**", "deep", "well,", "and", "_Alice_", "fell."];
  let i = 0;
  await streamInto(() => {
    if (i >= n) return undefined;
    let out = "";
    for (let k = 0; k < perTick && i < n; k++, i++) {
      let tok = " " + words[i % words.length];
      if (i % 120 === 119) tok += "\n\n";
      if (i % 600 === 300) tok += "\n\n```go\nfunc main() {\n";
      if (i % 600 > 300 && i % 600 < 400 && i % 10 === 0) tok += "\n";
      if (i % 600 === 400) tok += "\n}\n```\n\n";
      if (i % 600 === 450) tok += "\n\n- a list item\n- another";
      out += tok;
    }
    return out;
  });
};

// A refusal as the server sends it (limit state plus retry time), shown as the
// banner shows it: for the end-to-end test of the banner's wording.
(window as unknown as Record<string, unknown>).parleyLimitBanner = (retryMs: number, resetsMs: number) => {
  const ts = (ms: number) => timestampFromMs(Date.now() + ms);
  fail(new ConnectError("tier limit reached", Code.ResourceExhausted, undefined, [
    { desc: RetryInfoSchema, value: { retryDelay: { seconds: BigInt(Math.round(retryMs / 1000)), nanos: 0 } } },
    { desc: LimitExceededSchema, value: { limit: { model: "sim-small", kind: LimitKind.OUTPUT_TOKENS, limit: 40000n, used: 40000n, resetsAt: ts(resetsMs), nextRequestAt: ts(retryMs) } } },
  ]));
  return $("banner-text").textContent;
};

// ---------- start ----------
// Code colouring is fetched in an idle moment, not in the middle of an answer.
(window.requestIdleCallback ?? ((f: () => void) => setTimeout(f, 1500)))(() => preloadHighlight());
const shared = /^\/share\/([^/]+)$/.exec(location.pathname);
if (shared) {
  showShared(decodeURIComponent(shared[1]));
} else {
  boot();
}
// Started without a network (the service worker keeps the shell): an
// offline screen until the server answers, then the app as usual.
function boot() {
  auth.getMe({}).then((r) => { $("offline-screen").hidden = true; start(r.user!); }, (err) => {
    if (isNetworkError(err)) {
      $("offline-screen").hidden = false;
      const again = () => { window.removeEventListener("online", again); clearTimeout(timer); boot(); };
      const timer = setTimeout(again, 5000);
      window.addEventListener("online", again);
      return;
    }
    $("offline-screen").hidden = true;
    if (ConnectError.from(err).code !== Code.Unauthenticated) $("auth-error").textContent = describe(err);
    showAuth();
  });
}
// Installable, and starts offline: the service worker keeps the shell.
if ("serviceWorker" in navigator) {
  window.addEventListener("load", () => navigator.serviceWorker.register("/sw.js").catch(() => { /* no offline start, no harm */ }));
}
