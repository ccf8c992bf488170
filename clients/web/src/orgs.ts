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
import { $, h, timeEl, usd, when } from "./dom";
import { usageCharts, lastDays } from "./pages";
import { num, t, type MessageId } from "./i18n";

const orgs = createClient(OrganizationService, transport);
const roleNames: Record<OrganizationRole, MessageId> = {
  [OrganizationRole.UNSPECIFIED]: "orgs.role.unspecified",
  [OrganizationRole.OWNER]: "orgs.role.owner",
  [OrganizationRole.ADMIN]: "orgs.role.admin",
  [OrganizationRole.MEMBER]: "orgs.role.member",
  [OrganizationRole.BILLING_READER]: "orgs.role.billingReader",
};
const periodNames: Record<BudgetPeriod, MessageId> = {
  [BudgetPeriod.UNSPECIFIED]: "orgs.period.unspecified",
  [BudgetPeriod.DAILY]: "orgs.period.daily",
  [BudgetPeriod.WEEKLY]: "orgs.period.weekly",
  [BudgetPeriod.MONTHLY]: "orgs.period.monthly",
  [BudgetPeriod.TOTAL]: "orgs.period.total",
};
const roleName = (r: OrganizationRole) => roleNames[r] ? t(roleNames[r]) : "";
const periodName = (p: BudgetPeriod) => periodNames[p] ? t(periodNames[p]) : "";
const manages = (r: OrganizationRole) => r === OrganizationRole.OWNER || r === OrganizationRole.ADMIN;
const readsBill = (r: OrganizationRole) => manages(r) || r === OrganizationRole.BILLING_READER;
const selectedKey = "parley.org";

function periodSelect(name: string) {
  return h("select", { name, "aria-label": t("orgs.budgetPeriod") },
    ...[BudgetPeriod.MONTHLY, BudgetPeriod.WEEKLY, BudgetPeriod.DAILY, BudgetPeriod.TOTAL].map((p) => h("option", { value: p }, periodName(p))));
}
const nanos = (dollars: FormDataEntryValue | null) => BigInt(Math.round(Number(dollars || 0) * 1e9));

/** A budget as a meter: spent (and held) of the limit, and when it resets. */
function budgetCell(b?: Budget) {
  if (!b) return h("span", { class: "muted" }, t("orgs.noBudget"));
  const used = b.spentNanos + b.reservedNanos;
  const pct = b.limitNanos > 0n ? Number((used * 100n) / b.limitNanos) : 100;
  return h("span", { class: "budget" }, h("meter", { min: 0, max: 100, value: pct, high: 80 }),
    ` ${t("orgs.budgetUse", { used: usd(used), limit: usd(b.limitNanos), period: periodName(b.period) })}`,
    b.resetsAt ? h("span", { class: "muted" }, ` · ${t("orgs.resets", { when: when(timestampMs(b.resetsAt)) })}`) : "");
}

/** The organisations page; join is an invitation code from a /join/ link. */
export async function showOrgs(join = "") {
  const page = $("orgs-page");
  const err = h("p", { class: "error", role: "alert" });
  const ok = h("p", { class: "ok", role: "status" });
  const joinCard = h("div", { id: "org-join" });
  const pick = h("select", { id: "org-select", "aria-label": t("orgs.organisation") }) as HTMLSelectElement;
  const view = h("div", { id: "org-view" });
  const create = h("form", { id: "org-create", class: "row" },
    h("input", { name: "name", required: true, maxlength: 100, placeholder: t("orgs.namePlaceholder"), "aria-label": t("orgs.nameLabel") }),
    h("button", { class: "primary" }, t("orgs.create"))) as HTMLFormElement;
  page.replaceChildren(h("h2", {}, t("orgs.title")), err, ok, joinCard,
    h("div", { class: "row" }, pick, create), view);
  const act = async (fn: () => Promise<string | void>) => {
    err.textContent = ""; ok.textContent = "";
    try { ok.textContent = (await fn()) ?? ""; } catch (e) { err.textContent = describe(e); }
  };
  const load = async (want = localStorage.getItem(selectedKey) ?? "") => {
    const r = await orgs.listOrganizations({});
    pick.replaceChildren(...r.memberships.map((m) => h("option", { value: m.organization!.organizationId },
      t("orgs.membership", { name: m.organization!.name, role: roleName(m.role) }))));
    pick.hidden = !r.memberships.length;
    if (!r.memberships.length) { view.replaceChildren(h("p", { class: "muted" }, t("orgs.none"))); return; }
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
      return t("orgs.created", { name: r.organization!.name });
    });
  };

  const showOrg = async (id: string) => {
    localStorage.setItem(selectedKey, id);
    view.textContent = t("pages.loading");
    const o = await orgs.getOrganization({ organizationId: id });
    const role = o.role;
    const [members, teams, budgets] = await Promise.all([
      orgs.listMembers({ organizationId: id }),
      orgs.listTeams({ organizationId: id }),
      readsBill(role) ? orgs.listBudgets({ organizationId: id }) : undefined,
    ]);
    // Those who read the bill list every key; a member its own and its teams'.
    const keyLists = await Promise.all([undefined, ...(readsBill(role) ? [] : teams.teams.map((tm) => tm.teamId))]
      .map((teamId) => orgs.listOrganizationApiKeys({ organizationId: id, teamId, pageSize: 100 })));
    const keys = [...new Map(keyLists.flatMap((l) => l.keys).map((k) => [k.apiKey!.keyId, k])).values()];
    const budgetOf = (scope: BudgetScope, scopeId: string) => budgets?.budgets.find((b) => b.scope === scope && b.scopeId === scopeId);
    const teamName = new Map(teams.teams.map((tm) => [tm.teamId, tm.name]));
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
    h("h3", { translate: "no" }, o.organization!.name),
    h("p", {}, t("orgs.yourRole"), " ", h("strong", { id: "org-role" }, roleName(o.role)), h("span", { class: "muted" }, ` · ${t("orgs.resetMidnight", { tz: o.organization!.timeZone })}`)),
    o.balance ? h("p", { id: "org-balance" }, t("orgs.balance"), " ", h("strong", {}, usd(o.balance.balanceNanos)),
      o.balance.reservedNanos ? h("span", { class: "muted" }, ` ${t("usage.held", { amount: usd(o.balance.reservedNanos) })}`) : "",
      h("span", { class: "muted" }, ` · ${t("orgs.operatorTopup")}`)) : "");

  const membersSection = (id: string, role: OrganizationRole, list: Member[], teams: Team[]) => {
    const sec = h("section", { id: "org-members" }, h("h3", {}, t("orgs.members")),
      h("div", { class: "table" }, h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, t("orgs.member")), h("th", {}, t("orgs.role")))),
        h("tbody", {}, ...list.map((m) => h("tr", {}, h("td", { translate: "no" }, m.email), h("td", {}, roleName(m.role))))))));
    if (!manages(role)) return sec;
    const roles = [OrganizationRole.MEMBER, OrganizationRole.ADMIN, OrganizationRole.BILLING_READER, ...(role === OrganizationRole.OWNER ? [OrganizationRole.OWNER] : [])];
    const form = h("form", { id: "org-invite-form", class: "row" },
      h("select", { name: "role", "aria-label": t("orgs.role") }, ...roles.map((r) => h("option", { value: r }, roleName(r)))),
      h("select", { name: "team", "aria-label": t("orgs.team") }, h("option", { value: "" }, t("orgs.noTeam")), ...teams.map((tm) => h("option", { value: tm.teamId }, t("orgs.teamOption", { name: tm.name })))),
      h("input", { name: "email", type: "email", placeholder: t("orgs.emailPlaceholder"), "aria-label": t("orgs.emailLabel") }),
      h("label", {}, t("orgs.people"), " ", h("input", { name: "uses", type: "number", min: 1, max: 1000, value: 1, required: true })),
      h("button", { class: "primary" }, t("orgs.createLink"))) as HTMLFormElement;
    const link = h("div", { id: "org-invite-link", class: "secret", hidden: true });
    const invites = h("div", { id: "org-invites" });
    const listInvites = async () => {
      const r = await orgs.listOrganizationInvitations({ organizationId: id });
      const now = Date.now();
      invites.replaceChildren(r.invitations.length ? h("div", { class: "table" }, h("table", {},
        h("thead", {}, h("tr", {}, h("th", {}, t("orgs.link")), h("th", {}, t("orgs.role")), h("th", {}, t("orgs.for")), h("th", {}, t("orgs.used")), h("th", {}, t("orgs.state")), h("th", {}))),
        h("tbody", {}, ...r.invitations.map((inv) => {
          const state = inv.revokeTime ? t("orgs.invite.revoked") : timestampMs(inv.expireTime!) <= now ? t("orgs.invite.expired")
            : inv.uses >= inv.maxUses ? t("orgs.invite.usedUp") : t("orgs.invite.until", { when: when(timestampMs(inv.expireTime!)) });
          const teamOf = inv.teamId ? teams.find((tm) => tm.teamId === inv.teamId)?.name : undefined;
          return h("tr", {}, h("td", {}, h("code", { translate: "no" }, `${inv.prefix}…`)),
            h("td", {}, roleName(inv.role), inv.teamId ? " · " : "", inv.teamId ? (teamOf !== undefined ? h("span", { translate: "no" }, teamOf) : t("orgs.someTeam")) : ""),
            h("td", {}, inv.email ? h("span", { translate: "no" }, inv.email) : t("orgs.anyone")), h("td", {}, `${num(inv.uses)} / ${num(inv.maxUses)}`), h("td", {}, state),
            h("td", {}, inv.revokeTime ? "" : h("button", { type: "button", onclick: () => act(async () => {
              await orgs.revokeOrganizationInvitation({ organizationId: id, invitationId: inv.invitationId });
              await listInvites();
              return t("orgs.linkRevoked");
            }) }, t("orgs.revoke"))));
        })))) : h("p", { class: "muted" }, t("orgs.noLinks")));
    };
    form.onsubmit = (e) => {
      e.preventDefault();
      const f = new FormData(form);
      act(async () => {
        const r = await orgs.createOrganizationInvitation({ organizationId: id, role: Number(f.get("role")), teamId: String(f.get("team")),
          email: String(f.get("email") ?? ""), maxUses: BigInt(Number(f.get("uses")) || 1), ttl: durationFromMs(7 * 86400_000) });
        const url = `${location.origin}/join/${r.code}`;
        const copy = h("button", { type: "button", onclick: () => navigator.clipboard?.writeText(url) }, t("orgs.copy"));
        link.replaceChildren(h("p", {}, h("strong", {}, t("orgs.sendLink")), " ", t("orgs.linkNote")),
          h("div", { class: "row" }, h("code", { id: "org-invite-url", translate: "no" }, url), copy));
        link.hidden = false;
        await listInvites();
      });
    };
    sec.append(h("h4", {}, t("orgs.inviteByLink")), form, link, invites);
    listInvites().catch((e) => { err.textContent = describe(e); });
    return sec;
  };

  const teamsSection = (id: string, role: OrganizationRole, teams: Team[], budgetOf: (s: BudgetScope, id: string) => Budget | undefined) => {
    const sec = h("section", { id: "org-teams" }, h("h3", {}, t("orgs.teams")),
      teams.length ? h("div", { class: "table" }, h("table", {},
        h("thead", {}, h("tr", {}, h("th", {}, t("orgs.team")), readsBill(role) ? h("th", {}, t("orgs.budget")) : "")),
        h("tbody", {}, ...teams.map((tm) => h("tr", { "data-team": tm.name }, h("td", { translate: "no" }, tm.name),
          readsBill(role) ? h("td", {}, budgetCell(budgetOf(BudgetScope.TEAM, tm.teamId))) : ""))))) :
        h("p", { class: "muted" }, manages(role) ? t("orgs.noTeams") : t("orgs.inNoTeam")));
    if (!manages(role)) return sec;
    const form = h("form", { id: "org-team-form", class: "row" },
      h("input", { name: "name", required: true, maxlength: 100, placeholder: t("orgs.teamName"), "aria-label": t("orgs.teamName") }),
      h("label", {}, t("orgs.budgetDollars"), h("input", { name: "budget", type: "number", min: 0, step: "0.01", placeholder: t("orgs.budgetNone"), class: "amount", "aria-label": t("orgs.budgetInDollars") })),
      periodSelect("period"),
      h("button", { class: "primary" }, t("orgs.createTeam"))) as HTMLFormElement;
    form.onsubmit = (e) => {
      e.preventDefault();
      const f = new FormData(form);
      act(async () => {
        const made = await orgs.createTeam({ organizationId: id, name: String(f.get("name")) });
        if (String(f.get("budget") ?? "") !== "") {
          await orgs.setBudget({ organizationId: id, scope: BudgetScope.TEAM, scopeId: made.team!.teamId, period: Number(f.get("period")), limitNanos: nanos(f.get("budget")) });
        }
        await showOrg(id);
        return t("orgs.teamCreated", { name: made.team!.name });
      });
    };
    sec.append(form);
    return sec;
  };

  const keysSection = async (id: string, role: OrganizationRole, keys: OrganizationApiKey[],
    teams: Team[], teamName: Map<string, string>, email: Map<string, string>, budgetOf: (s: BudgetScope, id: string) => Budget | undefined) => {
    const sec = h("section", { id: "org-keys" }, h("h3", {}, t("orgs.apiKeys")),
      h("p", { class: "muted" }, t("orgs.keysNote")),
      keys.length ? h("div", { class: "table" }, h("table", {},
        h("thead", {}, h("tr", {}, h("th", {}, t("orgs.key")), h("th", {}, t("orgs.team")), h("th", {}, t("orgs.models")), h("th", {}, t("orgs.rate")), h("th", {}, t("orgs.madeBy")), readsBill(role) ? h("th", {}, t("orgs.budget")) : "", h("th", {}, t("orgs.expires")))),
        h("tbody", {}, ...keys.map((k) => h("tr", { "data-key": k.apiKey!.name },
          h("td", { translate: "no" }, k.apiKey!.name, h("div", { class: "muted" }, h("code", {}, `${k.apiKey!.prefix}…`))),
          h("td", { translate: k.teamId ? "no" : undefined }, k.teamId ? teamName.get(k.teamId) ?? "—" : t("orgs.ownKey")),
          h("td", { class: "models", translate: k.models.length ? "no" : undefined }, k.models.length ? k.models.join(", ") : t("orgs.allModels")),
          h("td", {}, k.requestsPerMinute ? t("orgs.perMinute", { n: num(k.requestsPerMinute) }) : "—"),
          h("td", { translate: "no" }, email.get(k.createdBy) ?? "—"),
          readsBill(role) ? h("td", {}, budgetCell(budgetOf(BudgetScope.KEY, k.apiKey!.keyId))) : "",
          h("td", {}, k.apiKey!.expiresAt ? timeEl(timestampMs(k.apiKey!.expiresAt)) : "")))))) :
        h("p", { class: "muted" }, t("orgs.noKeys")));
    if (role === OrganizationRole.BILLING_READER) return sec;
    let chatModels: string[] = [];
    try { chatModels = (await models.listModels({})).models.filter((m) => m.kind !== ModelKind.EMBEDDING).map((m) => m.id); } catch { /* the form offers "all" */ }
    const form = h("form", { id: "org-key-form", class: "row" },
      h("input", { name: "name", required: true, maxlength: 100, placeholder: t("orgs.keyName"), "aria-label": t("orgs.keyName") }),
      h("select", { name: "team", "aria-label": t("orgs.keyTeam") }, h("option", { value: "" }, t("orgs.myOwnKey")), ...teams.map((tm) => h("option", { value: tm.teamId }, t("orgs.teamOption", { name: tm.name })))),
      h("select", { name: "model", "aria-label": t("orgs.keyModels") }, h("option", { value: "" }, t("orgs.allModelsOption")), ...chatModels.map((m) => h("option", { value: m }, t("orgs.onlyModel", { model: m })))),
      h("label", {}, t("orgs.rpm"), " ", h("input", { name: "rpm", type: "number", min: 0, placeholder: t("orgs.rpmAny"), class: "amount" })),
      h("label", {}, t("orgs.budgetDollars"), h("input", { name: "budget", type: "number", min: 0, step: "0.01", placeholder: t("orgs.budgetNone"), class: "amount", "aria-label": t("orgs.keyBudgetInDollars") })),
      periodSelect("period"),
      h("button", { class: "primary" }, t("orgs.createKey"))) as HTMLFormElement;
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
        s.replaceChildren(h("p", {}, h("strong", {}, t("orgs.copySecret")), " ", t("orgs.notShownAgain")),
          h("div", { class: "row" }, h("code", { id: "org-key-value", translate: "no" }, r.secret), h("button", { type: "button", onclick: () => navigator.clipboard?.writeText(r.secret) }, t("orgs.copy"))));
        s.hidden = false;
      });
    };
    sec.append(form, secret);
    return sec;
  };

  const usageSection = (id: string) => {
    const charts = h("div", { id: "org-usage" }, t("pages.loading"));
    const days = lastDays(14);
    const start = new Date(); start.setHours(0, 0, 0, 0); start.setDate(start.getDate() - 13);
    orgs.getOrganizationUsage({ organizationId: id, startTime: timestampFromMs(start.getTime()) }).then(
      (r) => charts.replaceChildren(r.buckets.length ? usageCharts(r.buckets, days) : h("p", { class: "muted" }, t("usage.noUsage", { n: num(days.length) }))),
      (e) => { charts.textContent = "—"; err.textContent = describe(e); });
    // by is the server's group_by value; the link shows its name.
    const csv = (by: string, label: MessageId) => h("a", { href: `/export/organizations/${encodeURIComponent(id)}/usage.csv?group_by=${by}&start_time=${days[0]}`, download: "" }, t(label));
    return h("section", { id: "org-usage-section" }, h("h3", {}, t("orgs.usage")), charts,
      h("p", { class: "muted" }, t("orgs.csvBy"), " ", csv("model", "orgs.csv.model"), " · ", csv("key", "orgs.csv.key"), " · ",
        csv("team", "orgs.csv.team"), " · ", csv("member", "orgs.csv.member")));
  };

  await act(() => load());
  // An invitation link: say what it offers, join on one click.
  if (join) {
    try {
      const offer = await orgs.getOrganizationInvitation({ code: join });
      const org = offer.organizationName;
      joinCard.replaceChildren(h("div", { class: "secret" },
        h("p", {}, offer.alreadyMember ? t("orgs.alreadyMember", { org })
          : offer.teamName ? t("orgs.invitedTeam", { org, role: roleName(offer.role), team: offer.teamName })
          : t("orgs.invited", { org, role: roleName(offer.role) })),
        offer.alreadyMember ? "" : h("button", { id: "org-join-btn", class: "primary", type: "button", onclick: () => act(async () => {
          const r = await orgs.acceptOrganizationInvitation({ code: join });
          joinCard.replaceChildren();
          await load(r.membership!.organization!.organizationId);
          return t("orgs.joined", { org: r.membership!.organization!.name });
        }) }, t("orgs.join", { org }))));
    } catch (e) { err.textContent = t("orgs.badLink", { error: describe(e) }); }
  }
}
