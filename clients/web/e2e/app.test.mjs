// End-to-end: the web app in headless Chromium against the real binary.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, launch, shot, connectCall, haveChromium, sleep, cspViolations } from "./harness.mjs";

const skip = haveChromium ? false : "no Chromium at /usr/bin/chromium (apt-get install chromium)";
let srv, browser, context, page;
const email = `web-${Date.now()}@example.com`;
const password = "correct horse battery";
let conversationUrl = "";

before(async () => {
  if (skip) return;
  srv = await startServer();
  browser = await launch();
  context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await context.newPage();
  page.on("dialog", (d) => d.accept());
  page.on("pageerror", (e) => console.error("page error:", e));
});
after(async () => {
  await browser?.close();
  await srv?.stop();
});

/** Records every distinct text the last assistant message shows, in the page. */
async function watchAnswers(p) {
  await p.evaluate(() => {
    const w = window;
    w.__texts = [];
    w.__obs?.disconnect();
    w.__obs = new MutationObserver(() => {
      const all = document.querySelectorAll(".msg.assistant .md");
      const t = all.length ? all[all.length - 1].textContent : "";
      if (t && t !== w.__texts[w.__texts.length - 1]) w.__texts.push(t);
    });
    w.__obs.observe(document.getElementById("messages"), { subtree: true, childList: true, characterData: true });
  });
}
const assistantCount = (p) => p.locator(".msg.assistant").count();
const lastAnswer = (p) => p.locator(".msg.assistant .md").last().textContent();
async function waitIdle(p) {
  await p.locator("#send").waitFor({ state: "visible", timeout: 30_000 });
  await p.waitForFunction(() => !document.querySelector(".msg.assistant.streaming"), null, { timeout: 30_000 });
}

test("sign up", { skip }, async () => {
  await page.goto(srv.url + "/");
  await page.locator("#auth-form").waitFor();
  await shot(page, "01-signup");
  await page.fill("input[name=email]", email);
  await page.fill("input[name=password]", password);
  await page.fill("input[name=display_name]", "Web Test");
  await page.click("#auth-submit");
  await page.locator("#main").waitFor();
  assert.match(await page.textContent("#me"), /Web Test · Free/);
  // The model picker says which models are simulated.
  const options = await page.locator("#model option").allTextContents();
  assert.ok(options.length > 0 && options.every((o) => /simulated/i.test(o)), options.join(", "));
});

test("send: the answer streams in token by token", { skip }, async () => {
  await watchAnswers(page);
  await page.fill("#input", "Tell me about the White Rabbit.");
  await page.keyboard.press("Enter"); // Enter sends
  await page.waitForURL(/#\/c\/.+/);
  conversationUrl = page.url();
  await waitIdle(page);
  const texts = await page.evaluate(() => window.__texts);
  const final = await lastAnswer(page);
  const intermediate = new Set(texts.filter((t) => t !== final));
  assert.ok(intermediate.size >= 2, `only ${intermediate.size} intermediate texts: ${JSON.stringify(texts).slice(0, 300)}`);
  for (const t of intermediate) assert.ok(final.startsWith(t.replace(/▍$/, "").trimEnd().slice(0, 20)), "answer grows from its start");
  assert.ok(final.length > 20);
  // The conversation appears in the list, titled by the first message.
  await page.locator("#conv-list li.active").waitFor();
  await shot(page, "02-answer");
});

test("stop (Esc) keeps the partial answer", { skip }, async () => {
  let stopped = false;
  for (let attempt = 0; attempt < 6 && !stopped; attempt++) {
    const before = await assistantCount(page);
    await page.fill("#input", `Keep talking, please (${attempt}).`);
    await page.click("#send");
    await page.waitForFunction((n) => {
      const a = document.querySelectorAll(".msg.assistant .md");
      return a.length > n && a[a.length - 1].textContent.length > 0;
    }, before, { polling: "raf", timeout: 30_000 });
    await page.keyboard.press("Escape");
    await waitIdle(page);
    stopped = (await page.locator(".msg.assistant").last().locator(".note").textContent().catch(() => "")) === "Stopped.";
  }
  assert.ok(stopped, "no answer was stopped before it finished");
  await shot(page, "03-stopped");
});

test("reload shows the history", { skip }, async () => {
  const users = await page.locator(".msg.user").count();
  const answers = await page.locator(".msg.assistant .md").allTextContents();
  await page.reload();
  await page.locator("#main").waitFor();
  await page.waitForFunction((n) => document.querySelectorAll(".msg.assistant").length === n, answers.length);
  assert.equal(await page.locator(".msg.user").count(), users);
  const again = await page.locator(".msg.assistant .md").allTextContents();
  assert.deepEqual(again.map((s) => s.trim()), answers.map((s) => s.trim()));
  assert.equal(await page.locator(".msg.assistant .note").last().textContent(), "Stopped.");
  await shot(page, "04-reloaded");
});

test("close the page mid-answer, reopen, see the whole answer", { skip }, async () => {
  const before = await assistantCount(page);
  await page.fill("#input", "One more story, please.");
  await page.click("#send");
  await page.waitForFunction((n) => {
    const a = document.querySelectorAll(".msg.assistant .md");
    return a.length > n && a[a.length - 1].textContent.length > 0;
  }, before, { polling: "raf", timeout: 30_000 });
  const partial = (await lastAnswer(page)).replace(/▍$/, "");
  const url = page.url();
  await page.close();

  page = await context.newPage();
  page.on("dialog", (d) => d.accept());
  await page.goto(url);
  await page.locator("#main").waitFor();
  await page.waitForFunction((n) => document.querySelectorAll(".msg.assistant").length === n + 1, before, { timeout: 30_000 });
  await waitIdle(page);
  const full = await lastAnswer(page);
  assert.ok(full.length > partial.length, `full ${full.length} chars, partial ${partial.length}`);
  assert.ok(full.startsWith(partial.trimEnd().slice(0, 40)), "the answer continues what was shown before");
  assert.equal(await page.locator(".msg.assistant").last().locator(".note").count(), 0, "finished normally");
  await shot(page, "05-resumed");
});

test("conversation list: rename and archive", { skip }, async () => {
  const li = page.locator("#conv-list li.active");
  await li.locator(".more").click();
  await li.locator(".rename").click();
  await page.fill(".rename-input", "Rabbit chat");
  await page.keyboard.press("Enter");
  await page.locator("#conv-list li.active .title", { hasText: "Rabbit chat" }).waitFor();
  await page.reload();
  await page.locator("#conv-list li .title", { hasText: "Rabbit chat" }).waitFor();
});

test("limits panel", { skip }, async () => {
  await page.click("#limits-btn");
  await page.locator("#limits-body table").waitFor();
  const text = await page.textContent("#limits-body");
  assert.match(text, /Free tier/);
  assert.match(text, /output tokens/);
  assert.match(text, /unused|whole again/);
  assert.doesNotMatch(text, /\bfull\b/);
  await shot(page, "06-limits");
  await page.click("#limits button");
});

test("API keys: create (secret shown once), use, revoke", { skip }, async () => {
  await page.click("#keys-btn");
  await page.locator("#keys-page").waitFor();
  await page.fill("#key-form input[name=name]", "ci key");
  await page.fill("#key-form input[name=days]", "7");
  await page.selectOption("#key-form select[name=cache]", "off");
  await page.click("#key-form button");
  await page.locator("#key-secret").waitFor();
  const secret = await page.textContent("#secret-value");
  assert.match(secret, /^pk_/);
  await page.locator("#key-rows tr", { hasText: "ci key" }).waitFor();
  assert.equal(await page.locator("#key-rows tr", { hasText: "ci key" }).locator("td").nth(5).textContent(), "off", "the key's response cache setting");
  await shot(page, "07-keys");
  const me = await connectCall(srv.url, "AuthService/GetMe", {}, { authorization: `Bearer ${secret}` });
  assert.equal(me.status, 200, JSON.stringify(me.body));

  await page.locator("#key-rows tr", { hasText: "ci key" }).locator(".revoke").click();
  await page.locator("#key-rows tr.revoked", { hasText: "ci key" }).waitFor();
  let status = 200;
  for (let i = 0; i < 40 && status === 200; i++) {
    status = (await connectCall(srv.url, "AuthService/GetMe", {}, { authorization: `Bearer ${secret}` })).status;
    if (status === 200) await sleep(250);
  }
  assert.equal(status, 401, "the revoked key is refused");
});

test("upload an image", { skip }, async (t) => {
  // AttachmentService may not be wired yet on this build: skip then.
  const probe = await connectCall(srv.url, "AttachmentService/GetAttachment", { attachmentId: "x" });
  if (probe.status === 501 || probe.body.code === "unimplemented") return t.skip("AttachmentService is not implemented by this server");
  await page.goto(conversationUrl);
  await page.locator("#main").waitFor();
  // A 2400×1600 PNG made in the page; the app shrinks it to fit 1280×1280.
  const b64 = await page.evaluate(() => {
    const c = document.createElement("canvas");
    c.width = 2400; c.height = 1600;
    const g = c.getContext("2d");
    const grad = g.createLinearGradient(0, 0, 2400, 1600);
    grad.addColorStop(0, "#3b5bdb"); grad.addColorStop(1, "#f08c00");
    g.fillStyle = grad; g.fillRect(0, 0, 2400, 1600);
    return c.toDataURL("image/png").split(",")[1];
  });
  await page.setInputFiles("#file", { name: "big.png", mimeType: "image/png", buffer: Buffer.from(b64, "base64") });
  await page.locator("#pending .chip.ready").waitFor({ timeout: 30_000 });
  const before = await assistantCount(page);
  await page.fill("#input", "What is in this picture?");
  await page.click("#send");
  await page.waitForFunction((n) => document.querySelectorAll(".msg.assistant").length > n, before, { timeout: 30_000 });
  await waitIdle(page);
  const img = page.locator(".msg.user").last().locator("img.thumb");
  await img.waitFor({ timeout: 10_000 });
  const size = await img.evaluate((el) => [el.naturalWidth, el.naturalHeight]);
  assert.deepEqual(size, [1280, 853]);
  await shot(page, "08-upload");
});

test("phone-sized layout", { skip }, async () => {
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, storageState: await context.storageState() });
  const p = await phone.newPage();
  await p.goto(conversationUrl);
  await p.locator(".msg.assistant").first().waitFor();
  const overflow = await p.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.ok(overflow <= 0, `page scrolls sideways by ${overflow}px`);
  assert.ok(await p.locator("#menu").isVisible(), "the conversations menu button shows");
  assert.ok(!(await p.locator("#sidebar").isVisible()) || (await p.locator("#sidebar").boundingBox()).x < 0, "the sidebar is tucked away");
  await shot(p, "09-phone");
  await p.click("#menu");
  await sleep(300);
  await shot(p, "10-phone-menu");
  await phone.close();
});

test("log out", { skip }, async () => {
  await page.click("#logout");
  await page.locator("#auth-form").waitFor();
  await page.reload();
  await page.locator("#auth-form").waitFor();
  assert.ok(await page.locator("#main").isHidden());
});

test("the app ran under its Content-Security-Policy with no violations", { skip }, async () => {
  assert.match((await fetch(srv.url + "/")).headers.get("content-security-policy") ?? "", /script-src 'self';/);
  assert.deepEqual(cspViolations, [], "pages reported Content-Security-Policy violations");
});
