// The organisation pages, loaded on first use: the switcher, members and
// invitation links, teams with their budgets, the organisation's keys and its
// usage. What a role may not do is not offered (the server refuses it anyway).
import { createClient } from "@connectrpc/connect";
import { durationFromMs, timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  BudgetPeriod, BudgetScope, OrganizationRole, OrganizationService, TeamRole,
  type Budget, type GetOrganizationResponse, type Member, type OrganizationApiKey, type Team,
} from "../../ts/src/gen/parley/v1/organization_pb";
import { ModelKind } from "../../ts/src/gen/parley/v1/model_pb";
import { describe, models, timestampMs, transport } from "./api";
import { $, h, usd, when } from "./dom";
import { usageCharts, lastDays } from "./pages";

const orgs = createClient(OrganizationService, transport);
const roleName = (r: OrganizationRole) => (OrganizationRole[r] ?? "").toLowerCase().replace("_", " ");
const periodName = (p: BudgetPeriod) => (BudgetPeriod[p] ?? "").toLowerCase();
const manages = (r: OrganizationRole) => r === OrganizationRole.OWNER || r === OrganizationRole.ADMIN;
const readsBill = (r: OrganizationRole) => manages(r) || r === OrganizationRole.BILLING_READER;
const selectedKey = "parley.org";

function periodSelect(name: string) {
  return h("select", { name, "aria-label": "Budget period" },
    ...[BudgetPeriod.MONTHLY, BudgetPeriod.WEEKLY, BudgetPeriod.DAILY, BudgetPeriod.TOTAL].map((p) => h("option", { value: p }, periodName(p))));
}
const nanos = (dollars: FormDataEntryValue | null) => BigInt(Math.round(Number(dollars || 0) * 1e9));

/** A budget as a meter: spent (and held) of the limit, and when it resets. */
function budgetCell(b?: Budget) {
  if (!b) return h("span", { class: "muted" }, "no budget");
  const used = b.spentNanos + b.reservedNanos;
  const pct = b.limitNanos > 0n ? Number((used * 100n) / b.limitNanos) : 100;
  return h("span", { class: "budget" }, h("meter", { min: 0, max: 100, value: pct, high: 80 }),
    ` ${usd(used)} of ${usd(b.limitNanos)} ${periodName(b.period)}`,
    b.resetsAt ? h("span", { class: "muted" }, ` · resets ${when(timestampMs(b.resetsAt))}`) : "");
}

/** The organisations page; join is an invitation code from a /join/ link. */
export async function showOrgs(join = "") {
  const page = $("orgs-page");
  const err = h("p", { class: "error", role: "alert" });
  const ok = h("p", { class: "ok", role: "status" });
  const joinCard = h("div", { id: "org-join" });
  const pick = h("select", { id: "org-select", "aria-label": "Organisation" }) as HTMLSelectElement;
  const view = h("div", { id: "org-view" });
  const create = h("form", { id: "org-create", class: "row" },
    h("input", { name: "name", required: true, maxlength: 100, placeholder: "New organisation's name", "aria-label": "Organisation name" }),
    h("button", { class: "primary" }, "Create organisation")) as HTMLFormElement;
  page.replaceChildren(h("h2", {}, "Organisations"), err, ok, joinCard,
    h("div", { class: "row" }, pick, create), view);
  const act = async (fn: () => Promise<string | void>) => {
    err.textContent = ""; ok.textContent = "";
    try { ok.textContent = (await fn()) ?? ""; } catch (e) { err.textContent = describe(e); }
  };
  const load = async (want = localStorage.getItem(selectedKey) ?? "") => {
    const r = await orgs.listOrganizations({});
    pick.replaceChildren(...r.memberships.map((m) => h("option", { value: m.organization!.organizationId },
      `${m.organization!.name} (${roleName(m.role)})`)));
    pick.hidden = !r.memberships.length;
    if (!r.memberships.length) { view.replaceChildren(h("p", { class: "muted" }, "You belong to no organisation yet. Create one, or open an invitation link.")); return; }
    pick.value = r.memberships.some((m) => m.organization!.organizationId === want) ? want : r.memberships[0].organization!.organizationId;
    await showOrg(pick.value);
  };
  pick.onchange = () => act(() => showOrg(pick.value));
  create.onsubmit = (e) => {
    e.preventDefault();
    act(async () => {
      const tz = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
      const r = await orgs.createOrganization({ name: String(new FormData(create).get("name")), timeZone: tz });
      create.reset();
      await load(r.organization!.organizationId);
      return `${r.organization!.name} is made, with you as its owner.`;
    });
  };

  const showOrg = async (id: string) => {
    localStorage.setItem(selectedKey, id);
    view.textContent = "Loading…";
    const o = await orgs.getOrganization({ organizationId: id });
    const role = o.role;
    const [members, teams, budgets] = await Promise.all([
      orgs.listMembers({ organizationId: id }),
      orgs.listTeams({ organizationId: id }),
      readsBill(role) ? orgs.listBudgets({ organizationId: id }) : undefined,
    ]);
    // Those who read the bill list every key; a member its own and its teams'.
    const keyLists = await Promise.all([undefined, ...(readsBill(role) ? [] : teams.teams.map((t) => t.teamId))]
      .map((teamId) => orgs.listOrganizationApiKeys({ organizationId: id, teamId, pageSize: 100 })));
    const keys = [...new Map(keyLists.flatMap((l) => l.keys).map((k) => [k.apiKey!.keyId, k])).values()];
    const budgetOf = (scope: BudgetScope, scopeId: string) => budgets?.budgets.find((b) => b.scope === scope && b.scopeId === scopeId);
    const teamName = new Map(teams.teams.map((t) => [t.teamId, t.name]));
    const email = new Map(members.members.map((m) => [m.userId, m.email]));
    view.replaceChildren(
      summary(o),
      membersSection(id, role, members.members, teams.teams),
      teamsSection(id, role, teams.teams, budgetOf),
      await keysSection(id, role, keys, teams.teams, teamName, email, budgetOf),
      readsBill(role) ? usageSection(id) : "",
    );
  };

  const summary = (o: GetOrganizationResponse) => h("section", { id: "org-summary" },
    h("h3", {}, o.organization!.name),
    h("p", {}, "Your role: ", h("strong", { id: "org-role" }, roleName(o.role)), h("span", { class: "muted" }, ` · budgets reset at midnight ${o.organization!.timeZone}`)),
    o.balance ? h("p", { id: "org-balance" }, "Balance ", h("strong", {}, usd(o.balance.balanceNanos)),
      o.balance.reservedNanos ? h("span", { class: "muted" }, ` (${usd(o.balance.reservedNanos)} held for requests in progress)`) : "",
      h("span", { class: "muted" }, " · the operator adds money (parley admin org-topup)")) : "");

  const membersSection = (id: string, role: OrganizationRole, list: Member[], teams: Team[]) => {
    const sec = h("section", { id: "org-members" }, h("h3", {}, "Members"),
      h("div", { class: "table" }, h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Member"), h("th", {}, "Role"))),
        h("tbody", {}, ...list.map((m) => h("tr", {}, h("td", {}, m.email), h("td", {}, roleName(m.role))))))));
    if (!manages(role)) return sec;
    const roles = [OrganizationRole.MEMBER, OrganizationRole.ADMIN, OrganizationRole.BILLING_READER, ...(role === OrganizationRole.OWNER ? [OrganizationRole.OWNER] : [])];
    const form = h("form", { id: "org-invite-form", class: "row" },
      h("select", { name: "role", "aria-label": "Role" }, ...roles.map((r) => h("option", { value: r }, roleName(r)))),
      h("select", { name: "team", "aria-label": "Team" }, h("option", { value: "" }, "no team"), ...teams.map((t) => h("option", { value: t.teamId }, `team ${t.name}`))),
      h("input", { name: "email", type: "email", placeholder: "Only this address (optional)", "aria-label": "Only this address" }),
      h("label", {}, "People ", h("input", { name: "uses", type: "number", min: 1, max: 1000, value: 1, required: true })),
      h("button", { class: "primary" }, "Create invitation link")) as HTMLFormElement;
    const link = h("div", { id: "org-invite-link", class: "secret", hidden: true });
    const invites = h("div", { id: "org-invites" });
    const listInvites = async () => {
      const r = await orgs.listOrganizationInvitations({ organizationId: id });
      const now = Date.now();
      invites.replaceChildren(r.invitations.length ? h("div", { class: "table" }, h("table", {},
        h("thead", {}, h("tr", {}, h("th", {}, "Link"), h("th", {}, "Role"), h("th", {}, "For"), h("th", {}, "Used"), h("th", {}, "State"), h("th", {}))),
        h("tbody", {}, ...r.invitations.map((inv) => {
          const state = inv.revokeTime ? "revoked" : timestampMs(inv.expireTime!) <= now ? "expired" : inv.uses >= inv.maxUses ? "used up" : `until ${when(timestampMs(inv.expireTime!))}`;
          return h("tr", {}, h("td", {}, h("code", {}, `${inv.prefix}…`)), h("td", {}, roleName(inv.role) + (inv.teamId ? ` · ${teams.find((t) => t.teamId === inv.teamId)?.name ?? "team"}` : "")),
            h("td", {}, inv.email || "anyone with the link"), h("td", {}, `${inv.uses} / ${inv.maxUses}`), h("td", {}, state),
            h("td", {}, inv.revokeTime ? "" : h("button", { type: "button", onclick: () => act(async () => {
              await orgs.revokeOrganizationInvitation({ organizationId: id, invitationId: inv.invitationId });
              await listInvites();
              return "The link no longer works; who joined with it stays.";
            }) }, "Revoke")));
        })))) : h("p", { class: "muted" }, "No invitation links yet."));
    };
    form.onsubmit = (e) => {
      e.preventDefault();
      const f = new FormData(form);
      act(async () => {
        const r = await orgs.createOrganizationInvitation({ organizationId: id, role: Number(f.get("role")), teamId: String(f.get("team")),
          email: String(f.get("email") ?? ""), maxUses: BigInt(Number(f.get("uses")) || 1), ttl: durationFromMs(7 * 86400_000) });
        const url = `${location.origin}/join/${r.code}`;
        const copy = h("button", { type: "button", onclick: () => navigator.clipboard?.writeText(url) }, "Copy");
        link.replaceChildren(h("p", {}, h("strong", {}, "Send this link."), " It is shown only now and works for 7 days."),
          h("div", { class: "row" }, h("code", { id: "org-invite-url" }, url), copy));
        link.hidden = false;
        await listInvites();
      });
    };
    sec.append(h("h4", {}, "Invite by link"), form, link, invites);
    listInvites().catch((e) => { err.textContent = describe(e); });
    return sec;
  };

  const teamsSection = (id: string, role: OrganizationRole, teams: Team[], budgetOf: (s: BudgetScope, id: string) => Budget | undefined) => {
    const sec = h("section", { id: "org-teams" }, h("h3", {}, "Teams"),
      teams.length ? h("div", { class: "table" }, h("table", {},
        h("thead", {}, h("tr", {}, h("th", {}, "Team"), readsBill(role) ? h("th", {}, "Budget") : "")),
        h("tbody", {}, ...teams.map((t) => h("tr", { "data-team": t.name }, h("td", {}, t.name),
          readsBill(role) ? h("td", {}, budgetCell(budgetOf(BudgetScope.TEAM, t.teamId))) : ""))))) :
        h("p", { class: "muted" }, manages(role) ? "No teams yet." : "You are in no team."));
    if (!manages(role)) return sec;
    const form = h("form", { id: "org-team-form", class: "row" },
      h("input", { name: "name", required: true, maxlength: 100, placeholder: "Team name", "aria-label": "Team name" }),
      h("label", {}, "Budget $", h("input", { name: "budget", type: "number", min: 0, step: "0.01", placeholder: "none", class: "amount", "aria-label": "Budget in dollars" })),
      periodSelect("period"),
      h("button", { class: "primary" }, "Create team")) as HTMLFormElement;
    form.onsubmit = (e) => {
      e.preventDefault();
      const f = new FormData(form);
      act(async () => {
        const t = await orgs.createTeam({ organizationId: id, name: String(f.get("name")) });
        if (String(f.get("budget") ?? "") !== "") {
          await orgs.setBudget({ organizationId: id, scope: BudgetScope.TEAM, scopeId: t.team!.teamId, period: Number(f.get("period")), limitNanos: nanos(f.get("budget")) });
        }
        await showOrg(id);
        return `Team ${t.team!.name} is made.`;
      });
    };
    sec.append(form);
    return sec;
  };

  const keysSection = async (id: string, role: OrganizationRole, keys: OrganizationApiKey[],
    teams: Team[], teamName: Map<string, string>, email: Map<string, string>, budgetOf: (s: BudgetScope, id: string) => Budget | undefined) => {
    const sec = h("section", { id: "org-keys" }, h("h3", {}, "API keys"),
      h("p", { class: "muted" }, "Requests made with these keys are billed to the organisation and held against every budget they fall under."),
      keys.length ? h("div", { class: "table" }, h("table", {},
        h("thead", {}, h("tr", {}, h("th", {}, "Key"), h("th", {}, "Team"), h("th", {}, "Models"), h("th", {}, "Rate"), h("th", {}, "Made by"), readsBill(role) ? h("th", {}, "Budget") : "", h("th", {}, "Expires"))),
        h("tbody", {}, ...keys.map((k) => h("tr", { "data-key": k.apiKey!.name },
          h("td", {}, k.apiKey!.name, h("div", { class: "muted" }, h("code", {}, `${k.apiKey!.prefix}…`))),
          h("td", {}, k.teamId ? teamName.get(k.teamId) ?? "—" : "own"),
          h("td", { class: "models" }, k.models.length ? k.models.join(", ") : "all"),
          h("td", {}, k.requestsPerMinute ? `${k.requestsPerMinute}/min` : "—"),
          h("td", {}, email.get(k.createdBy) ?? "—"),
          readsBill(role) ? h("td", {}, budgetCell(budgetOf(BudgetScope.KEY, k.apiKey!.keyId))) : "",
          h("td", {}, k.apiKey!.expiresAt ? when(timestampMs(k.apiKey!.expiresAt)) : "")))))) :
        h("p", { class: "muted" }, "No keys you can see."));
    if (role === OrganizationRole.BILLING_READER) return sec;
    let chatModels: string[] = [];
    try { chatModels = (await models.listModels({})).models.filter((m) => m.kind !== ModelKind.EMBEDDING).map((m) => m.id); } catch { /* the form offers "all" */ }
    const form = h("form", { id: "org-key-form", class: "row" },
      h("input", { name: "name", required: true, maxlength: 100, placeholder: "Key name", "aria-label": "Key name" }),
      h("select", { name: "team", "aria-label": "Key's team" }, h("option", { value: "" }, "my own key"), ...teams.map((t) => h("option", { value: t.teamId }, `team ${t.name}`))),
      h("select", { name: "model", "aria-label": "Models the key may use" }, h("option", { value: "" }, "all models"), ...chatModels.map((m) => h("option", { value: m }, `only ${m}`))),
      h("label", {}, "Requests/min ", h("input", { name: "rpm", type: "number", min: 0, placeholder: "any", class: "amount" })),
      h("label", {}, "Budget $", h("input", { name: "budget", type: "number", min: 0, step: "0.01", placeholder: "none", class: "amount", "aria-label": "Key budget in dollars" })),
      periodSelect("period"),
      h("button", { class: "primary" }, "Create key")) as HTMLFormElement;
    const secret = h("div", { id: "org-key-secret", class: "secret", hidden: true });
    form.onsubmit = (e) => {
      e.preventDefault();
      const f = new FormData(form);
      act(async () => {
        const budget = String(f.get("budget") ?? "") !== "";
        const r = await orgs.createOrganizationApiKey({ organizationId: id, name: String(f.get("name")), teamId: String(f.get("team")),
          models: f.get("model") ? [String(f.get("model"))] : [], requestsPerMinute: BigInt(Number(f.get("rpm")) || 0),
          budgetLimitNanos: budget ? nanos(f.get("budget")) : 0n, budgetPeriod: budget ? Number(f.get("period")) : BudgetPeriod.UNSPECIFIED,
          ttl: durationFromMs(30 * 86400_000) });
        await showOrg(id);
        const s = $("org-key-secret");
        s.replaceChildren(h("p", {}, h("strong", {}, "Copy this secret now."), " It will not be shown again."),
          h("div", { class: "row" }, h("code", { id: "org-key-value" }, r.secret), h("button", { type: "button", onclick: () => navigator.clipboard?.writeText(r.secret) }, "Copy")));
        s.hidden = false;
      });
    };
    sec.append(form, secret);
    return sec;
  };

  const usageSection = (id: string) => {
    const charts = h("div", { id: "org-usage" }, "Loading…");
    const days = lastDays(14);
    const start = new Date(); start.setHours(0, 0, 0, 0); start.setDate(start.getDate() - 13);
    orgs.getOrganizationUsage({ organizationId: id, startTime: timestampFromMs(start.getTime()) }).then(
      (r) => charts.replaceChildren(r.buckets.length ? usageCharts(r.buckets, days) : h("p", { class: "muted" }, "No usage in the last 14 days.")),
      (e) => { charts.textContent = "—"; err.textContent = describe(e); });
    const csv = (by: string) => h("a", { href: `/export/organizations/${encodeURIComponent(id)}/usage.csv?group_by=${by}&start_time=${days[0]}`, download: "" }, by);
    return h("section", { id: "org-usage-section" }, h("h3", {}, "Usage"), charts,
      h("p", { class: "muted" }, "Download CSV by ", csv("model"), " · ", csv("key"), " · ", csv("team"), " · ", csv("member")));
  };

  await act(() => load());
  // An invitation link: say what it offers, join on one click.
  if (join) {
    try {
      const offer = await orgs.getOrganizationInvitation({ code: join });
      const team = offer.teamName ? ` and its team ${offer.teamName}` : "";
      joinCard.replaceChildren(h("div", { class: "secret" },
        h("p", {}, offer.alreadyMember ? `You are already a member of ${offer.organizationName}.` : `You are invited to join ${offer.organizationName} as ${roleName(offer.role)}${team}.`),
        offer.alreadyMember ? "" : h("button", { id: "org-join-btn", class: "primary", type: "button", onclick: () => act(async () => {
          const r = await orgs.acceptOrganizationInvitation({ code: join });
          joinCard.replaceChildren();
          await load(r.membership!.organization!.organizationId);
          return `You joined ${r.membership!.organization!.name}.`;
        }) }, `Join ${offer.organizationName}`)));
    } catch (e) { err.textContent = `This invitation link does not work: ${describe(e)}`; }
  }
}
