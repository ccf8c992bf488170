// End-to-end: the app's languages, in headless Chromium against the real
// binary. A browser that prefers German gets the app in German (the document
// marked lang="de", dates and numbers in its locale) and a chat that works; a
// choice in Settings overrides the browser's language. And every string the
// app shows comes from the catalogue: under the pseudo-language "qps" each
// catalogue string shows as ⟦…⟧, and every visible text and label outside
// data (marked translate="no") on every page and dialog must carry the marks.
import { test as nodeTest, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startServer, launch, haveChromium, parleyAdmin, shotOnFail, cspViolations, signIn, navClick, repoRoot } from "./harness.mjs";

const skip = haveChromium ? false : "no Chromium at /usr/bin/chromium (apt-get install chromium)";
const password = "correct horse battery";
const adminEmail = "i18n-admin@example.com";
let srv, browser, page;
const test = shotOnFail(nodeTest, () => [page]);

/** A catalogue's entries, read from its source (ids and plain strings only). */
function catalogue(lang) {
  const src = readFileSync(join(repoRoot, "clients/web/src/messages", `${lang}.ts`), "utf8");
  return Object.fromEntries([...src.matchAll(/^ {2}"([^"]+)": "((?:[^"\\]|\\.)*)",?$/gm)].map((m) => [m[1], JSON.parse(`"${m[2]}"`)]));
}
const en = catalogue("en"), de = catalogue("de");

before(async () => {
  if (skip) return;
  srv = await startServer([], { before: (dir) => parleyAdmin(dir, ["create-user", "--email", adminEmail, "--password", password, "--admin"]) });
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await srv?.stop();
});

const idle = (p) => p.waitForFunction(() => !document.querySelector(".msg.assistant.streaming") && !document.querySelector("#send").hidden, null, { timeout: 60_000 });

async function send(p, text) {
  await p.fill("#input", text);
  await p.click("#send");
  await p.locator(".msg.assistant .md").first().waitFor();
  await idle(p);
}

test("the catalogues: the same ids in English and German, every German string filled", { skip: false }, () => {
  assert.ok(Object.keys(en).length > 300, `${Object.keys(en).length} English strings read`);
  assert.deepEqual(Object.keys(de).sort(), Object.keys(en).sort());
  for (const [id, s] of Object.entries(de)) {
    assert.ok(s.trim(), `${id} is empty in German`);
    // The same placeholders in both languages.
    const ph = (x) => [...x.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort().join(",");
    assert.equal(ph(s), ph(en[id]), `${id}: placeholders differ`);
  }
});

test("a browser that prefers German gets the app in German, and Settings can choose English", { skip }, async () => {
  const ctx = await browser.newContext({ locale: "de-DE", viewport: { width: 1280, height: 800 } });
  page = await ctx.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(srv.url + "/");
  await page.locator("#auth-form").waitFor();
  assert.equal(await page.getAttribute("html", "lang"), "de");
  // A new visitor sees the sign-up form, in German.
  assert.equal(await page.textContent("#auth-submit"), de["auth.signUp"]);
  assert.equal(de["auth.signUp"], "Registrieren");
  assert.equal(await page.textContent("#password-rule"), "Mindestens 10 Zeichen.");
  await page.click("#auth-toggle");
  assert.equal(await page.textContent("#auth-submit"), "Anmelden");
  await page.fill("input[name=email]", adminEmail);
  await page.fill("input[name=password]", password);
  await page.click("#auth-submit");
  await page.locator("#main").waitFor();

  assert.equal((await page.textContent("#send")).trim(), "Senden");
  assert.equal((await page.textContent("#new-chat")).trim(), de["side.newChat"]);
  assert.equal(await page.getAttribute("#input", "aria-label"), de["chat.message"]);
  await send(page, "Hallo! Wie geht es dir?");
  // The chat works in German; a timestamp is in the German locale (day.month.).
  const stamp = await page.getAttribute(".msg.user", "title");
  assert.match(stamp, /^\d{2}\.\d{2}\.\d{4}, \d{2}:\d{2}$/, `a German date: ${stamp}`);
  // The usage page's headings and the number format are German.
  await navClick(page, "#usage-btn");
  await page.locator("#usage-page:not([hidden]) h2").first().waitFor();
  const usage = await page.textContent("#usage-page");
  assert.ok(usage.includes(de["usage.title"]), usage.slice(0, 200));

  // Settings → Language → English: the app is English after the reload, in the same browser.
  await navClick(page, "#settings-btn");
  await page.locator("#language").waitFor();
  assert.equal(await page.inputValue("#language"), "");
  await Promise.all([page.waitForEvent("load"), page.selectOption("#language", "en")]);
  await page.locator("#main").waitFor();
  assert.equal(await page.getAttribute("html", "lang"), "en");
  assert.equal((await page.textContent("#send")).trim(), "Send");
  // Back to following the browser: German again.
  await navClick(page, "#settings-btn");
  await page.locator("#language").waitFor();
  await Promise.all([page.waitForEvent("load"), page.selectOption("#language", "")]);
  await page.locator("#main").waitFor();
  assert.equal((await page.textContent("#send")).trim(), "Senden");
  assert.deepEqual(errors, []);
  await ctx.close();
});

/**
 * The visible text and labels on p that do not come from the catalogue: under
 * "qps" each catalogue string carries ⟦…⟧; data sits under translate="no".
 */
function untranslated(p) {
  return p.evaluate(() => {
    const out = [];
    const shown = (el) => {
      if (!el.getClientRects().length) return false;
      const cs = getComputedStyle(el);
      return cs.visibility !== "hidden" && cs.display !== "none";
    };
    const data = (el) => el.closest("[translate]")?.getAttribute("translate") === "no" || !!el.closest("script,style,svg,code,pre");
    const words = /\p{L}{2}/u;
    const marked = (s) => s.includes("⟦") || s.includes("⟧");
    const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      const s = n.nodeValue.trim();
      const el = n.parentElement;
      if (!s || !words.test(s) || !el || data(el) || !shown(el) || marked(s)) continue;
      out.push(`text ${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""}: ${s.slice(0, 80)}`);
    }
    for (const el of document.querySelectorAll("[aria-label],[placeholder],[title],[alt]")) {
      if (data(el) || !shown(el)) continue;
      // A message's title is its time (data, in the browser's locale).
      for (const a of el.matches(".msg") ? ["aria-label"] : ["aria-label", "placeholder", "title", "alt"]) {
        const v = el.getAttribute(a);
        if (v && words.test(v) && !marked(v)) out.push(`${a} of ${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""}: ${v.slice(0, 80)}`);
      }
    }
    // A conversation's page is titled with its title (data).
    if (!location.hash.startsWith("#/c/") && !marked(document.title) && words.test(document.title.replace(/Parley/g, ""))) out.push(`title: ${document.title}`);
    return out;
  });
}

test("every string on every page and dialog comes from the catalogue (pseudo-language)", { skip }, async () => {
  const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  await ctx.addInitScript(() => localStorage.setItem("parley.lang", "qps"));
  page = await ctx.newPage();
  const found = new Set();
  const check = async (where) => {
    for (const s of await untranslated(page)) found.add(`${where}: ${s}`);
  };
  await page.goto(srv.url + "/");
  await page.locator("#auth-form").waitFor();
  await check("sign-up");
  await page.click("#auth-toggle");
  await check("log-in");
  await page.fill("input[name=email]", adminEmail);
  await page.fill("input[name=password]", password);
  await page.click("#auth-submit");
  await page.locator("#main").waitFor();
  await check("new chat");
  await send(page, "Hello there, tell me something.");
  await page.hover(".msg.assistant");
  await check("chat with an answer");
  for (const [open, dialog] of [["#limits-btn", "#limits"], ["#chat-settings-btn", "#chat-settings"], ["#new-project", "#project-dialog"]]) {
    if (open === "#limits-btn") await navClick(page, open); else await page.click(open);
    await page.locator(`${dialog}[open]`).waitFor();
    await page.waitForTimeout(200);
    await check(`dialog ${dialog}`);
    await page.keyboard.press("Escape");
    await page.locator(`${dialog}[open]`).waitFor({ state: "detached" }).catch(() => {});
  }
  await page.hover(".msg.assistant");
  await page.click(".msg.assistant .remember-msg");
  await page.locator("#remember-dialog[open]").waitFor();
  await check("dialog #remember-dialog");
  await page.click("#remember-cancel");
  await page.locator("#input").focus();
  await page.keyboard.press("Control+/");
  await page.locator("#shortcuts[open]").waitFor();
  await check("dialog #shortcuts");
  await page.keyboard.press("Escape");
  for (const [btn, sel] of [["#keys-btn", "#keys-page"], ["#usage-btn", "#usage-page"], ["#settings-btn", "#settings-page"], ["#admin-btn", "#admin-page"], ["#orgs-btn", "#orgs-page"]]) {
    await navClick(page, btn);
    await page.locator(`${sel}:not([hidden])`).waitFor();
    await page.waitForFunction((s) => !document.querySelector(s).textContent.includes("…") || document.querySelector(s).textContent.length > 200, sel);
    await page.waitForTimeout(500);
    await check(sel);
  }
  // An organisation made: its members, teams, keys and usage sections.
  await navClick(page, "#orgs-btn");
  await page.fill("#org-create input[name=name]", "Pseudo Org");
  await page.click("#org-create button.primary");
  await page.waitForFunction(() => document.querySelectorAll("#org-view h3").length > 1);
  await page.waitForTimeout(500);
  await check("#orgs-page with an organisation");
  // A key made, its secret shown once.
  await navClick(page, "#keys-btn");
  await page.fill("#key-form input[name=name]", "pseudo key");
  await page.click("#key-form button.primary");
  await page.locator("#key-secret:not([hidden])").waitFor();
  await check("#keys-page with a key");
  assert.deepEqual([...found], [], "strings shown outside the catalogue");
  assert.deepEqual(cspViolations, []);
  await ctx.close();
});
