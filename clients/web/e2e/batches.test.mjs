// End-to-end: batches in the web app, against the real binary. A user's
// batch (made over the developer API) runs slowly; the admin page lists it
// under Running batches with its owner and progress and cancels it; the
// usage page lists the user's batches with status and cost.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, launch, shot, haveChromium, cspViolations, shotOnFail, parleyAdmin } from "./harness.mjs";

const skip = haveChromium ? false : "no Chromium at /usr/bin/chromium (apt-get install chromium)";
const adminEmail = "batch-admin@example.com";
const password = "correct horse battery";
let srv, browser, page, batchId;
const t = shotOnFail(test, () => [page]);

before(async () => {
  if (skip) return;
  // Real sim time and one line at a time: the batch stays running while the test looks.
  srv = await startServer(["--sim-time-scale", "1", "--batch-concurrency", "1"],
    { before: (dir) => parleyAdmin(dir, ["create-user", "--email", adminEmail, "--password", password, "--admin"]) });
  parleyAdmin(srv.dataDir, ["topup", "--email", adminEmail, "--usd", "5"]);
  const login = await fetch(`${srv.url}/parley.v1.AuthService/Login`, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: adminEmail, password }),
  });
  const cookie = login.headers.get("set-cookie").split(";")[0];
  const key = await (await fetch(`${srv.url}/parley.v1.ApiKeyService/CreateApiKey`, {
    method: "POST", headers: { "content-type": "application/json", cookie }, body: JSON.stringify({ name: "batch" }),
  })).json();
  const lines = Array.from({ length: 40 }, (_, i) => JSON.stringify({ custom_id: `r${i}`, method: "POST", url: "/v1/chat/completions",
    body: { model: "sim-small", max_tokens: 64, messages: [{ role: "user", content: `question ${i}` }] } })).join("\n") + "\n";
  const form = new FormData();
  form.append("purpose", "batch");
  form.append("file", new Blob([lines], { type: "application/jsonl" }), "requests.jsonl");
  const file = await (await fetch(`${srv.url}/v1/files`, { method: "POST", headers: { authorization: `Bearer ${key.secret}` }, body: form })).json();
  const batch = await (await fetch(`${srv.url}/v1/batches`, {
    method: "POST", headers: { authorization: `Bearer ${key.secret}`, "content-type": "application/json" },
    body: JSON.stringify({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" }),
  })).json();
  assert.ok(batch.id?.startsWith("batch_"), JSON.stringify(batch));
  batchId = batch.id;
  browser = await launch();
  page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  page.on("dialog", (d) => d.accept());
  page.on("pageerror", (e) => console.error("page error:", e));
});
after(async () => {
  await browser?.close();
  await srv?.stop();
});

t("the admin page lists the running batch and cancels it", { skip }, async () => {
  await page.goto(srv.url + "/");
  await page.locator("#auth-form").waitFor();
  if ((await page.textContent("#auth-submit")) !== "Log in") await page.click("#auth-toggle");
  await page.fill("input[name=email]", adminEmail);
  await page.fill("input[name=password]", password);
  await page.click("#auth-submit");
  await page.locator("#main").waitFor();
  await page.goto(srv.url + "/#/admin");
  const row = page.locator(`#admin-batches tr[data-batch="${batchId}"]`);
  await row.waitFor();
  assert.equal((await row.locator(".email").textContent()).trim(), adminEmail);
  assert.match(await row.locator(".progress").textContent(), /^\d+ \/ 40/);
  assert.match(await row.locator(".state").textContent(), /validating|in progress/);
  await shot(page, "batches-01-admin");
  await row.locator("button.cancel-batch").click();
  await page.locator("#admin-page .ok", { hasText: `Batch ${batchId} is cancelling` }).waitFor();
});

t("the usage page lists the user's batches with their cost", { skip }, async () => {
  await page.goto(srv.url + "/#/usage");
  const row = page.locator(`#usage-batches tr[data-batch="${batchId}"]`);
  await row.waitFor();
  // The cancel ends it once the running line is done.
  for (let i = 0; i < 40 && !/cancelled/.test(await row.locator(".state").textContent()); i++) {
    await page.waitForTimeout(500);
    await page.goto(srv.url + "/#/admin"); // leave and come back: the page reloads its data
    await page.goto(srv.url + "/#/usage");
    await row.waitFor();
  }
  assert.match(await row.locator(".state").textContent(), /cancelled/);
  assert.match(await row.locator("td").nth(4).textContent(), /^\$/);
  await shot(page, "batches-02-usage");
  await page.goto(srv.url + "/#/admin");
  await page.locator("#admin-batches", { hasText: "No batch is running." }).waitFor();
  assert.deepEqual(cspViolations, []);
});
