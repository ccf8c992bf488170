// End-to-end: the sign-up policy in the web app, in headless Chromium against
// the real binary. Under --signup invite the form asks for a code (filled
// from ?invite=CODE), an admin issues and revokes codes on the admin page;
// under --signup closed the form says so and does not submit.
import { test as nodeTest, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, launch, shot, haveChromium, parleyAdmin, shotOnFail, cspViolations, navClick } from "./harness.mjs";

const skip = haveChromium ? false : "no Chromium at /usr/bin/chromium (apt-get install chromium)";
const password = "correct horse battery";
const adminEmail = `inv-admin-${Date.now()}@example.com`;
let srv, browser, ops, guest;
const test = shotOnFail(nodeTest, () => [ops, guest]);

before(async () => {
  if (skip) return;
  srv = await startServer(["--signup", "invite"], { before: (dir) => parleyAdmin(dir, ["create-user", "--email", adminEmail, "--password", password, "--admin"]) });
  browser = await launch();
  ops = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  guest = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  for (const p of [ops, guest]) p.on("pageerror", (e) => console.error("page error:", e));
});
after(async () => {
  await browser?.close();
  await srv?.stop();
});

async function fillSignUp(p, mail) {
  await p.fill("input[name=email]", mail);
  await p.fill("input[name=password]", password);
  await p.fill("input[name=display_name]", "Invited");
}

test("invite: the form asks for a code and refuses a bad one", { skip }, async () => {
  await guest.goto(srv.url + "/");
  await guest.locator("#invite-row").waitFor({ state: "visible" });
  assert.equal(await guest.textContent("#auth-submit"), "Sign up");
  assert.match(await guest.textContent("#auth-sub"), /by invitation/);
  assert.ok(await guest.locator("input[name=invitation_code]").evaluate((el) => el.required), "the code is required");
  await fillSignUp(guest, "nobody@example.com");
  await guest.fill("input[name=invitation_code]", "inv_not-a-real-code");
  await guest.click("#auth-submit");
  await guest.locator("#auth-error", { hasText: "no such invitation" }).waitFor();
  assert.ok(await guest.locator("#main").isHidden());
  // Log in hides the field.
  await guest.click("#auth-toggle");
  assert.ok(await guest.locator("#invite-row").isHidden());
});

let code = "";
test("admin page: create an invitation, shown once with its link", { skip }, async () => {
  await ops.goto(srv.url + "/");
  await ops.locator("#auth-form").waitFor();
  if ((await ops.textContent("#auth-submit")) !== "Log in") await ops.click("#auth-toggle");
  await ops.fill("input[name=email]", adminEmail);
  await ops.fill("input[name=password]", password);
  await ops.click("#auth-submit");
  await navClick(ops, "#admin-btn");
  await ops.locator("#invite-form").waitFor();
  await ops.locator("#admin-invites", { hasText: "No invitations." }).waitFor();
  await ops.fill("#invite-form input[name=note]", "for the web test");
  await ops.click("#invite-form button");
  await ops.locator("#invite-code-value").waitFor();
  code = (await ops.textContent("#invite-code-value")).trim();
  assert.match(code, /^inv_[0-9A-Za-z]{43}$/);
  assert.equal((await ops.textContent("#invite-link")).trim(), `${srv.url}/?invite=${code}`);
  const row = ops.locator("#admin-invites tbody tr").first();
  await row.waitFor();
  assert.match(await row.textContent(), /for the web test/);
  assert.equal((await row.locator(".uses").textContent()).trim(), "0 / 1");
  assert.equal((await row.locator(".state").textContent()).trim(), "usable");
  await shot(ops, "40-admin-invitations");
});

test("invite: the link fills the code in; the sign-up uses it up", { skip }, async () => {
  await guest.goto(`${srv.url}/?invite=${code}`);
  await guest.locator("#invite-row").waitFor({ state: "visible" });
  assert.equal(await guest.inputValue("input[name=invitation_code]"), code);
  await fillSignUp(guest, "invited@example.com");
  await guest.click("#auth-submit");
  await guest.locator("#main").waitFor();
  assert.match(await guest.textContent("#me"), /Invited · Free/);
  assert.ok(!(await guest.evaluate(() => location.search)).includes("invite"), "the spent code leaves the address bar");
  // The admin sees it used up, and revokes a second one.
  await ops.reload();
  await ops.locator("#admin-invites tbody tr").first().waitFor();
  const used = ops.locator("#admin-invites tbody tr").first();
  assert.equal((await used.locator(".uses").textContent()).trim(), "1 / 1");
  assert.equal((await used.locator(".state").textContent()).trim(), "used up");
  parleyAdmin(srv.dataDir, ["create-invite", "--note", "to revoke"]);
  await ops.reload();
  const spare = ops.locator("#admin-invites tbody tr", { hasText: "to revoke" });
  await spare.waitFor();
  await spare.locator(".revoke-invite").click();
  await ops.locator("#admin-page .ok", { hasText: "is revoked" }).waitFor();
  await ops.waitForFunction(() => [...document.querySelectorAll("#admin-invites tbody tr")].some((tr) => tr.textContent.includes("to revoke") && tr.querySelector(".state").textContent === "revoked"));
});

test("closed: the form says sign-up is closed and does not submit; log in works", { skip }, async () => {
  const closed = await startServer(["--signup", "closed"], { before: (dir) => parleyAdmin(dir, ["create-user", "--email", adminEmail, "--password", password]) });
  try {
    const p = await (await browser.newContext()).newPage();
    await p.goto(closed.url + "/");
    await p.locator("#signup-closed").waitFor({ state: "visible" });
    assert.ok(await p.locator("#auth-submit").isDisabled());
    assert.ok(await p.locator("#invite-row").isHidden());
    await p.click("#auth-toggle");
    assert.ok(await p.locator("#signup-closed").isHidden());
    await p.fill("input[name=email]", adminEmail);
    await p.fill("input[name=password]", password);
    await p.click("#auth-submit");
    await p.locator("#main").waitFor();
  } finally {
    await closed.stop();
  }
});

test("no Content-Security-Policy violations", { skip }, () => {
  assert.deepEqual(cspViolations, []);
});
