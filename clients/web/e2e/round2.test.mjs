// End-to-end: the web chat's second round (the rough edges a daily user
// found), in headless Chromium against the real binary: a send from a second
// tab while the first streams, uploads refused in words a person reads (from
// the picker, drag-and-drop and paste), a send that waits for its uploads,
// pasted images, the header at every width, "jump to latest", answers read
// to screen readers a sentence at a time, the skip link and shortcuts,
// timestamps, the server-rendered share page without JavaScript, and axe-core
// on every page with no serious or critical violation.
import { test as nodeTest, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { startServer, launch, shot, haveChromium, parleyAdmin, shotOnFail, cspViolations, signIn } from "./harness.mjs";

const skip = haveChromium ? false : "no Chromium at /usr/bin/chromium (apt-get install chromium)";
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const password = "correct horse battery";
const adminEmail = "round2-admin@example.com";
let srv, browser, context, page, tab2, extra;
const test = shotOnFail(nodeTest, () => [page, tab2, extra], () => srv?.logs() ?? "");

before(async () => {
  if (skip) return;
  // ~35 tokens a second: answers stream long enough to act during them.
  srv = await startServer(["--sim-time-scale", "2", "--attachment-document-bytes", "2000000", "--auto-titles"], { before: (dir) => parleyAdmin(dir, ["create-user", "--email", adminEmail, "--password", password, "--admin"]) });
  browser = await launch();
  context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: srv.url });
  page = await context.newPage();
  page.on("pageerror", (e) => console.error("page error:", e));
});
after(async () => {
  await browser?.close();
  await srv?.stop();
});

async function logIn(p) {
  await p.goto(srv.url + "/");
  await signIn(p, adminEmail, password);
}
const idle = (p) => p.waitForFunction(() => !document.querySelector(".msg.assistant.streaming") && !document.querySelector("#send").hidden, null, { timeout: 60_000 });
/** axe-core's serious and critical violations on p as it stands. */
async function axe(p, name) {
  await p.evaluate(axeSource); // through the debugger: the page's CSP forbids inline scripts
  const found = await p.evaluate(async () => (await window.axe.run(document, { resultTypes: ["violations"] })).violations
    .filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", ")}`));
  assert.deepEqual(found, [], `axe on ${name}`);
}

test("the header holds at every width, for an admin with every button", { skip }, async () => {
  await logIn(page);
  for (const width of [1440, 1280, 1100, 1024, 900, 720, 390]) {
    await page.setViewportSize({ width, height: 800 });
    await page.waitForTimeout(50);
    const m = await page.evaluate(() => {
      const header = document.querySelector("#chat > header");
      const out = document.getElementById("logout").getBoundingClientRect();
      return { overflow: header.scrollWidth - header.clientWidth, compact: header.classList.contains("compact"), right: out.right, visible: out.width > 0 };
    });
    assert.ok(m.overflow <= 1, `${width} px: the header overflows by ${m.overflow} px`);
    if (m.visible) assert.ok(m.right <= width, `${width} px: Log out ends at ${m.right}`);
    else assert.ok(m.compact, `${width} px: Log out is neither shown nor under ⋯`);
  }
  await page.setViewportSize({ width: 1280, height: 800 });
});

test("a skip link and shortcuts reach the message box; ? lists them", { skip }, async () => {
  // A fresh load of a page that focuses nothing: the first Tab is the skip link.
  await page.goto(srv.url + "/#/usage");
  await page.locator("#usage-page h2").waitFor();
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement.id), "skip-link", "the first tab stop is the skip link");
  await page.goto(srv.url + "/#/");
  await page.locator("#input").waitFor();
  await page.locator("#skip-link").focus();
  await page.keyboard.press("Enter");
  assert.equal(await page.evaluate(() => document.activeElement.id), "input");
  await page.locator("#messages").click();
  await page.keyboard.press("Shift+Escape");
  assert.equal(await page.evaluate(() => document.activeElement.id), "input");
  await page.keyboard.press("Control+k");
  assert.equal(await page.evaluate(() => document.activeElement.id), "search");
  await page.locator("#messages").click();
  await page.keyboard.press("?");
  await page.locator("#shortcuts[open]").waitFor();
  assert.match(await page.textContent("#shortcuts"), /New chat.*Focus the message box.*Search chats.*Copy the last answer.*Stop/s);
  await axe(page, "the shortcuts overlay");
  await page.keyboard.press("Escape");
  await page.locator("#shortcuts").waitFor({ state: "hidden" });
});

let convURL = "";
test("an answer streams into a log, sentences reach a polite live region, jump to latest while it writes", { skip }, async () => {
  await page.setViewportSize({ width: 1280, height: 500 });
  for (const q of ["Tell me about the Cheshire Cat.", "And the Mad Hatter?"]) {
    await page.fill("#input", q);
    await page.keyboard.press("Enter");
    await idle(page);
  }
  convURL = page.url();
  // The model names the new chat after its first exchange, marked as such.
  const id = decodeURIComponent(new URL(convURL).hash.slice("#/c/".length));
  await page.locator(`#conv-list li[data-id="${id}"] .generated`).waitFor({ timeout: 15_000 });
  assert.match(await page.getAttribute(`#conv-list li[data-id="${id}"] a.title`, "title"), /named by the model/);
  assert.equal(await page.getAttribute("#messages", "role"), "log");
  assert.equal(await page.getAttribute("#announcer", "aria-live"), "polite");
  const answer = (await page.locator(".msg.assistant .md").last().textContent()).replace(/\s+/g, " ").trim();
  const heard = (await page.textContent("#announcer")).replace(/\s+/g, " ").trim();
  assert.ok(heard.length > 20 && answer.startsWith(heard.slice(0, 20)), `the live region heard "${heard.slice(0, 60)}" of "${answer.slice(0, 60)}"`);
  assert.ok(await page.locator("#announcer p").count() >= 1, "in sentences (paragraphs), not one node per token");
  // Timestamps on hover.
  assert.match(await page.getAttribute(".msg.user >> nth=0", "title"), /\d{4}|\d:\d\d/);
  // A long answer: scroll up while it writes.
  await page.fill("#input", "Tell me a very long story about the Queen of Hearts.");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => (document.querySelector(".msg.assistant.streaming .md")?.textContent.length ?? 0) > 30, null, { timeout: 30_000 });
  await page.evaluate(() => { const m = document.getElementById("messages"); m.scrollTop = 0; m.dispatchEvent(new Event("scroll")); });
  await page.locator("#jump", { hasText: "Still answering" }).waitFor({ timeout: 5_000 });
  await shot(page, "r2-jump");
  await page.click("#jump");
  assert.ok(await page.evaluate(() => { const m = document.getElementById("messages"); return m.scrollHeight - m.scrollTop - m.clientHeight < 80; }), "at the bottom");
  await idle(page);
  await page.setViewportSize({ width: 1280, height: 800 });
  await axe(page, "a conversation");
});

test("per-chat model settings reach the request: temperature and the longest answer, kept per chat", { skip }, async () => {
  await page.goto(srv.url + "/#/");
  await page.locator("#input").waitFor();
  await page.click("#chat-settings-btn");
  await page.locator("#chat-settings[open]").waitFor();
  assert.match(await page.textContent("#chat-settings-max"), /writes at most [\d,]+ tokens/);
  await page.locator("#chat-settings input[name=temp]").fill("0.2");
  await page.fill("#chat-settings input[name=max]", "7");
  await page.click("#chat-settings button[value=save]");
  await page.locator("#chat-settings-btn.set").waitFor({ timeout: 2_000 }); // the control shows the chat has settings
  const sent = page.waitForRequest((r) => r.url().endsWith("/parley.v1.ConversationService/SendMessage"));
  await page.fill("#input", "Tell me about the Dormouse.");
  await page.keyboard.press("Enter");
  const body = (await sent).postDataBuffer();
  // The gRPC-Web frame's message: field 7 (temperature, a double) and
  // field 4 (max_output_tokens, a varint) as the protobuf encoding writes them.
  const temp = Buffer.alloc(9); temp[0] = (7 << 3) | 1; temp.writeDoubleLE(0.2, 1);
  assert.ok(body.includes(temp), "temperature 0.2 in the request");
  assert.ok(body.includes(Buffer.from([(4 << 3) | 0, 7])), "max_output_tokens 7 in the request");
  await idle(page);
  await page.locator(".msg.assistant .note", { hasText: "length limit" }).last().waitFor();
  // Continue: the same answer goes on, in place.
  const answers = await page.locator(".msg.assistant").count();
  const before = (await page.locator(".msg.assistant .md").last().textContent()).length;
  const continued = page.waitForRequest((r) => r.url().endsWith("/parley.v1.ConversationService/ContinueMessage"));
  await page.locator(".msg.assistant").last().locator(".continue-msg").click();
  await continued;
  await idle(page);
  await page.waitForFunction((n) => document.querySelector(".msg.assistant:last-of-type .md")?.textContent.length > n, before, { timeout: 10_000 });
  assert.equal(await page.locator(".msg.assistant").count(), answers, "the same answer, not a new one");
  await page.reload();
  await page.locator(".msg.assistant").last().waitFor();
  assert.ok((await page.locator(".msg.assistant .md").last().textContent()).length > before, "stored longer");
  // Kept for this chat (moved from the new chat to it), not for the next.
  const chatURL = page.url();
  await page.goto(srv.url + "/#/");
  await page.locator("#input").waitFor();
  assert.ok(!(await page.locator("#chat-settings-btn.set").isVisible()), "a new chat starts with the model's defaults");
  await page.goto(chatURL);
  await page.locator(".msg.assistant").first().waitFor();
  await page.locator("#chat-settings-btn.set").waitFor({ timeout: 2_000 }); // the chat keeps its settings
});

test("thumbs up or down with a note, kept on reload, counted for the admin", { skip }, async () => {
  await page.goto(convURL);
  const last = page.locator(".msg.assistant").last();
  await last.locator(".rate-bad").waitFor();
  await last.locator(".rate-bad").click();
  await last.locator(".rate-bad[aria-pressed=true]").waitFor();
  await last.locator(".feedback-note input").fill("It forgot the Hatter's riddle.");
  await last.locator(".feedback-note button.primary").click();
  await last.locator(".feedback-thanks").waitFor();
  await page.reload();
  await page.locator(".msg.assistant").last().locator(".rate-bad[aria-pressed=true]").waitFor();
  assert.equal(await page.locator(".msg.assistant").last().locator(".rate-good").getAttribute("aria-pressed"), "false");
  await page.goto(srv.url + "/#/admin");
  await page.locator("#admin-feedback table").waitFor();
  assert.match(await page.textContent("#admin-feedback"), /sim-small\s*0\s*1\s*0%.*It forgot the Hatter's riddle\./s);
  await page.goto(convURL);
});

test("saved prompts: made in Settings, inserted with / and a name", { skip }, async () => {
  await page.goto(srv.url + "/#/settings");
  await page.locator("#prompt-form").waitFor();
  for (const [name, text] of [["summarize", "Summarize this in three bullets:"], ["translate", "Translate to French:"]]) {
    await page.fill("#prompt-form input[name=name]", name);
    await page.fill("#prompt-form textarea[name=text]", text);
    await page.click("#prompt-form button.primary");
    await page.locator(`#prompt-list li[data-name="${name}"]`).waitFor();
  }
  await page.goto(srv.url + "/#/");
  await page.locator("#input").waitFor();
  await page.locator("#input").pressSequentially("/su");
  await page.locator("#prompt-menu li", { hasText: "/summarize" }).waitFor();
  assert.equal(await page.locator("#prompt-menu li").count(), 1, "only the names that match");
  await page.keyboard.press("Enter");
  assert.equal(await page.inputValue("#input"), "Summarize this in three bullets:");
  assert.ok(await page.locator("#prompt-menu").isHidden());
  // Both offered for "/", the second picked with the arrow keys.
  await page.fill("#input", "");
  await page.locator("#input").pressSequentially("/");
  await page.locator("#prompt-menu li >> nth=1").waitFor();
  await page.keyboard.press("ArrowDown");
  await page.keyboard.press("Tab");
  assert.equal(await page.inputValue("#input"), "Translate to French:");
  await page.fill("#input", "");
});

test("pinned chats and folders in the sidebar, kept on reload", { skip }, async () => {
  await page.goto(convURL);
  const id = decodeURIComponent(new URL(convURL).hash.slice("#/c/".length));
  const item = () => page.locator(`#conv-list li[data-id="${id}"]`);
  await item().locator(".more").click();
  await item().locator("button.pin").click();
  await page.locator("#conv-list li.pinned-group").waitFor();
  // Pinned: first in the list, under its heading.
  assert.equal(await page.evaluate((cid) => {
    const items = [...document.querySelectorAll("#conv-list > li")];
    return items[0].classList.contains("pinned-group") && items[1].dataset.id === cid;
  }, id), true);
  // Another chat filed in a folder.
  const other = page.locator("#conv-list li[data-id]:not([data-pinned])").first();
  const otherID = await other.getAttribute("data-id");
  await other.locator(".more").click();
  await other.locator("button.file").click();
  await page.fill("#conv-list .folder-input", "Work");
  await page.keyboard.press("Enter");
  await page.locator("#conv-list li.folder-group", { hasText: "Work" }).waitFor();
  await page.reload();
  await page.locator("#conv-list li.pinned-group").waitFor();
  assert.equal(await page.getAttribute(`#conv-list li[data-id="${otherID}"]`, "data-folder"), "Work");
  assert.equal(await page.getAttribute(`#conv-list li[data-id="${id}"]`, "data-pinned"), "1");
  // Unpinned, it goes back among the others.
  await item().locator(".more").click();
  await item().locator("button.pin").click();
  await page.locator("#conv-list li.pinned-group").waitFor({ state: "detached" });
});

test("a second tab's send while the first streams waits, says so, and goes when the answer ends", { skip }, async () => {
  await page.goto(convURL);
  await page.locator(".msg.assistant").first().waitFor();
  tab2 = await context.newPage();
  await tab2.goto(convURL);
  await tab2.locator(".msg.assistant").first().waitFor();
  const users = await page.locator(".msg.user").count();
  await page.fill("#input", "Tell me a very long story about the White Rabbit.");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => !!document.querySelector(".msg.assistant.streaming"), null, { timeout: 10_000 });
  await tab2.fill("#input", "A question from the second tab.");
  await tab2.keyboard.press("Enter");
  await tab2.locator("#queued", { hasText: /sends when/i }).waitFor({ timeout: 10_000 });
  assert.equal(await tab2.inputValue("#input"), "A question from the second tab.", "the text stays while it waits");
  // When the first answer ends, the second tab sends.
  await tab2.locator(".msg.user", { hasText: "A question from the second tab." }).waitFor({ timeout: 60_000 });
  await idle(tab2);
  assert.equal(await tab2.inputValue("#input"), "");
  assert.ok(await tab2.locator("#queued").isHidden());
  await page.locator(".msg.user", { hasText: "A question from the second tab." }).waitFor({ timeout: 20_000 });
  assert.equal(await page.locator(".msg.user").count(), users + 2);
  await tab2.close();
  tab2 = undefined;
});

test("uploads refused in words a person reads, from the picker, drag-and-drop and paste", { skip }, async () => {
  await page.goto(srv.url + "/#/");
  await page.locator("#input").waitFor();
  await page.setInputFiles("#file", { name: "program.exe", mimeType: "application/x-msdownload", buffer: Buffer.from("MZ") });
  await page.locator("#banner", { hasText: "program.exe can't be attached. You can attach images, PDF" }).waitFor();
  const drop = async (name, type, size) => page.evaluate(([n, t, s]) => {
    const dt = new DataTransfer();
    dt.items.add(new File([new Uint8Array(s)], n, { type: t }));
    document.getElementById("chat").dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, [name, type, size]);
  await page.click("#banner-close");
  await drop("virus.bat", "application/x-bat", 10);
  await page.locator("#banner", { hasText: "virus.bat can't be attached" }).waitFor();
  await page.click("#banner-close");
  await drop("big.txt", "text/plain", 3_000_000);
  await page.locator("#banner", { hasText: "big.txt is too large — the limit for text files is 2 MB." }).waitFor();
  assert.doesNotMatch(await page.textContent("#banner"), /size_bytes|mime_type/);
  await page.click("#banner-close");
  // A pasted image attaches; Send during its upload waits, then sends.
  await page.focus("#input");
  await page.fill("#input", "What is in this picture?");
  await page.evaluate(async () => {
    const c = document.createElement("canvas"); c.width = 1600; c.height = 1200;
    const g = c.getContext("2d"); g.fillStyle = "#c33"; g.fillRect(0, 0, 1600, 1200);
    const blob = await new Promise((r) => c.toBlob(r, "image/png"));
    const dt = new DataTransfer();
    dt.items.add(new File([blob], "pasted.png", { type: "image/png" }));
    document.getElementById("input").dispatchEvent(new ClipboardEvent("paste", { clipboardData: dt, bubbles: true, cancelable: true }));
    document.getElementById("send").click(); // at once, while it uploads
  });
  await page.locator("#pending .chip.upload").first().waitFor({ timeout: 5_000 }).catch(() => {});
  await page.locator(".msg.user", { hasText: "What is in this picture?" }).waitFor({ timeout: 30_000 });
  assert.equal(await page.locator(".msg.user img.thumb, .msg.user .chip").count() >= 1, true, "the image went with the message");
  assert.ok(await page.locator("#queued").isHidden());
  await idle(page);
});

test("the share page reads without JavaScript; the app takes it over with it", { skip }, async () => {
  await page.goto(convURL);
  const id = decodeURIComponent(new URL(convURL).hash.slice("#/c/".length));
  const r = await page.evaluate(async (cid) => {
    const res = await fetch("/parley.v1.ConversationService/ShareConversation", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ conversationId: cid }) });
    return res.json();
  }, id);
  const noJS = await browser.newContext({ javaScriptEnabled: false });
  const p = extra = await noJS.newPage();
  try {
    await p.goto(srv.url + r.path);
    assert.match(await p.textContent("#shared"), /Tell me about the Cheshire Cat/);
    assert.match(await p.title(), /· Parley$/);
    assert.ok(await p.locator("#shared .msg.assistant .md p").count() > 0, "answers as rendered Markdown");
    assert.equal(await p.getAttribute("meta[property='og:title']", "content"), (await p.title()).replace(/ · Parley$/, ""));
    await shot(p, "r2-share-nojs");
  } finally { await noJS.close(); extra = undefined; }
  const withJS = await browser.newContext();
  const q = extra = await withJS.newPage();
  try {
    await q.goto(srv.url + r.path);
    await q.waitForFunction(() => !document.querySelector("#shared")?.hasAttribute("data-server-rendered"), null, { timeout: 10_000 });
    assert.equal(await q.locator("#shared").count(), 1, "one conversation, not two");
    assert.match(await q.textContent("#shared"), /Tell me about the Cheshire Cat/);
    await axe(q, "the share page");
  } finally { await withJS.close(); extra = undefined; }
});

test("installable: a manifest with icons, a service worker keeping the shell; offline it starts to an offline screen", { skip }, async () => {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const p = extra = await ctx.newPage();
  try {
    await p.goto(srv.url + "/");
    const manifest = await p.evaluate(async () => {
      const href = document.querySelector("link[rel=manifest]").href;
      const res = await fetch(href);
      return { type: res.headers.get("content-type"), body: await res.json() };
    });
    assert.equal(manifest.type, "application/manifest+json");
    assert.equal(manifest.body.display, "standalone");
    assert.deepEqual(manifest.body.icons.filter((i) => i.type === "image/png").map((i) => i.sizes), ["192x192", "512x512"]);
    for (const icon of manifest.body.icons) {
      const res = await p.request.get(srv.url + icon.src);
      assert.equal(res.status(), 200, icon.src);
    }
    // The worker takes the page and keeps the shell.
    await p.waitForFunction(async () => !!(await navigator.serviceWorker.ready).active, null, { timeout: 15_000 });
    await p.waitForFunction(async () => (await (await caches.open("parley-shell")).keys()).some((r) => r.url.includes("/assets/index-")), null, { timeout: 15_000 });
    const kept = await p.evaluate(async () => (await (await caches.open("parley-shell")).keys()).map((r) => new URL(r.url).pathname));
    assert.ok(!kept.some((path) => path.startsWith("/parley.v1.") || path.startsWith("/v1/")), `the API is never kept: ${kept}`);
    await ctx.setOffline(true);
    await p.reload();
    await p.locator("#offline-screen", { hasText: "You are offline" }).waitFor({ timeout: 15_000 });
    await shot(p, "r2-offline");
    await ctx.setOffline(false);
    await p.locator("#auth-form").waitFor({ timeout: 20_000 }); // back: the sign-in form of a logged-out browser
    assert.ok(await p.locator("#offline-screen").isHidden());
  } finally { await ctx.close(); extra = undefined; }
});

test("axe-core finds nothing serious on the other pages", { skip }, async () => {
  for (const hash of ["#/usage", "#/settings", "#/keys", "#/orgs", "#/admin"]) {
    await page.goto(srv.url + "/" + hash);
    await page.locator(`#${hash.slice(2)}-page`).waitFor();
    await page.waitForTimeout(400); // the page's data
    await axe(page, hash);
  }
  if (await page.locator("#nav-toggle").isVisible()) await page.click("#nav-toggle"); // folded under ⋯
  await page.click("#logout");
  await page.locator("#auth-form").waitFor();
  await axe(page, "the sign-in form");
  assert.deepEqual(cspViolations, []);
});
