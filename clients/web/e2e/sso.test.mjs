// End-to-end: single sign-on in the web app, in headless Chromium against the
// real binary. With --oidc-issuer set the sign-in form offers the provider by
// name and sends the browser to the gateway's sign-in path, keeping where the
// person was; a sign-in that fails comes back to the form with the reason.
// (The whole flow through a real provider is server/e2e/sso_test.go's.) The
// sign-up form states the password rule.
import { test as nodeTest, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, launch, haveChromium, shotOnFail, freePort } from "./harness.mjs";

const skip = haveChromium ? false : "no Chromium at /usr/bin/chromium (apt-get install chromium)";
let srv, browser, page;
const test = shotOnFail(nodeTest, () => [page]);

before(async () => {
  if (skip) return;
  // A provider no one runs: discovery fails, and the gateway says so.
  const idp = `http://127.0.0.1:${await freePort()}`;
  srv = await startServer(["--oidc-issuer", idp, "--oidc-client-id", "parley", "--oidc-client-secret", "s",
    "--oidc-redirect-url", "http://127.0.0.1:1/auth/oidc/callback", "--oidc-name", "Acme SSO"]);
  browser = await launch();
  page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  page.on("pageerror", (e) => console.error("page error:", e));
});
after(async () => {
  await browser?.close();
  await srv?.stop();
});

test("the form offers the provider by name, keeping the page to come back to", { skip }, async () => {
  await page.goto(srv.url + "/#/c/123");
  const sso = page.locator("#sso-login");
  await sso.waitFor({ state: "visible" });
  assert.equal(await sso.textContent(), "Sign in with Acme SSO");
  assert.equal(await sso.getAttribute("href"), "/auth/oidc/login?return=" + encodeURIComponent("/#/c/123"));
  assert.ok(await page.locator("#password-rule").isVisible(), "sign-up states the password rule");
  assert.match(await page.textContent("#password-rule"), /at least 10 characters/i);
});

test("a failed sign-in comes back to the form with the reason, once", { skip }, async () => {
  await page.click("#sso-login");
  await page.locator("#auth-error", { hasText: "identity provider cannot be reached" }).waitFor();
  assert.equal(new URL(page.url()).search, "", "the reason leaves the address bar");
  await page.reload();
  await page.locator("#sso-login").waitFor({ state: "visible" });
  assert.equal(await page.textContent("#auth-error"), "");
});
