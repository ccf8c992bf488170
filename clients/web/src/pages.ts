// The app's pages besides the chat: usage and money, settings, admin. Each
// shows its own errors in its own error line (page-scoped by construction).
import { admin, billing, convs, describe, limitKindName, tierName, timestampMs, until, Tier } from "./api";
import type { LimitStatus, UsageRecord } from "../../ts/src/gen/parley/v1/billing_pb";
import { WorkerState } from "../../ts/src/gen/parley/v1/admin_pb";
import { $, h, usd, when } from "./dom";
import { barChart } from "./chart";

const errorLine = () => h("p", { class: "error", role: "alert" });

/** One row per limit: use, and when it frees up ("unused" when nothing is used). */
export function limitRows(limits: LimitStatus[]): HTMLElement {
  const now = Date.now();
  return h("table", { class: "limits" }, h("tbody", {}, ...limits.map((l) => {
    const pct = l.limit > 0n ? Number((l.used * 100n) / l.limit) : 0;
    const resets = l.resetsAt ? timestampMs(l.resetsAt) - now : 0;
    const state = l.used === 0n ? "unused"
      : l.remaining === 0n ? `used up; whole again in ${until(resets)}`
      : resets > 0 ? `whole again in ${until(resets)}` : "";
    return h("tr", {},
      h("th", {}, `${l.model ? l.model + " · " : ""}${limitKindName(l.kind)}`),
      h("td", {}, h("meter", { min: 0, max: 100, value: pct, high: 80 }), ` ${l.used.toLocaleString()} / ${l.limit.toLocaleString()}`),
      h("td", { class: "muted state" }, state));
  })));
}

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
function lastDays(n: number): string[] {
  const out: string[] = [];
  for (let i = n - 1; i >= 0; i--) out.push(day(Date.now() - i * 86400_000));
  return out;
}

/** Spend and tokens per day and per model, from usage records. */
export function usageCharts(records: UsageRecord[], days = 14): HTMLElement {
  const ds = lastDays(days);
  const models = [...new Set(records.map((r) => r.model))].sort();
  const spend = models.map((m) => ({ name: m, values: ds.map(() => 0) }));
  const tokens = models.map((m) => ({ name: m, values: ds.map(() => 0) }));
  const perModel = new Map<string, { n: number; cost: number; inTok: number; outTok: number }>();
  for (const r of records) {
    const i = ds.indexOf(r.createdAt ? day(timestampMs(r.createdAt)) : "");
    const k = models.indexOf(r.model);
    const inTok = Number(r.usage?.promptTokens ?? 0n), outTok = Number(r.usage?.completionTokens ?? 0n);
    if (i >= 0) {
      spend[k].values[i] += Number(r.costNanos);
      tokens[k].values[i] += inTok + outTok;
    }
    const pm = perModel.get(r.model) ?? { n: 0, cost: 0, inTok: 0, outTok: 0 };
    pm.n++; pm.cost += Number(r.costNanos); pm.inTok += inTok; pm.outTok += outTok;
    perModel.set(r.model, pm);
  }
  return h("div", { class: "charts" },
    barChart(`Spend per day (last ${days} days)`, ds, spend, (v) => usd(v)),
    barChart(`Tokens per day (last ${days} days)`, ds, tokens, (v) => v >= 1000 ? `${Math.round(v / 100) / 10}k` : String(Math.round(v))),
    h("div", { class: "table" }, h("table", { class: "per-model" },
      h("thead", {}, h("tr", {}, h("th", {}, "Model"), h("th", {}, "Requests"), h("th", {}, "Input tokens"), h("th", {}, "Output tokens"), h("th", {}, "Spend"))),
      h("tbody", {}, ...[...perModel].map(([m, v]) => h("tr", {}, h("td", {}, m), h("td", {}, String(v.n)), h("td", {}, v.inTok.toLocaleString()), h("td", {}, v.outTok.toLocaleString()), h("td", {}, usd(v.cost))))))));
}

async function recentUsage(list: (token: string) => Promise<{ usageRecords: UsageRecord[]; nextPageToken: string }>, sinceMs: number, max = 2000) {
  const out: UsageRecord[] = [];
  let token = "";
  do {
    const r = await list(token);
    out.push(...r.usageRecords);
    token = r.nextPageToken;
    const last = r.usageRecords[r.usageRecords.length - 1];
    if (last?.createdAt && timestampMs(last.createdAt) < sinceMs) break;
  } while (token && out.length < max);
  return out;
}

export async function showUsage(model: string) {
  const page = $("usage-page");
  const err = errorLine();
  const balance = h("div", { class: "stat", id: "balance" }, "…");
  const limits = h("div", { id: "usage-limits" }, "Loading…");
  const charts = h("div", { id: "usage-charts" }, "Loading…");
  page.replaceChildren(h("h2", {}, "Usage"), err,
    h("section", {}, h("h3", {}, "Balance"), balance,
      h("p", { class: "muted" }, "The chat is covered by your tier's allowances below. The developer API (API keys) charges each request to this balance.")),
    h("section", {}, h("h3", {}, `Allowances · ${model}`), limits),
    h("section", {}, h("h3", {}, "Spend and tokens"), charts));
  const since = Date.now() - 14 * 86400_000;
  const [b, l, u] = await Promise.allSettled([
    billing.getBalance({}),
    billing.getLimits({ model }),
    recentUsage((pageToken) => billing.listUsage({ pageSize: 200, pageToken }), since),
  ]);
  if (b.status === "fulfilled") {
    balance.replaceChildren(h("strong", {}, usd(b.value.balanceNanos)),
      b.value.reservedNanos ? h("span", { class: "muted" }, ` (${usd(b.value.reservedNanos)} held for requests in progress)`) : "");
  } else { balance.textContent = "—"; err.textContent = describe(b.reason); }
  if (l.status === "fulfilled") limits.replaceChildren(h("p", { class: "muted" }, `${tierName(l.value.tier)} tier`), limitRows(l.value.limits));
  else { limits.textContent = "—"; err.textContent = describe(l.reason); }
  if (u.status === "fulfilled") charts.replaceChildren(u.value.length ? usageCharts(u.value) : h("p", { class: "muted" }, "No usage in the last 14 days."));
  else { charts.textContent = "—"; err.textContent = describe(u.reason); }
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
  page.replaceChildren(h("h2", {}, "Settings"), err, form);
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

const tiers = [Tier.FREE, Tier.PLUS, Tier.PRO, Tier.MAX];
export async function showAdmin() {
  const page = $("admin-page");
  const err = errorLine();
  const ok = h("p", { class: "ok", role: "status" });
  const tierSel = h("select", { name: "tier", "aria-label": "Tier" }, ...tiers.map((t) => h("option", { value: t }, tierName(t))));
  const tierForm = h("form", { id: "tier-form", class: "row" },
    h("input", { name: "email", type: "email", required: true, placeholder: "user@example.com", "aria-label": "User email" }), tierSel,
    h("button", { class: "primary" }, "Set tier")) as HTMLFormElement;
  const topupForm = h("form", { id: "topup-form", class: "row" },
    h("input", { name: "email", type: "email", required: true, placeholder: "user@example.com", "aria-label": "User email" }),
    h("input", { name: "amount", type: "number", step: "0.01", required: true, placeholder: "USD (negative to debit)", "aria-label": "Amount in USD" }),
    h("input", { name: "reason", required: true, maxlength: 500, placeholder: "Reason (audit log)", "aria-label": "Reason" }),
    h("button", { class: "primary" }, "Adjust balance")) as HTMLFormElement;
  const workers = h("div", { id: "admin-workers" }, "Loading…");
  const usage = h("div", { id: "admin-usage" }, "Loading…");
  page.replaceChildren(h("h2", {}, "Admin"), err, ok,
    h("section", {}, h("h3", {}, "Users"), h("p", { class: "muted" }, "Tier:"), tierForm, h("p", { class: "muted" }, "Balance (the reason is written to the audit log):"), topupForm),
    h("section", {}, h("h3", {}, "Workers"), workers),
    h("section", {}, h("h3", {}, "Recent usage"), usage));
  const act = (form: HTMLFormElement, fn: (f: FormData) => Promise<string>) => {
    form.onsubmit = async (e) => {
      e.preventDefault();
      err.textContent = ""; ok.textContent = "";
      try { ok.textContent = await fn(new FormData(form)); form.reset(); } catch (e2) { err.textContent = describe(e2); }
    };
  };
  act(tierForm, async (f) => {
    const r = await admin.setUserTier({ email: String(f.get("email")), tier: Number(f.get("tier")) as Tier });
    return `${r.user?.email} is now on the ${tierName(r.user!.tier)} tier.`;
  });
  act(topupForm, async (f) => {
    const nanos = BigInt(Math.round(Number(f.get("amount")) * 1e9));
    const r = await admin.adjustBalance({ email: String(f.get("email")), deltaNanos: nanos, reason: String(f.get("reason")) });
    return `Balance of ${f.get("email")} is now ${usd(r.balanceNanos)}.`;
  });
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
  try {
    const r = await admin.listUsage({ pageSize: 50 });
    usage.replaceChildren(h("div", { class: "table" }, h("table", {},
      h("thead", {}, h("tr", {}, h("th", {}, "When"), h("th", {}, "End user"), h("th", {}, "Model"), h("th", {}, "Tokens in / out"), h("th", {}, "Cost"))),
      h("tbody", {}, ...r.usageRecords.map((u) => h("tr", {},
        h("td", {}, u.createdAt ? when(timestampMs(u.createdAt)) : ""),
        h("td", {}, u.user),
        h("td", {}, u.model),
        h("td", {}, `${u.usage?.promptTokens ?? 0n} / ${u.usage?.completionTokens ?? 0n}`),
        h("td", {}, usd(u.costNanos))))))));
  } catch (e) { usage.textContent = "—"; err.textContent = describe(e); }
}
