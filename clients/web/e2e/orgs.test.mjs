// End-to-end: organisations in the web app, in headless Chromium against the
// real binary. An owner makes an organisation, a team with a budget, a key
// limited to one model and an invitation link; a second person opens the
// link, signs up, joins, and sees only what a member may see.
import { test as nodeTest, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, launch, haveChromium, shotOnFail, shot, cspViolations, signIn } from "./harness.mjs";

const skip = haveChromium ? false : "no Chromium at /usr/bin/chromium (apt-get install chromium)";
const password = "correct horse battery";
let srv, browser, owner, member;
const test = shotOnFail(nodeTest, () => [owner, member]);

before(async () => {
  if (skip) return;
  srv = await startServer();
  browser = await launch();
  owner = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  member = await (await browser.newContext({ viewport: { width: 390, height: 844 } })).newPage();
  for (const p of [owner, member]) p.on("pageerror", (e) => console.error("page error:", e));
});
after(async () => {
  await browser?.close();
  await srv?.stop();
});

const signUp = (p, email) => signIn(p, email, password, { signUp: true });

let link = "", secret = "";
test("an owner makes an organisation, a team with a budget, a one-model key and a link", { skip }, async () => {
  await owner.goto(srv.url + "/");
  await signUp(owner, "owner@example.com");
  await owner.click("#orgs-btn");
  await owner.locator("#org-create").waitFor();
  await owner.fill("#org-create input[name=name]", "Initech");
  await owner.click("#org-create button");
  await owner.locator("#org-role", { hasText: "owner" }).waitFor();
  assert.match(await owner.textContent("#org-balance"), /\$0\.00/);

  await owner.fill("#org-team-form input[name=name]", "research");
  await owner.fill("#org-team-form input[name=budget]", "5");
  await owner.click("#org-team-form button");
  const team = owner.locator("#org-teams tr[data-team=research]");
  await team.waitFor();
  assert.match(await team.textContent(), /\$0\.00 of \$5\.00 monthly/);

  await owner.fill("#org-key-form input[name=name]", "small only");
  await owner.selectOption("#org-key-form select[name=team]", { label: "team research" });
  await owner.selectOption("#org-key-form select[name=model]", { label: "only sim-small" });
  await owner.fill("#org-key-form input[name=rpm]", "60");
  await owner.click("#org-key-form button");
  await owner.locator("#org-key-value").waitFor();
  secret = await owner.textContent("#org-key-value");
  const key = owner.locator("#org-keys tr[data-key='small only']");
  assert.equal(await key.locator("td.models").textContent(), "sim-small");
  assert.match(await key.textContent(), /research.*60\/min/);

  await owner.selectOption("#org-invite-form select[name=role]", { label: "member" });
  await owner.selectOption("#org-invite-form select[name=team]", { label: "team research" });
  await owner.click("#org-invite-form button");
  await owner.locator("#org-invite-url").waitFor();
  link = await owner.textContent("#org-invite-url");
  assert.match(link, /\/join\/oinv_[A-Za-z0-9]+$/);
  assert.match(await owner.textContent("#org-invites"), /0 \/ 1/);
  await shot(owner, "orgs-owner");
});

test("the key keeps to its one model", { skip }, async () => {
  const models = await (await fetch(srv.url + "/v1/models", { headers: { authorization: `Bearer ${secret}` } })).json();
  assert.deepEqual(models.data.map((m) => m.id), ["sim-small"]);
  const res = await fetch(srv.url + "/v1/chat/completions", {
    method: "POST", headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "sim-large", max_tokens: 4, messages: [{ role: "user", content: "hi" }] }),
  });
  assert.equal(res.status, 404);
  assert.match((await res.json()).error.message, /may not use/);
});

test("the invited person signs up through the link, joins, and sees a member's view", { skip }, async () => {
  await member.goto(link);
  await signUp(member, "member@example.com");
  await member.locator("#org-join-btn").waitFor();
  assert.match(await member.textContent("#org-join"), /join Initech as member and its team research/);
  assert.equal(new URL(member.url()).pathname, "/", "the code leaves the address bar");
  await member.click("#org-join-btn");
  await member.locator("#org-role", { hasText: "member" }).waitFor();
  // Its team and the team's key, no money, no management.
  await member.locator("#org-teams tr[data-team=research]").waitFor();
  assert.equal(await member.locator("#org-keys tr[data-key='small only']").count(), 1);
  for (const hidden of ["#org-balance", "#org-invite-form", "#org-team-form", "#org-usage-section", "#org-invites"]) {
    assert.equal(await member.locator(hidden).count(), 0, `${hidden} is not shown to a member`);
  }
  assert.doesNotMatch(await member.textContent("#org-teams"), /\$5\.00/, "a member sees no budget");
  assert.equal(await member.locator("#org-key-form").count(), 1, "a member may make its own key");
  await shot(member, "orgs-member-390");
  // The same link again: already a member, nothing to join.
  await member.goto(link);
  await member.locator("#org-join", { hasText: "already a member" }).waitFor();
});

test("the owner sees the member and the link used", { skip }, async () => {
  await owner.reload();
  await owner.locator("#org-members", { hasText: "member@example.com" }).waitFor();
  assert.match(await owner.textContent("#org-invites"), /1 \/ 1.*used up/s);
  assert.deepEqual(cspViolations, []);
});
