// The app's pages besides the chat: usage and money, settings, admin, loaded
// on first use. Each shows its own errors in its own error line (page-scoped
// by construction).
import { billing, convs, describe, tierName, timestampMs, transport, Tier } from "./api";
import { createClient } from "@connectrpc/connect";
import { limitRows } from "./limits";
import { BatchService, BatchStatus, type Batch } from "../../ts/src/gen/parley/v1/batch_pb";
import { UsageGroupBy, type UsageBucket } from "../../ts/src/gen/parley/v1/billing_pb";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { AdminService, WorkerState, type AdminUser, type Invitation } from "../../ts/src/gen/parley/v1/admin_pb";
import { Rating } from "../../ts/src/gen/parley/v1/conversation_pb";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { $, h, timeEl, usd, when } from "./dom";
import { barChart } from "./chart";
import { memorySection } from "./memory";
import { languages, num, storedLanguage, storeLanguage, t, tp, type MessageId } from "./i18n";

// These pages' clients (their services' descriptors) load with them, not with the chat.
const admin = createClient(AdminService, transport);
const batches = createClient(BatchService, transport);

const errorLine = () => h("p", { class: "error", role: "alert" });

/** The last n local days, "YYYY-MM-DD", oldest first. */
export function lastDays(n: number): string[] {
  const out: string[] = [];
  const d = new Date();
  d.setHours(12, 0, 0, 0);
  for (let i = n - 1; i >= 0; i--) {
    const x = new Date(d.getTime() - i * 86400_000);
    out.push(`${x.getFullYear()}-${String(x.getMonth() + 1).padStart(2, "0")}-${String(x.getDate()).padStart(2, "0")}`);
  }
  return out;
}

/** Spend and tokens per day and per model, from the server's per-day, per-model buckets. */
export function usageCharts(buckets: UsageBucket[], days: string[]): HTMLElement {
  const models = [...new Set(buckets.map((b) => b.model))].sort();
  const spend = models.map((m) => ({ name: m, values: days.map(() => 0) }));
  const tokens = models.map((m) => ({ name: m, values: days.map(() => 0) }));
  const perModel = new Map<string, { n: number; cost: number; inTok: number; outTok: number }>();
  for (const b of buckets) {
    const i = days.indexOf(b.day), k = models.indexOf(b.model);
    const inTok = Number(b.promptTokens), outTok = Number(b.completionTokens);
    if (i >= 0) {
      spend[k].values[i] += Number(b.costNanos);
      tokens[k].values[i] += inTok + outTok;
    }
    const pm = perModel.get(b.model) ?? { n: 0, cost: 0, inTok: 0, outTok: 0 };
    pm.n += Number(b.requests); pm.cost += Number(b.costNanos); pm.inTok += inTok; pm.outTok += outTok;
    perModel.set(b.model, pm);
  }
  return h("div", { class: "charts" },
    spend.some((sr) => sr.values.some((v) => v > 0))
      ? barChart(t("usage.spendDays", { n: num(days.length) }), days, spend, (v) => usd(v))
      : h("p", { class: "muted no-spend" }, t("usage.noSpend", { n: num(days.length) })),
    barChart(t("usage.tokenDays", { n: num(days.length) }), days, tokens, (v) => v >= 1000 ? t("usage.thousands", { n: num(Math.round(v / 100) / 10) }) : num(Math.round(v))),
    h("div", { class: "table" }, h("table", { class: "per-model" },
      h("thead", {}, h("tr", {}, h("th", {}, t("usage.model")), h("th", {}, t("usage.requests")), h("th", {}, t("usage.inputTokens")), h("th", {}, t("usage.outputTokens")), h("th", {}, t("usage.spend")))),
      h("tbody", {}, ...[...perModel].map(([m, v]) => h("tr", {}, h("td", { translate: "no" }, m), h("td", {}, num(v.n)), h("td", {}, num(v.inTok)), h("td", {}, num(v.outTok)), h("td", {}, usd(v.cost))))))));
}

export async function showUsage(model: string) {
  const page = $("usage-page");
  const err = errorLine();
  const balance = h("div", { class: "stat", id: "balance" }, "…");
  const limits = h("div", { id: "usage-limits" }, t("pages.loading"));
  const charts = h("div", { id: "usage-charts" }, t("pages.loading"));
  const batchList = h("div", { id: "usage-batches" }, t("pages.loading"));
  page.replaceChildren(h("h2", {}, t("usage.title")), err,
    h("section", {}, h("h3", {}, t("usage.balance")), balance,
      h("p", { class: "muted" }, t("usage.balanceNote"))),
    h("section", {}, h("h3", {}, t("usage.allowances"), " · ", h("span", { translate: "no" }, model)), limits),
    h("section", {}, h("h3", {}, t("usage.spendAndTokens")), charts),
    h("section", {}, h("h3", {}, t("usage.batches")),
      h("p", { class: "muted" }, t("usage.batchesNote")), batchList));
  const days = lastDays(14);
  const start = new Date(); start.setHours(0, 0, 0, 0); start.setDate(start.getDate() - 13);
  batches.listBatches({ pageSize: 20 }).then((r) => batchList.replaceChildren(r.batches.length
    ? batchTable(r.batches, () => "")
    : h("p", { class: "muted" }, t("usage.noBatches")))).catch((e) => { batchList.textContent = "—"; err.textContent = describe(e); });
  const [b, l, u] = await Promise.allSettled([
    billing.getBalance({}),
    billing.getLimits({ model }),
    billing.getUsageSummary({ startTime: timestampFromMs(start.getTime()), groupBy: UsageGroupBy.DAY_AND_MODEL, utcOffsetMinutes: -new Date().getTimezoneOffset() }),
  ]);
  if (b.status === "fulfilled") {
    balance.replaceChildren(h("strong", {}, usd(b.value.balanceNanos)),
      b.value.reservedNanos ? h("span", { class: "muted" }, ` ${t("usage.held", { amount: usd(b.value.reservedNanos) })}`) : "");
  } else { balance.textContent = "—"; err.textContent = describe(b.reason); }
  if (l.status === "fulfilled") limits.replaceChildren(h("p", { class: "muted" }, t("usage.tier", { tier: tierName(l.value.tier) })), limitRows(l.value.limits));
  else { limits.textContent = "—"; err.textContent = describe(l.reason); }
  if (u.status === "fulfilled") charts.replaceChildren(u.value.buckets.length ? usageCharts(u.value.buckets, days) : h("p", { class: "muted" }, t("usage.noUsage", { n: num(days.length) })));
  else { charts.textContent = "—"; err.textContent = describe(u.reason); }
}

const batchStates: Record<BatchStatus, MessageId> = {
  [BatchStatus.UNSPECIFIED]: "batches.state.unspecified",
  [BatchStatus.VALIDATING]: "batches.state.validating",
  [BatchStatus.IN_PROGRESS]: "batches.state.inProgress",
  [BatchStatus.FINALIZING]: "batches.state.finalizing",
  [BatchStatus.COMPLETED]: "batches.state.completed",
  [BatchStatus.FAILED]: "batches.state.failed",
  [BatchStatus.EXPIRED]: "batches.state.expired",
  [BatchStatus.CANCELLING]: "batches.state.cancelling",
  [BatchStatus.CANCELLED]: "batches.state.cancelled",
};

/** A batch's status as people read it. */
function batchState(b: Batch): string {
  const id = batchStates[b.status];
  return id ? t(id) : "?";
}

/** A table of batches: when, endpoint, status, progress, cost; owner gives an owner column's text ("" for none), action a last cell. */
export function batchTable(list: Batch[], owner: (b: Batch) => string, action?: (b: Batch) => HTMLElement | string): HTMLElement {
  const withOwner = list.some((b) => owner(b) !== "");
  return h("div", { class: "table" }, h("table", { class: "batches" },
    h("thead", {}, h("tr", {}, h("th", {}, t("batches.created")), ...(withOwner ? [h("th", {}, t("batches.owner"))] : []), h("th", {}, t("batches.endpoint")),
      h("th", {}, t("batches.status")), h("th", {}, t("batches.progress")), h("th", {}, t("batches.cost")), ...(action ? [h("th", {})] : []))),
    h("tbody", {}, ...list.map((b) => {
      const c = b.requestCounts;
      return h("tr", { "data-batch": b.id },
        h("td", {}, b.createdAt ? timeEl(timestampMs(b.createdAt)) : ""),
        ...(withOwner ? [h("td", { class: "email", translate: "no" }, owner(b))] : []),
        h("td", {}, h("code", { translate: "no" }, b.endpoint)),
        h("td", { class: "state" }, batchState(b)),
        h("td", { class: "progress" }, c ? `${num(c.completed + c.failed)} / ${num(c.total)}${c.failed ? ` ${tp("batches.failed", c.failed)}` : ""}` : ""),
        h("td", {}, usd(b.costNanos)),
        ...(action ? [h("td", {}, action(b))] : []));
    }))));
}

export async function showSettings() {
  const page = $("settings-page");
  const err = errorLine();
  const ta = h("textarea", { id: "instructions", rows: 8, maxlength: 8000, placeholder: t("settings.instructionsPlaceholder") }) as HTMLTextAreaElement;
  const saved = h("span", { class: "muted", id: "instructions-saved", role: "status" });
  const form = h("form", { id: "instructions-form" },
    h("label", { for: "instructions" }, h("h3", {}, t("settings.instructions"))),
    h("p", { class: "muted" }, t("settings.instructionsNote")),
    ta, h("div", { class: "row" }, h("button", { class: "primary" }, t("settings.save")), saved)) as HTMLFormElement;
  page.replaceChildren(h("h2", {}, t("settings.title")), err, languageSection(), form, promptsSection(err), memorySection());
  form.onsubmit = async (e) => {
    e.preventDefault();
    err.textContent = "";
    try {
      const r = await convs.setCustomInstructions({ instructions: ta.value });
      ta.value = r.instructions;
      saved.textContent = t("settings.saved");
    } catch (e2) { err.textContent = describe(e2); }
  };
  try { ta.value = (await convs.getCustomInstructions({})).instructions; } catch (e) { err.textContent = describe(e); }
}

/** The app's language: the browser's (the default) or one chosen here; a change reloads the page. */
function languageSection(): HTMLElement {
  const stored = storedLanguage();
  const pick = h("select", { id: "language" },
    h("option", { value: "", selected: stored === "" }, t("settings.browserDefault")),
    ...Object.entries(languages).map(([code, name]) =>
      h("option", { value: code, lang: code, translate: "no", selected: stored === code }, name))) as HTMLSelectElement;
  pick.onchange = () => {
    storeLanguage(pick.value);
    location.reload();
  };
  return h("section", { id: "language-section" },
    h("label", { for: "language" }, h("h3", {}, t("settings.language"))),
    pick,
    h("p", { class: "muted" }, t("settings.languageNote")));
}

/** The prompt library: type / and a name in the message box to insert one. */
function promptsSection(err: HTMLElement): HTMLElement {
  const list = h("div", { id: "prompt-list" }, t("pages.loading"));
  const name = h("input", { name: "name", required: true, maxlength: 64, pattern: "[\\p{L}\\p{N}_\\-]+", placeholder: t("settings.promptNamePlaceholder"), "aria-label": t("settings.promptName") }) as HTMLInputElement;
  const text = h("textarea", { name: "text", required: true, maxlength: 8000, rows: 3, placeholder: t("settings.promptTextPlaceholder"), "aria-label": t("settings.promptText") }) as HTMLTextAreaElement;
  let editing = "";
  const submit = h("button", { class: "primary" }, t("settings.savePrompt")) as HTMLButtonElement;
  const form = h("form", { id: "prompt-form" }, h("div", { class: "row" }, name, submit), text) as HTMLFormElement;
  const load = async () => {
    const r = await convs.listSavedPrompts({});
    list.replaceChildren(r.prompts.length ? h("ul", { class: "prompt-list" }, ...r.prompts.map((p) => h("li", { "data-name": p.name },
      h("code", { translate: "no" }, `/${p.name}`), " ", h("span", { class: "muted", translate: "no" }, p.text.length > 80 ? p.text.slice(0, 79) + "…" : p.text), " ",
      h("button", { type: "button", class: "link", onclick: () => { editing = p.promptId; name.value = p.name; text.value = p.text; submit.textContent = t("settings.saveChanges"); name.focus(); } }, t("settings.edit")),
      h("button", { type: "button", class: "link danger", onclick: async () => {
        try { await convs.deleteSavedPrompt({ promptId: p.promptId }); window.dispatchEvent(new Event("parley:prompts")); await load(); } catch (e) { err.textContent = describe(e); }
      } }, t("settings.delete"))))) : h("p", { class: "muted" }, t("settings.noPrompts")));
  };
  form.onsubmit = async (e) => {
    e.preventDefault();
    err.textContent = "";
    try {
      await convs.savePrompt({ promptId: editing, name: name.value.trim(), text: text.value });
      editing = ""; form.reset(); submit.textContent = t("settings.savePrompt");
      window.dispatchEvent(new Event("parley:prompts")); // the message box's / menu reads them again
      await load();
    } catch (e2) { err.textContent = describe(e2); }
  };
  load().catch((e) => { list.textContent = "—"; err.textContent = describe(e); });
  return h("section", { id: "prompts" }, h("h3", {}, t("settings.prompts")),
    h("p", { class: "muted" }, t("settings.promptsNote")), form, list);
}

const tiers = [Tier.FREE, Tier.PLUS, Tier.PRO, Tier.MAX];
const workerStates: Record<WorkerState, MessageId> = {
  [WorkerState.UNSPECIFIED]: "admin.workerState.unspecified",
  [WorkerState.READY]: "admin.workerState.ready",
  [WorkerState.EJECTED]: "admin.workerState.ejected",
  [WorkerState.CONNECTING]: "admin.workerState.connecting",
  [WorkerState.DRAINING]: "admin.workerState.draining",
};
/** The admin page: users (search by email, tier, admin flag, balance top-ups with a reason), sign-up invitations, workers, recent usage. */
export async function showAdmin() {
  const page = $("admin-page");
  const err = errorLine();
  const ok = h("p", { class: "ok", role: "status" });
  const search = h("input", { id: "user-search", type: "search", placeholder: t("admin.searchPlaceholder"), "aria-label": t("admin.searchLabel") }) as HTMLInputElement;
  const users = h("div", { id: "admin-users" }, t("pages.loading"));
  const workers = h("div", { id: "admin-workers" }, t("pages.loading"));
  const usage = h("div", { id: "admin-usage" }, t("pages.loading"));
  const invites = h("div", { id: "admin-invites" }, t("pages.loading"));
  const openBatches = h("div", { id: "admin-batches" }, t("pages.loading"));
  const feedback = h("div", { id: "admin-feedback" }, t("pages.loading"));
  const inviteForm = h("form", { id: "invite-form", class: "row" },
    h("label", {}, t("admin.accounts"), " ", h("input", { name: "uses", type: "number", min: 1, max: 10000, value: 1, required: true })),
    h("label", {}, t("admin.expiresIn"), " ", h("input", { name: "days", type: "number", min: 1, max: 365, value: 7, required: true }), " ", t("admin.days")),
    h("input", { name: "note", maxlength: 200, placeholder: t("admin.notePlaceholder"), "aria-label": t("admin.note") }),
    h("button", { class: "primary" }, t("admin.createInvitation"))) as HTMLFormElement;
  const inviteCode = h("div", { id: "invite-code", class: "secret", hidden: true });
  page.replaceChildren(h("h2", {}, t("admin.title")), err, ok,
    h("section", {}, h("h3", {}, t("admin.users")), search, users),
    h("section", {}, h("h3", {}, t("admin.invitations")),
      h("p", { class: "muted" }, t("admin.invitationsNote")),
      inviteForm, inviteCode, invites),
    h("section", {}, h("h3", {}, t("admin.workers")), workers),
    h("section", {}, h("h3", {}, t("admin.runningBatches")), openBatches),
    h("section", {}, h("h3", {}, t("admin.feedback")), feedback),
    h("section", {}, h("h3", {}, t("admin.recentUsage")), usage));
  admin.getFeedbackSummary({}).then((r) => feedback.replaceChildren(r.models.length ? h("div", {},
    h("div", { class: "table" }, h("table", { class: "feedback-counts" },
      h("thead", {}, h("tr", {}, h("th", {}, t("admin.model")), h("th", {}, "👍"), h("th", {}, "👎"), h("th", {}, t("admin.good")))),
      h("tbody", {}, ...r.models.map((m) => h("tr", {}, h("td", { translate: "no" }, m.model), h("td", {}, num(m.good)), h("td", {}, num(m.bad)),
        h("td", {}, t("admin.percent", { n: num(Math.round(Number(m.good) * 100 / Math.max(1, Number(m.good + m.bad)))) }))))))),
    r.notes.length ? h("ul", { class: "feedback-notes" }, ...r.notes.map((n) => h("li", {},
      `${n.rating === Rating.GOOD ? "👍" : "👎"} `, h("span", { translate: "no" }, n.model), ": ", h("q", { translate: "no" }, n.note),
      h("span", { class: "muted" }, ` · ${n.updateTime ? when(timestampMs(n.updateTime)) : ""}`)))) : "")
    : h("p", { class: "muted" }, t("admin.noFeedback"))),
    (e) => { feedback.textContent = "—"; err.textContent = describe(e); });
  const act = async (fn: () => Promise<string>) => {
    err.textContent = ""; ok.textContent = "";
    try { ok.textContent = await fn(); } catch (e) { err.textContent = describe(e); }
  };
  let seq = 0;
  const loadUsers = async () => {
    const my = ++seq;
    try {
      const r = await admin.searchUsers({ emailPrefix: search.value.trim(), pageSize: 50 });
      if (my !== seq) return;
      users.replaceChildren(r.users.length ? h("div", { class: "table" }, h("table", {},
        h("thead", {}, h("tr", {}, h("th", {}, t("admin.user")), h("th", {}, t("admin.tier")), h("th", {}, t("admin.admin")), h("th", {}, t("admin.balance")), h("th", {}, t("admin.topUp")), h("th", {}))),
        h("tbody", {}, ...r.users.map((au) => userRow(au))))) : h("p", { class: "muted" }, t("admin.noUsers")));
    } catch (e) { users.textContent = "—"; err.textContent = describe(e); }
  };
  const userRow = (au: AdminUser) => {
    const u = au.user!;
    const tier = h("select", { class: "tier", "aria-label": t("admin.tierOf", { email: u.email }) }, ...tiers.map((tr) => h("option", { value: tr, selected: tr === u.tier }, tierName(tr)))) as HTMLSelectElement;
    tier.onchange = () => act(async () => {
      const r = await admin.setUserTier({ userId: u.userId, tier: Number(tier.value) as Tier });
      return t("admin.tierSet", { email: r.user!.email, tier: tierName(r.user!.tier) });
    });
    const adm = h("input", { type: "checkbox", class: "admin-flag", checked: u.admin, "aria-label": t("admin.isAdminLabel", { email: u.email }) }) as HTMLInputElement;
    adm.onchange = () => act(async () => {
      const r = await admin.setUserAdmin({ userId: u.userId, admin: adm.checked });
      return t(r.user!.admin ? "admin.nowAdmin" : "admin.noLongerAdmin", { email: r.user!.email });
    });
    const bal = h("td", { class: "balance" }, usd(au.balanceNanos));
    const amount = h("input", { type: "number", step: "0.01", required: true, class: "amount", placeholder: "5.00", "aria-label": t("admin.amountFor", { email: u.email }) }) as HTMLInputElement;
    const reason = h("input", { required: true, maxlength: 500, class: "reason", placeholder: t("admin.reasonPlaceholder"), "aria-label": t("admin.reasonFor", { email: u.email }) }) as HTMLInputElement;
    const topup = h("form", { class: "row topup" }, amount, reason, h("button", { class: "primary" }, t("admin.apply"))) as HTMLFormElement;
    topup.onsubmit = (e) => {
      e.preventDefault();
      act(async () => {
        const r = await admin.adjustBalance({ userId: u.userId, deltaNanos: BigInt(Math.round(Number(amount.value) * 1e9)), reason: reason.value });
        bal.textContent = usd(r.balanceNanos);
        topup.reset();
        return t("admin.balanceSet", { email: u.email, amount: usd(r.balanceNanos) });
      });
    };
    return h("tr", { "data-email": u.email },
      h("td", { translate: "no" }, h("div", {}, u.email), h("div", { class: "muted" }, u.displayName)),
      h("td", {}, tier), h("td", {}, adm), bal, h("td", {}, topup),
      h("td", {}, h("button", { type: "button", class: "show-usage", onclick: () => showUserUsage(u.userId, u.email) }, t("admin.usage"))));
  };
  let usageSeq = 0; // the latest usage view asked for; a slower earlier one is dropped
  /** Every user's requests, newest first, a page at a time (More appends the next). */
  const showRecentUsage = async () => {
    const my = ++usageSeq;
    usage.textContent = t("pages.loading");
    const body = h("tbody", {});
    const more = h("button", { type: "button", class: "link", id: "recent-more", hidden: true }, t("admin.more")) as HTMLButtonElement;
    let token = "";
    const page = async () => {
      more.disabled = true;
      try {
        const r = await admin.listUsage({ pageSize: 50, pageToken: token });
        if (my !== usageSeq) return;
        if (!body.children.length && !r.usageRecords.length) { usage.replaceChildren(h("p", { class: "muted" }, t("admin.noUsageYet"))); return; }
        body.append(...r.usageRecords.map((x) => h("tr", {},
          h("td", {}, x.createdAt ? timeEl(timestampMs(x.createdAt)) : ""),
          h("td", { class: "email" }, r.userEmails[x.userId] !== undefined ? h("span", { translate: "no" }, r.userEmails[x.userId]) : h("span", { class: "muted" }, t("admin.deletedAccount"))),
          h("td", { translate: "no" }, x.model),
          h("td", {}, `${x.usage?.promptTokens ?? 0n} / ${x.usage?.completionTokens ?? 0n}`),
          h("td", {}, usd(x.costNanos)))));
        token = r.nextPageToken;
        more.hidden = !token;
      } catch (e) { err.textContent = describe(e); }
      more.disabled = false;
    };
    more.onclick = page;
    usage.replaceChildren(h("p", { class: "muted" }, t("admin.recentNote")),
      h("div", { class: "table" }, h("table", { class: "recent-usage" },
        h("thead", {}, h("tr", {}, h("th", {}, t("admin.when")), h("th", {}, t("admin.user")), h("th", {}, t("admin.model")), h("th", {}, t("admin.tokensInOut")), h("th", {}, t("admin.cost")))),
        body)), more);
    await page();
  };
  const showUserUsage = async (userId: string, email: string) => {
    const my = ++usageSeq;
    usage.textContent = t("pages.loading");
    try {
      const [r, a] = await Promise.all([admin.listUsage({ userId, pageSize: 50 }), admin.listAuditEvents({ userId, pageSize: 20 })]);
      if (my !== usageSeq) return;
      usage.replaceChildren(h("div", { class: "row" }, h("button", { type: "button", class: "link", id: "all-usage", onclick: showRecentUsage }, t("admin.everyUser")), h("span", { class: "muted", translate: "no" }, email)),
        r.usageRecords.length ? h("div", { class: "table" }, h("table", { class: "usage-rows" },
          h("thead", {}, h("tr", {}, h("th", {}, t("admin.when")), h("th", {}, t("admin.model")), h("th", {}, t("admin.tokensInOut")), h("th", {}, t("admin.cost")), h("th", {}, t("admin.endUser")))),
          h("tbody", {}, ...r.usageRecords.map((x) => h("tr", {},
            h("td", {}, x.createdAt ? timeEl(timestampMs(x.createdAt)) : ""), h("td", { translate: "no" }, x.model),
            h("td", {}, `${x.usage?.promptTokens ?? 0n} / ${x.usage?.completionTokens ?? 0n}`),
            h("td", {}, usd(x.costNanos)), h("td", { translate: "no" }, x.user)))))) : h("p", { class: "muted" }, t("admin.noUsage")),
        h("h4", {}, t("admin.auditLog")),
        a.events.length ? h("ul", { class: "audit" }, ...a.events.map((ev) => h("li", { translate: "no" },
          `${ev.at ? when(timestampMs(ev.at)) : ""} · ${ev.kind}${ev.detail ? ` · ${ev.detail}` : ""}`))) : h("p", { class: "muted" }, t("admin.noEvents")));
    } catch (e) { usage.textContent = "—"; err.textContent = describe(e); }
  };
  // The key of an invitation's state (its text: inviteStates).
  const inviteState = (i: Invitation) => i.revokedAt ? "revoked" : i.expiresAt && timestampMs(i.expiresAt) <= Date.now() ? "expired" : i.uses >= i.maxUses ? "usedUp" : "usable";
  const inviteStates = { revoked: "admin.invite.revoked", expired: "admin.invite.expired", usedUp: "admin.invite.usedUp", usable: "admin.invite.usable" } as const;
  const loadInvites = async () => {
    try {
      const r = await admin.listInvitations({ pageSize: 50 });
      invites.replaceChildren(r.invitations.length ? h("div", { class: "table" }, h("table", {},
        h("thead", {}, h("tr", {}, h("th", {}, t("admin.code")), h("th", {}, t("admin.note")), h("th", {}, t("admin.used")), h("th", {}, t("admin.state")), h("th", {}, t("admin.created")), h("th", {}, t("admin.expires")), h("th", {}))),
        h("tbody", {}, ...r.invitations.map((i) => {
          const state = inviteState(i);
          return h("tr", { "data-invitation": i.invitationId },
            h("td", {}, h("code", { translate: "no" }, i.prefix + "…")), h("td", { translate: "no" }, i.note), h("td", { class: "uses" }, `${num(i.uses)} / ${num(i.maxUses)}`),
            h("td", { class: "state" }, t(inviteStates[state])),
            h("td", {}, i.createdAt ? timeEl(timestampMs(i.createdAt)) : ""), h("td", {}, i.expiresAt ? timeEl(timestampMs(i.expiresAt)) : ""),
            h("td", {}, state === "revoked" ? "" : h("button", { type: "button", class: "revoke-invite", onclick: () => act(async () => {
              const rv = await admin.revokeInvitation({ invitationId: i.invitationId });
              await loadInvites();
              return t("admin.invitationRevoked", { prefix: rv.invitation!.prefix });
            }) }, t("admin.revoke"))));
        })))) : h("p", { class: "muted" }, t("admin.noInvitations")));
    } catch (e) { invites.textContent = "—"; err.textContent = describe(e); }
  };
  inviteForm.onsubmit = (e) => {
    e.preventDefault();
    const f = new FormData(inviteForm);
    act(async () => {
      const r = await admin.createInvitation({
        maxUses: BigInt(Number(f.get("uses"))), ttl: durationFromMs(Number(f.get("days")) * 86_400_000), note: String(f.get("note") ?? ""),
      });
      const link = `${location.origin}/?invite=${encodeURIComponent(r.code)}`;
      inviteCode.replaceChildren(h("p", {}, h("strong", {}, t("admin.copyCode")), " ", t("admin.notShownAgain")),
        h("div", { class: "row" }, h("code", { id: "invite-code-value", translate: "no" }, r.code)),
        h("p", { class: "muted" }, t("admin.orSendLink"), " ", h("code", { id: "invite-link", translate: "no" }, link)));
      inviteCode.hidden = false;
      inviteForm.reset();
      await loadInvites();
      return tp("admin.invitationCreated", r.invitation!.maxUses, { prefix: r.invitation!.prefix });
    });
  };
  let searchTimer = 0;
  search.oninput = () => { clearTimeout(searchTimer); searchTimer = window.setTimeout(loadUsers, 250); };
  const loadBatches = async () => {
    try {
      const r = await admin.listOpenBatches({});
      openBatches.replaceChildren(r.batches.length ? batchTable(r.batches, (b) => r.ownerEmails[b.id] ?? t("admin.deletedAccount"),
        (b) => b.status === BatchStatus.CANCELLING ? "" : h("button", { type: "button", class: "cancel-batch", onclick: () => act(async () => {
          const c = await admin.cancelBatch({ batchId: b.id });
          await loadBatches();
          return t("admin.batchState", { id: c.batch!.id, state: batchState(c.batch!) });
        }) }, t("admin.cancel"))) : h("p", { class: "muted" }, t("admin.noBatches")));
    } catch (e) { openBatches.textContent = "—"; err.textContent = describe(e); }
  };
  loadUsers();
  loadInvites();
  loadBatches();
  showRecentUsage();
  try {
    const r = await admin.listWorkers({});
    workers.replaceChildren(r.workers.length ? h("div", { class: "table" }, h("table", {},
      h("thead", {}, h("tr", {}, h("th", {}, t("admin.worker")), h("th", {}, t("admin.state")), h("th", {}, t("admin.models")), h("th", {}, t("admin.runningWaiting")), h("th", {}, t("admin.kvCache")))),
      h("tbody", {}, ...r.workers.map((w) => h("tr", {},
        h("td", { translate: "no" }, w.workerId || w.address),
        h("td", {}, workerStates[w.state] ? t(workerStates[w.state]) : "?"),
        h("td", { translate: "no" }, w.models.join(", ")),
        h("td", {}, w.load ? `${num(w.load.running)} / ${num(w.load.waiting)} ${t("admin.maxBatch", { n: num(w.load.maxBatch) })}` : ""),
        h("td", {}, w.load?.kvCapacityTokens ? t("admin.percent", { n: num(Math.round(Number(w.load.kvUsedTokens * 100n / w.load.kvCapacityTokens))) }) : "")))))) : h("p", { class: "muted" }, t("admin.noWorkers")));
  } catch (e) { workers.textContent = "—"; err.textContent = describe(e); }
}
