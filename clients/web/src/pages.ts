// The app's pages besides the chat: usage and money, settings, admin, loaded
// on first use. Each shows its own errors in its own error line (page-scoped
// by construction).
import { admin, batches, billing, convs, describe, tierName, timestampMs, Tier } from "./api";
import { limitRows } from "./limits";
import { BatchStatus, type Batch } from "../../ts/src/gen/parley/v1/batch_pb";
import { UsageGroupBy, type UsageBucket } from "../../ts/src/gen/parley/v1/billing_pb";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { WorkerState, type AdminUser, type Invitation } from "../../ts/src/gen/parley/v1/admin_pb";
import { Rating } from "../../ts/src/gen/parley/v1/conversation_pb";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { $, h, usd, when } from "./dom";
import { barChart } from "./chart";
import { memorySection } from "./memory";

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
      ? barChart(`Spend per day (last ${days.length} days)`, days, spend, (v) => usd(v))
      : h("p", { class: "muted no-spend" }, `No spend in the last ${days.length} days: the chat is covered by your tier's allowances.`),
    barChart(`Tokens per day (last ${days.length} days)`, days, tokens, (v) => v >= 1000 ? `${Math.round(v / 100) / 10}k` : String(Math.round(v))),
    h("div", { class: "table" }, h("table", { class: "per-model" },
      h("thead", {}, h("tr", {}, h("th", {}, "Model"), h("th", {}, "Requests"), h("th", {}, "Input tokens"), h("th", {}, "Output tokens"), h("th", {}, "Spend"))),
      h("tbody", {}, ...[...perModel].map(([m, v]) => h("tr", {}, h("td", {}, m), h("td", {}, String(v.n)), h("td", {}, v.inTok.toLocaleString()), h("td", {}, v.outTok.toLocaleString()), h("td", {}, usd(v.cost))))))));
}

export async function showUsage(model: string) {
  const page = $("usage-page");
  const err = errorLine();
  const balance = h("div", { class: "stat", id: "balance" }, "…");
  const limits = h("div", { id: "usage-limits" }, "Loading…");
  const charts = h("div", { id: "usage-charts" }, "Loading…");
  const batchList = h("div", { id: "usage-batches" }, "Loading…");
  page.replaceChildren(h("h2", {}, "Usage"), err,
    h("section", {}, h("h3", {}, "Balance"), balance,
      h("p", { class: "muted" }, "The chat is covered by your tier's allowances below. The developer API (API keys) charges each request to this balance.")),
    h("section", {}, h("h3", {}, `Allowances · ${model}`), limits),
    h("section", {}, h("h3", {}, "Spend and tokens"), charts),
    h("section", {}, h("h3", {}, "Batches"),
      h("p", { class: "muted" }, "Files of API requests run on idle capacity at the batch price (/v1/batches)."), batchList));
  const days = lastDays(14);
  const start = new Date(); start.setHours(0, 0, 0, 0); start.setDate(start.getDate() - 13);
  batches.listBatches({ pageSize: 20 }).then((r) => batchList.replaceChildren(r.batches.length
    ? batchTable(r.batches, () => "")
    : h("p", { class: "muted" }, "No batches yet."))).catch((e) => { batchList.textContent = "—"; err.textContent = describe(e); });
  const [b, l, u] = await Promise.allSettled([
    billing.getBalance({}),
    billing.getLimits({ model }),
    billing.getUsageSummary({ startTime: timestampFromMs(start.getTime()), groupBy: UsageGroupBy.DAY_AND_MODEL, utcOffsetMinutes: -new Date().getTimezoneOffset() }),
  ]);
  if (b.status === "fulfilled") {
    balance.replaceChildren(h("strong", {}, usd(b.value.balanceNanos)),
      b.value.reservedNanos ? h("span", { class: "muted" }, ` (${usd(b.value.reservedNanos)} held for requests in progress)`) : "");
  } else { balance.textContent = "—"; err.textContent = describe(b.reason); }
  if (l.status === "fulfilled") limits.replaceChildren(h("p", { class: "muted" }, `${tierName(l.value.tier)} tier`), limitRows(l.value.limits));
  else { limits.textContent = "—"; err.textContent = describe(l.reason); }
  if (u.status === "fulfilled") charts.replaceChildren(u.value.buckets.length ? usageCharts(u.value.buckets, days) : h("p", { class: "muted" }, "No usage in the last 14 days."));
  else { charts.textContent = "—"; err.textContent = describe(u.reason); }
}

/** A batch's status as people read it. */
function batchState(b: Batch): string {
  return (BatchStatus[b.status] ?? "?").toLowerCase().replace("_", " ");
}

/** A table of batches: when, endpoint, status, progress, cost; owner gives an owner column's text ("" for none), action a last cell. */
export function batchTable(list: Batch[], owner: (b: Batch) => string, action?: (b: Batch) => HTMLElement | string): HTMLElement {
  const withOwner = list.some((b) => owner(b) !== "");
  return h("div", { class: "table" }, h("table", { class: "batches" },
    h("thead", {}, h("tr", {}, h("th", {}, "Created"), ...(withOwner ? [h("th", {}, "Owner")] : []), h("th", {}, "Endpoint"),
      h("th", {}, "Status"), h("th", {}, "Done / total"), h("th", {}, "Cost"), ...(action ? [h("th", {})] : []))),
    h("tbody", {}, ...list.map((b) => {
      const c = b.requestCounts;
      return h("tr", { "data-batch": b.id },
        h("td", {}, b.createdAt ? when(timestampMs(b.createdAt)) : ""),
        ...(withOwner ? [h("td", { class: "email" }, owner(b))] : []),
        h("td", {}, h("code", {}, b.endpoint)),
        h("td", { class: "state" }, batchState(b)),
        h("td", { class: "progress" }, c ? `${c.completed + c.failed} / ${c.total}${c.failed ? ` (${c.failed} failed)` : ""}` : ""),
        h("td", {}, usd(b.costNanos)),
        ...(action ? [h("td", {}, action(b))] : []));
    }))));
}

export async function showSettings() {
  const page = $("settings-page");
  const err = errorLine();
  const ta = h("textarea", { id: "instructions", rows: 8, maxlength: 8000, placeholder: "What should Parley know about you, and how should it answer?" }) as HTMLTextAreaElement;
  const saved = h("span", { class: "muted", id: "instructions-saved", role: "status" });
  const form = h("form", { id: "instructions-form" },
    h("label", { for: "instructions" }, h("h3", {}, "Custom instructions")),
    h("p", { class: "muted" }, "Applied to every conversation, before its own system prompt. They count as input tokens."),
    ta, h("div", { class: "row" }, h("button", { class: "primary" }, "Save"), saved)) as HTMLFormElement;
  page.replaceChildren(h("h2", {}, "Settings"), err, form, promptsSection(err), memorySection());
  form.onsubmit = async (e) => {
    e.preventDefault();
    err.textContent = "";
    try {
      const r = await convs.setCustomInstructions({ instructions: ta.value });
      ta.value = r.instructions;
      saved.textContent = "Saved.";
    } catch (e2) { err.textContent = describe(e2); }
  };
  try { ta.value = (await convs.getCustomInstructions({})).instructions; } catch (e) { err.textContent = describe(e); }
}

/** The prompt library: type / and a name in the message box to insert one. */
function promptsSection(err: HTMLElement): HTMLElement {
  const list = h("div", { id: "prompt-list" }, "Loading…");
  const name = h("input", { name: "name", required: true, maxlength: 64, pattern: "[\\p{L}\\p{N}_\\-]+", placeholder: "name (no spaces)", "aria-label": "Prompt name" }) as HTMLInputElement;
  const text = h("textarea", { name: "text", required: true, maxlength: 8000, rows: 3, placeholder: "The text it inserts", "aria-label": "Prompt text" }) as HTMLTextAreaElement;
  let editing = "";
  const submit = h("button", { class: "primary" }, "Save prompt") as HTMLButtonElement;
  const form = h("form", { id: "prompt-form" }, h("div", { class: "row" }, name, submit), text) as HTMLFormElement;
  const load = async () => {
    const r = await convs.listSavedPrompts({});
    list.replaceChildren(r.prompts.length ? h("ul", { class: "prompt-list" }, ...r.prompts.map((p) => h("li", { "data-name": p.name },
      h("code", {}, `/${p.name}`), " ", h("span", { class: "muted" }, p.text.length > 80 ? p.text.slice(0, 79) + "…" : p.text), " ",
      h("button", { type: "button", class: "link", onclick: () => { editing = p.promptId; name.value = p.name; text.value = p.text; submit.textContent = "Save changes"; name.focus(); } }, "Edit"),
      h("button", { type: "button", class: "link danger", onclick: async () => {
        try { await convs.deleteSavedPrompt({ promptId: p.promptId }); window.dispatchEvent(new Event("parley:prompts")); await load(); } catch (e) { err.textContent = describe(e); }
      } }, "Delete")))) : h("p", { class: "muted" }, "No saved prompts yet."));
  };
  form.onsubmit = async (e) => {
    e.preventDefault();
    err.textContent = "";
    try {
      await convs.savePrompt({ promptId: editing, name: name.value.trim(), text: text.value });
      editing = ""; form.reset(); submit.textContent = "Save prompt";
      window.dispatchEvent(new Event("parley:prompts")); // the message box's / menu reads them again
      await load();
    } catch (e2) { err.textContent = describe(e2); }
  };
  load().catch((e) => { list.textContent = "—"; err.textContent = describe(e); });
  return h("section", { id: "prompts" }, h("h3", {}, "Saved prompts"),
    h("p", { class: "muted" }, "Type / and a prompt's name in the message box to insert it."), form, list);
}

const tiers = [Tier.FREE, Tier.PLUS, Tier.PRO, Tier.MAX];
/** The admin page: users (search by email, tier, admin flag, balance top-ups with a reason), sign-up invitations, workers, recent usage. */
export async function showAdmin() {
  const page = $("admin-page");
  const err = errorLine();
  const ok = h("p", { class: "ok", role: "status" });
  const search = h("input", { id: "user-search", type: "search", placeholder: "Email starts with…", "aria-label": "Search users by email" }) as HTMLInputElement;
  const users = h("div", { id: "admin-users" }, "Loading…");
  const workers = h("div", { id: "admin-workers" }, "Loading…");
  const usage = h("div", { id: "admin-usage" }, "Loading…");
  const invites = h("div", { id: "admin-invites" }, "Loading…");
  const openBatches = h("div", { id: "admin-batches" }, "Loading…");
  const feedback = h("div", { id: "admin-feedback" }, "Loading…");
  const inviteForm = h("form", { id: "invite-form", class: "row" },
    h("label", {}, "Accounts ", h("input", { name: "uses", type: "number", min: 1, max: 10000, value: 1, required: true })),
    h("label", {}, "Expires in ", h("input", { name: "days", type: "number", min: 1, max: 365, value: 7, required: true }), " days"),
    h("input", { name: "note", maxlength: 200, placeholder: "Note (whom it is for)", "aria-label": "Note" }),
    h("button", { class: "primary" }, "Create invitation")) as HTMLFormElement;
  const inviteCode = h("div", { id: "invite-code", class: "secret", hidden: true });
  page.replaceChildren(h("h2", {}, "Admin"), err, ok,
    h("section", {}, h("h3", {}, "Users"), search, users),
    h("section", {}, h("h3", {}, "Invitations"),
      h("p", { class: "muted" }, "Codes that let people sign up while the server runs with --signup invite."),
      inviteForm, inviteCode, invites),
    h("section", {}, h("h3", {}, "Workers"), workers),
    h("section", {}, h("h3", {}, "Running batches"), openBatches),
    h("section", {}, h("h3", {}, "Answer feedback (last 30 days)"), feedback),
    h("section", {}, h("h3", {}, "Recent usage"), usage));
  admin.getFeedbackSummary({}).then((r) => feedback.replaceChildren(r.models.length ? h("div", {},
    h("div", { class: "table" }, h("table", { class: "feedback-counts" },
      h("thead", {}, h("tr", {}, h("th", {}, "Model"), h("th", {}, "👍"), h("th", {}, "👎"), h("th", {}, "Good"))),
      h("tbody", {}, ...r.models.map((m) => h("tr", {}, h("td", {}, m.model), h("td", {}, String(m.good)), h("td", {}, String(m.bad)),
        h("td", {}, `${Math.round(Number(m.good) * 100 / Math.max(1, Number(m.good + m.bad)))}%`)))))),
    r.notes.length ? h("ul", { class: "feedback-notes" }, ...r.notes.map((n) => h("li", {},
      `${n.rating === Rating.GOOD ? "👍" : "👎"} ${n.model}: `, h("q", {}, n.note), h("span", { class: "muted" }, ` · ${n.updateTime ? when(timestampMs(n.updateTime)) : ""}`)))) : "")
    : h("p", { class: "muted" }, "No answer was rated in the last 30 days.")),
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
        h("thead", {}, h("tr", {}, h("th", {}, "User"), h("th", {}, "Tier"), h("th", {}, "Admin"), h("th", {}, "Balance"), h("th", {}, "Top up (USD, reason)"), h("th", {}))),
        h("tbody", {}, ...r.users.map((au) => userRow(au))))) : h("p", { class: "muted" }, "No user matches."));
    } catch (e) { users.textContent = "—"; err.textContent = describe(e); }
  };
  const userRow = (au: AdminUser) => {
    const u = au.user!;
    const tier = h("select", { class: "tier", "aria-label": `Tier of ${u.email}` }, ...tiers.map((t) => h("option", { value: t, selected: t === u.tier }, tierName(t)))) as HTMLSelectElement;
    tier.onchange = () => act(async () => {
      const r = await admin.setUserTier({ userId: u.userId, tier: Number(tier.value) as Tier });
      return `${r.user!.email} is now on the ${tierName(r.user!.tier)} tier.`;
    });
    const adm = h("input", { type: "checkbox", class: "admin-flag", checked: u.admin, "aria-label": `${u.email} is an admin` }) as HTMLInputElement;
    adm.onchange = () => act(async () => {
      const r = await admin.setUserAdmin({ userId: u.userId, admin: adm.checked });
      return `${r.user!.email} ${r.user!.admin ? "is" : "is no longer"} an admin.`;
    });
    const bal = h("td", { class: "balance" }, usd(au.balanceNanos));
    const amount = h("input", { type: "number", step: "0.01", required: true, class: "amount", placeholder: "5.00", "aria-label": `Amount for ${u.email}` }) as HTMLInputElement;
    const reason = h("input", { required: true, maxlength: 500, class: "reason", placeholder: "Reason (audit log)", "aria-label": `Reason for ${u.email}` }) as HTMLInputElement;
    const topup = h("form", { class: "row topup" }, amount, reason, h("button", { class: "primary" }, "Apply")) as HTMLFormElement;
    topup.onsubmit = (e) => {
      e.preventDefault();
      act(async () => {
        const r = await admin.adjustBalance({ userId: u.userId, deltaNanos: BigInt(Math.round(Number(amount.value) * 1e9)), reason: reason.value });
        bal.textContent = usd(r.balanceNanos);
        topup.reset();
        return `Balance of ${u.email} is now ${usd(r.balanceNanos)}.`;
      });
    };
    return h("tr", { "data-email": u.email },
      h("td", {}, h("div", {}, u.email), h("div", { class: "muted" }, u.displayName)),
      h("td", {}, tier), h("td", {}, adm), bal, h("td", {}, topup),
      h("td", {}, h("button", { type: "button", class: "show-usage", onclick: () => showUserUsage(u.userId, u.email) }, "Usage")));
  };
  let usageSeq = 0; // the latest usage view asked for; a slower earlier one is dropped
  /** Every user's requests, newest first, a page at a time (More appends the next). */
  const showRecentUsage = async () => {
    const my = ++usageSeq;
    usage.textContent = "Loading…";
    const body = h("tbody", {});
    const more = h("button", { type: "button", class: "link", id: "recent-more", hidden: true }, "More") as HTMLButtonElement;
    let token = "";
    const page = async () => {
      more.disabled = true;
      try {
        const r = await admin.listUsage({ pageSize: 50, pageToken: token });
        if (my !== usageSeq) return;
        if (!body.children.length && !r.usageRecords.length) { usage.replaceChildren(h("p", { class: "muted" }, "No usage yet.")); return; }
        body.append(...r.usageRecords.map((x) => h("tr", {},
          h("td", {}, x.createdAt ? when(timestampMs(x.createdAt)) : ""),
          h("td", { class: "email" }, r.userEmails[x.userId] ?? h("span", { class: "muted" }, "(deleted account)")),
          h("td", {}, x.model),
          h("td", {}, `${x.usage?.promptTokens ?? 0n} / ${x.usage?.completionTokens ?? 0n}`),
          h("td", {}, usd(x.costNanos)))));
        token = r.nextPageToken;
        more.hidden = !token;
      } catch (e) { err.textContent = describe(e); }
      more.disabled = false;
    };
    more.onclick = page;
    usage.replaceChildren(h("p", { class: "muted" }, "Every user's requests, newest first. A user's Usage button shows theirs with their audit log."),
      h("div", { class: "table" }, h("table", { class: "recent-usage" },
        h("thead", {}, h("tr", {}, h("th", {}, "When"), h("th", {}, "User"), h("th", {}, "Model"), h("th", {}, "Tokens in / out"), h("th", {}, "Cost"))),
        body)), more);
    await page();
  };
  const showUserUsage = async (userId: string, email: string) => {
    const my = ++usageSeq;
    usage.textContent = "Loading…";
    try {
      const [r, a] = await Promise.all([admin.listUsage({ userId, pageSize: 50 }), admin.listAuditEvents({ userId, pageSize: 20 })]);
      if (my !== usageSeq) return;
      usage.replaceChildren(h("div", { class: "row" }, h("button", { type: "button", class: "link", id: "all-usage", onclick: showRecentUsage }, "← Every user"), h("span", { class: "muted" }, email)),
        r.usageRecords.length ? h("div", { class: "table" }, h("table", { class: "usage-rows" },
          h("thead", {}, h("tr", {}, h("th", {}, "When"), h("th", {}, "Model"), h("th", {}, "Tokens in / out"), h("th", {}, "Cost"), h("th", {}, "End user"))),
          h("tbody", {}, ...r.usageRecords.map((x) => h("tr", {},
            h("td", {}, x.createdAt ? when(timestampMs(x.createdAt)) : ""), h("td", {}, x.model),
            h("td", {}, `${x.usage?.promptTokens ?? 0n} / ${x.usage?.completionTokens ?? 0n}`),
            h("td", {}, usd(x.costNanos)), h("td", {}, x.user)))))) : h("p", { class: "muted" }, "No usage."),
        h("h4", {}, "Audit log"),
        a.events.length ? h("ul", { class: "audit" }, ...a.events.map((ev) => h("li", {},
          `${ev.at ? when(timestampMs(ev.at)) : ""} · ${ev.kind}${ev.detail ? ` · ${ev.detail}` : ""}`))) : h("p", { class: "muted" }, "No events."));
    } catch (e) { usage.textContent = "—"; err.textContent = describe(e); }
  };
  const inviteState = (i: Invitation) => i.revokedAt ? "revoked" : i.expiresAt && timestampMs(i.expiresAt) <= Date.now() ? "expired" : i.uses >= i.maxUses ? "used up" : "usable";
  const loadInvites = async () => {
    try {
      const r = await admin.listInvitations({ pageSize: 50 });
      invites.replaceChildren(r.invitations.length ? h("div", { class: "table" }, h("table", {},
        h("thead", {}, h("tr", {}, h("th", {}, "Code"), h("th", {}, "Note"), h("th", {}, "Used"), h("th", {}, "State"), h("th", {}, "Created"), h("th", {}, "Expires"), h("th", {}))),
        h("tbody", {}, ...r.invitations.map((i) => {
          const state = inviteState(i);
          return h("tr", { "data-invitation": i.invitationId },
            h("td", {}, h("code", {}, i.prefix + "…")), h("td", {}, i.note), h("td", { class: "uses" }, `${i.uses} / ${i.maxUses}`),
            h("td", { class: "state" }, state),
            h("td", {}, i.createdAt ? when(timestampMs(i.createdAt)) : ""), h("td", {}, i.expiresAt ? when(timestampMs(i.expiresAt)) : ""),
            h("td", {}, state === "revoked" ? "" : h("button", { type: "button", class: "revoke-invite", onclick: () => act(async () => {
              const rv = await admin.revokeInvitation({ invitationId: i.invitationId });
              await loadInvites();
              return `Invitation ${rv.invitation!.prefix}… is revoked.`;
            }) }, "Revoke")));
        })))) : h("p", { class: "muted" }, "No invitations."));
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
      inviteCode.replaceChildren(h("p", {}, h("strong", {}, "Copy this code now."), " It will not be shown again."),
        h("div", { class: "row" }, h("code", { id: "invite-code-value" }, r.code)),
        h("p", { class: "muted" }, "Or send the link: ", h("code", { id: "invite-link" }, link)));
      inviteCode.hidden = false;
      inviteForm.reset();
      await loadInvites();
      return `Invitation ${r.invitation!.prefix}… created for ${r.invitation!.maxUses} account(s).`;
    });
  };
  let t = 0;
  search.oninput = () => { clearTimeout(t); t = window.setTimeout(loadUsers, 250); };
  const loadBatches = async () => {
    try {
      const r = await admin.listOpenBatches({});
      openBatches.replaceChildren(r.batches.length ? batchTable(r.batches, (b) => r.ownerEmails[b.id] ?? "(deleted account)",
        (b) => b.status === BatchStatus.CANCELLING ? "" : h("button", { type: "button", class: "cancel-batch", onclick: () => act(async () => {
          const c = await admin.cancelBatch({ batchId: b.id });
          await loadBatches();
          return `Batch ${c.batch!.id} is ${batchState(c.batch!)}.`;
        }) }, "Cancel")) : h("p", { class: "muted" }, "No batch is running."));
    } catch (e) { openBatches.textContent = "—"; err.textContent = describe(e); }
  };
  loadUsers();
  loadInvites();
  loadBatches();
  showRecentUsage();
  try {
    const r = await admin.listWorkers({});
    workers.replaceChildren(r.workers.length ? h("div", { class: "table" }, h("table", {},
      h("thead", {}, h("tr", {}, h("th", {}, "Worker"), h("th", {}, "State"), h("th", {}, "Models"), h("th", {}, "Running / waiting"), h("th", {}, "KV cache"))),
      h("tbody", {}, ...r.workers.map((w) => h("tr", {},
        h("td", {}, w.workerId || w.address),
        h("td", {}, (WorkerState[w.state] ?? "?").toLowerCase()),
        h("td", {}, w.models.join(", ")),
        h("td", {}, w.load ? `${w.load.running} / ${w.load.waiting} (batch ${w.load.maxBatch})` : ""),
        h("td", {}, w.load?.kvCapacityTokens ? `${Math.round(Number(w.load.kvUsedTokens * 100n / w.load.kvCapacityTokens))}%` : "")))))) : h("p", { class: "muted" }, "No workers."));
  } catch (e) { workers.textContent = "—"; err.textContent = describe(e); }
}
