// End-to-end: Memory in the web app, against the real binary. Save a memory
// on the settings page; a chat answer says "Used 1 memory" and lists it;
// Remember on a message saves it; edit and delete; bad input reads as
// words; memory off, an answer uses none; after a reload the switch stays
// off and the memories stay; the phone layout and dark mode.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, launch, shot, haveChromium, cspViolations, shotOnFail } from "./harness.mjs";

const skip = haveChromium ? false : "no Chromium at /usr/bin/chromium (apt-get install chromium)";
let srv, browser, context, page;
const password = "correct horse battery";
const veg = "I am vegetarian and cook for two.";
const question = "Suggest a vegetarian dinner";
const edited = "I like quick weeknight dinners.";
const markup = "Note <img src=x onerror=alert(1)> and <b>bold</b>"; // shown as text, never as HTML
const t = shotOnFail(test, () => [page]);

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

const memoryTexts = () => page.locator("#memory-list li[data-memory-id] .memory-text").allTextContents();
async function openSettings() {
  await page.goto(srv.url + "/#/settings");
  await page.locator("#main").waitFor();
  await page.locator("#memory-enabled:not([disabled])").waitFor();
  await page.locator("#memory-list li:not(:has-text('Loading'))").first().waitFor();
}
async function ask(text) {
  await page.goto(srv.url + "/#/");
  await page.locator(".empty").waitFor();
  await page.fill("#input", text);
  await page.keyboard.press("Enter");
  await page.waitForURL(/#\/c\/.+/);
  await page.locator(".msg.assistant").waitFor();
  await page.waitForFunction(() => !document.querySelector(".msg.assistant.streaming") && !!document.querySelector(".msg.assistant .md")?.textContent, null, { timeout: 60_000 });
  return page.locator(".msg.assistant").last();
}

t("save a memory on the settings page", { skip }, async () => {
  await page.goto(srv.url + "/");
  await page.locator("#auth-form").waitFor();
  await page.fill("input[name=email]", `memory-${Date.now()}@example.com`);
  await page.fill("input[name=password]", password);
  await page.fill("input[name=display_name]", "Memory User");
  await page.click("#auth-submit");
  await page.locator("#main").waitFor();
  await openSettings();
  const sw = page.getByRole("switch", { name: "Use memories in chats" });
  assert.equal(await sw.isChecked(), true, "memory is on by default");
  assert.match(await page.textContent("#memory-list"), /No memories yet/);
  await page.getByLabel("Add memory", { exact: true }).fill(veg);
  await page.keyboard.press("Enter");
  await page.locator("#memory-list .memory-text", { hasText: veg }).waitFor();
  assert.equal(await page.inputValue("#memory-new"), "", "the field is emptied");
  assert.equal(await page.evaluate(() => document.activeElement?.id), "memory-new", "the focus stays in the field");
});

t("an answer that used the memory says so and lists it", { skip }, async () => {
  const answer = await ask(question);
  const note = answer.locator(".memories-used summary");
  await note.waitFor();
  assert.equal((await note.textContent()).trim(), "✦ Used 1 memory");
  await note.click();
  await answer.locator(".memories-used-list li", { hasText: veg }).waitFor();
  await shot(page, "memory-01-used");
});

t("Remember on a message saves it; it is listed in settings", { skip }, async () => {
  const mine = page.locator(".msg.user").last();
  await mine.hover();
  await mine.getByRole("button", { name: "Remember this message" }).click();
  await page.locator("#remember-dialog[open]").waitFor();
  assert.equal(await page.evaluate(() => document.activeElement?.id), "remember-text", "the dialog focuses its text");
  assert.equal(await page.inputValue("#remember-text"), question, "prefilled with the message");
  await page.click("#remember-save");
  await page.locator("#toast", { hasText: "Saved to memory" }).waitFor();
  assert.equal(await page.locator("#remember-dialog[open]").count(), 0, "the dialog closes");
  // An answer longer than a memory is cut to 1000 characters.
  await page.evaluate(() => window.parleyStream("word ".repeat(300), 400));
  await page.locator(".msg.assistant:not(.streaming)").last().getByRole("button", { name: "Remember this answer" }).click();
  assert.equal((await page.inputValue("#remember-text")).length, 1000);
  await page.click("#remember-cancel");
  await page.locator("#remember-dialog[open]").waitFor({ state: "detached" });

  await openSettings();
  assert.deepEqual(await memoryTexts(), [question, veg], "newest first");
});

t("edit one, delete one; bad input reads as words", { skip }, async () => {
  await page.getByRole("button", { name: `Edit memory: ${question}` }).click();
  const field = page.getByRole("textbox", { name: "Edit memory" });
  await field.fill(edited);
  await field.press("Enter");
  await page.locator("#memory-list .memory-text", { hasText: edited }).waitFor();
  assert.deepEqual(await memoryTexts(), [edited, veg]);

  // Markup is shown as text; then it is deleted.
  await page.fill("#memory-new", markup);
  await page.click("#memory-add");
  await page.locator("#memory-list .memory-text", { hasText: "<b>bold</b>" }).waitFor();
  assert.equal(await page.locator("#memory-list img, #memory-list b").count(), 0, "memory text made elements");
  await page.getByRole("button", { name: /^Delete memory: Note / }).click(); // confirm() is accepted
  await page.locator("#memory-list .memory-text", { hasText: "bold" }).waitFor({ state: "detached" });

  await page.fill("#memory-new", "m".repeat(1001));
  assert.match(await page.textContent("#memory-new-count"), /1,001 \/ 1,000/);
  await page.click("#memory-add");
  assert.match(await page.textContent("#memory-add-error"), /A memory can be at most 1,000 characters; this one has 1,001\./);
  assert.equal(await page.getAttribute("#memory-new", "aria-invalid"), "true");
  await page.fill("#memory-new", "   ");
  await page.click("#memory-add");
  assert.match(await page.textContent("#memory-add-error"), /Write something to remember/);
  assert.deepEqual(await memoryTexts(), [edited, veg], "nothing more was saved");
  await shot(page, "memory-02-settings");
});

t("memory off: an answer uses none; after a reload it stays off, the memories stay", { skip }, async () => {
  await page.focus("#memory-enabled");
  await page.keyboard.press("Space");
  await page.locator("#memory-state", { hasText: "Off:" }).waitFor();
  await page.locator("#memory-enabled:not([disabled])").waitFor();
  const answer = await ask("Another vegetarian dinner idea?");
  assert.equal(await answer.locator(".memories-used").count(), 0, "no Used … memories note");
  await openSettings();
  await page.reload();
  await page.locator("#memory-enabled:not([disabled])").waitFor();
  await page.locator("#memory-list li[data-memory-id]").first().waitFor();
  assert.equal(await page.getByRole("switch", { name: "Use memories in chats" }).isChecked(), false);
  assert.deepEqual(await memoryTexts(), [edited, veg]);
});

t("phone layout and dark mode", { skip }, async () => {
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, colorScheme: "dark", storageState: await context.storageState() });
  try {
    const p = await phone.newPage();
    await p.goto(srv.url + "/#/settings");
    await p.locator("#memory-list li[data-memory-id]").first().waitFor();
    const overflow = await p.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 0, `the settings page scrolls sideways by ${overflow}px`);
    const bg = await p.evaluate(() => getComputedStyle(document.querySelector(".memory-list")).borderColor);
    assert.equal(bg, "rgb(46, 46, 53)", "the list uses the dark theme's colours");
    await shot(p, "memory-03-phone-dark");
  } finally { await phone.close(); }
});

t("the pages ran under the Content-Security-Policy with no violations", { skip }, async () => {
  assert.deepEqual(cspViolations, [], "pages reported Content-Security-Policy violations");
});
