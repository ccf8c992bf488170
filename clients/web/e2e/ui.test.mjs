// End-to-end: the web app's daily-use tools in headless Chromium against the
// real binary (issue 16): Markdown, copy, the model picker, banners, the
// phone layout, dark mode, the keyboard, titles, a second tab, recovery after
// the server comes back, usage, settings, admin and logout.
import { test as nodeTest, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, launch, shot, haveChromium, sleep, freePort, parleyAdmin, shotOnFail } from "./harness.mjs";

const skip = haveChromium ? false : "no Chromium at /usr/bin/chromium (apt-get install chromium)";
let srv, port, browser, context, page, page2;
const password = "correct horse battery";
const email = `ui-${Date.now()}@example.com`;
const adminEmail = `admin-${Date.now()}@example.com`;
let extra; // another page a test opened, captured on failure too
const test = shotOnFail(nodeTest, () => [page, page2, extra]);

before(async () => {
  if (skip) return;
  port = await freePort();
  srv = await startServer([], { port, before: (dir) => parleyAdmin(dir, ["create-user", "--email", adminEmail, "--password", password, "--admin"]) });
  browser = await launch();
  context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: srv.url });
  page = await context.newPage();
  page.on("dialog", (d) => d.accept());
  page.on("pageerror", (e) => console.error("page error:", e));
});
after(async () => {
  await browser?.close();
  await srv?.stop();
});

async function signUp(p, mail, name) {
  await p.goto(srv.url + "/");
  await p.locator("#auth-form").waitFor();
  if ((await p.textContent("#auth-submit")) !== "Sign up") await p.click("#auth-toggle");
  await p.fill("input[name=email]", mail);
  await p.fill("input[name=password]", password);
  await p.fill("input[name=display_name]", name);
  await p.click("#auth-submit");
  await p.locator("#main").waitFor();
}
async function waitIdle(p) {
  await p.locator("#send").waitFor({ state: "visible", timeout: 30_000 });
  await p.waitForFunction(() => !document.querySelector(".msg.assistant.streaming"), null, { timeout: 30_000 });
}
async function sendAndWait(p, text) {
  const n = await p.locator(".msg.assistant").count();
  await p.fill("#input", text);
  await p.click("#send");
  await p.waitForFunction((k) => document.querySelectorAll(".msg.assistant").length > k, n, { timeout: 30_000 });
  await waitIdle(p);
}
/** WCAG contrast ratio of two CSS rgb() colours. */
function contrast(a, b) {
  const lum = (c) => {
    const [r, g, bl] = c.match(/[\d.]+/g).slice(0, 3).map(Number).map((v) => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
  return (x + 0.05) / (y + 0.05);
}

const sample = [
  "Intro paragraph with `code` and **bold**.",
  "",
  "| Model | Tokens |",
  "| --- | ---: |",
  "| small | 12 |",
  "| large | 345 |",
  "",
  "- outer one",
  "  - inner a",
  "  - inner b",
  "- outer two",
  "",
  "```python",
  "def area(r):",
  "    return 3.14 * r ** 2  # circle",
  "```",
  "",
  "Euler: $e^{i\\pi} + 1 = 0$ and a display:",
  "",
  "$$",
  "\\int_0^1 x^2 \\, dx = \\frac{1}{3}",
  "$$",
  "",
  "<script>window.__pwned = 1</script> closing words.",
  "",
].join("\n");

test("sign up", { skip }, async () => {
  await signUp(page, email, "UI Test");
  assert.equal(await page.title(), "New chat · Parley");
});

test("Markdown: tables, nested lists, coloured code, math; streamed without redrawing what is shown", { skip }, async () => {
  await page.evaluate(() => {
    window.__removed = 0;
    window.__obs = new MutationObserver((ms) => {
      for (const m of ms) for (const n of m.removedNodes) {
        // Removing nodes inside the open tail (.live) is expected; anything else is a reflow.
        if (m.target.closest?.(".live") || m.target.classList?.contains("live")) continue;
        if (n.nodeType === 1 && !n.classList.contains("live")) window.__removed++;
      }
    });
    window.__obs.observe(document.getElementById("messages"), { subtree: true, childList: true });
  });
  const firstP = await page.evaluate(async (src) => {
    const done = window.parleyStream(src, 4);
    // Hold on to the first paragraph once it is frozen.
    let first;
    while (!first) { await new Promise((r) => setTimeout(r, 5)); first = document.querySelector(".msg.assistant .md > p"); }
    window.__firstP = first;
    await done;
    return first.textContent;
  }, sample);
  assert.match(firstP, /Intro paragraph/);
  const md = page.locator(".msg.assistant .md").last();
  await md.locator("table td", { hasText: "345" }).waitFor();
  assert.equal(await md.locator("table th").count(), 2);
  assert.equal(await md.locator("ul ul li").count(), 2, "nested list");
  await md.locator("code .hljs-keyword", { hasText: "def" }).waitFor({ timeout: 10_000 });
  assert.ok(await md.locator("code .hljs-comment").count() >= 1, "code is coloured");
  await md.locator(".math.done math").first().waitFor({ timeout: 10_000 });
  assert.equal(await md.locator(".math.display.done math[display=block]").count(), 1, "display math is MathML");
  assert.ok(await md.locator(".math:not(.display).done math").count() >= 1, "inline math");
  assert.match(await md.textContent(), /<script>window.__pwned = 1<\/script>/, "raw HTML is shown as text");
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  const stats = await page.evaluate(() => ({ removed: window.__removed, same: document.querySelector(".msg.assistant .md > p") === window.__firstP }));
  assert.equal(stats.removed, 0, "no rendered block was removed while streaming");
  assert.ok(stats.same, "the first paragraph is the node rendered while streaming");
  await shot(page, "20-markdown");
});

test("send, then copy the whole answer; the title follows the conversation", { skip }, async () => {
  await page.goto(srv.url + "/#/");
  await page.locator(".empty").waitFor();
  await page.selectOption("#model", "sim-large");
  await sendAndWait(page, "Tell me about the Cheshire Cat.");
  await page.waitForURL(/#\/c\/.+/);
  await page.waitForFunction(() => document.title.startsWith("Tell me about the Cheshire Cat"), null, { timeout: 10_000 });
  const answer = page.locator(".msg.assistant").last();
  await answer.locator(".copy-msg").click();
  await answer.locator(".copy-msg", { hasText: "Copied" }).waitFor();
  const clip = await page.evaluate(() => navigator.clipboard.readText());
  const shown = (await answer.locator(".md").textContent()).trim();
  assert.ok(clip.length > 20, clip);
  assert.equal(clip.replace(/[*_`#>\s-]/g, "").slice(0, 40), shown.replace(/[*_`#>\s-]/g, "").slice(0, 40));
  // The user's message has one too.
  await page.locator(".msg.user").last().locator(".copy-msg").click();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), "Tell me about the Cheshire Cat.");
  // Renaming retitles the page.
  const li = page.locator("#conv-list li.active");
  await li.locator(".more").click();
  await li.locator(".rename").click();
  await page.fill(".rename-input", "Cat chat");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => document.title === "Cat chat · Parley");
});

test("the model picker sticks per conversation and for new chats", { skip }, async () => {
  const catUrl = page.url();
  assert.equal(await page.inputValue("#model"), "sim-large");
  // Another conversation on sim-small.
  await page.click("#new-chat");
  await page.locator(".empty").waitFor();
  assert.equal(await page.inputValue("#model"), "sim-large", "new chat keeps the last choice");
  await page.selectOption("#model", "sim-small");
  await sendAndWait(page, "Quick question about tea.");
  await page.waitForURL((u) => /#\/c\/.+/.test(u.href) && u.href !== catUrl);
  const teaUrl = page.url();
  await page.goto(catUrl);
  await page.locator(".msg.assistant").first().waitFor();
  assert.equal(await page.inputValue("#model"), "sim-large", "the cat conversation keeps its model");
  await page.goto(teaUrl);
  await page.locator(".msg.assistant").first().waitFor();
  assert.equal(await page.inputValue("#model"), "sim-small");
  await page.reload();
  await page.locator(".msg.assistant").first().waitFor();
  assert.equal(await page.inputValue("#model"), "sim-small", "after a reload too");
  await page.click("#new-chat");
  await page.locator(".empty").waitFor();
  assert.equal(await page.inputValue("#model"), "sim-small", "new chat takes the last choice");
  await page.goto(catUrl);
  await page.locator(".msg.assistant").first().waitFor();
});

test("error banners: dismissible and scoped to their page", { skip }, async () => {
  await page.goto(srv.url + "/#/c/no-such-conversation");
  await page.locator("#banner", { hasText: "does not exist" }).waitFor();
  await page.click("#banner-close");
  assert.ok(await page.locator("#banner").isHidden());
  await page.goto(srv.url + "/#/c/no-such-conversation-2");
  await page.locator("#banner", { hasText: "does not exist" }).waitFor();
  await page.click("#keys-btn");
  await page.locator("#keys-page").waitFor();
  assert.ok(await page.locator("#banner").isHidden(), "the banner stays on its page");
  assert.match(await page.textContent("#key-needs"), /balance/, "the keys page says a key needs a balance");
});

test("a second tab sees new messages", { skip }, async () => {
  await page.click("#conv-list li .title >> nth=0");
  await page.locator(".msg.assistant").first().waitFor();
  const url = page.url();
  page2 = await context.newPage();
  await page2.goto(url);
  await page2.locator(".msg.assistant").first().waitFor();
  const before = await page2.locator(".msg.user").count();
  await sendAndWait(page, "A message from the first tab.");
  await page2.locator(".msg.user", { hasText: "A message from the first tab." }).waitFor({ timeout: 15_000 });
  await page2.waitForFunction((n) => document.querySelectorAll(".msg.assistant").length === n + 1 && !document.querySelector(".msg.assistant.streaming"), before, { timeout: 30_000 });
  const [a, b] = await Promise.all([page, page2].map((p) => p.locator(".msg.assistant .md").last().textContent()));
  assert.equal(b.trim(), a.trim());
  await shot(page2, "21-second-tab");
  await page2.close();
  page2 = undefined;
});

test("the server dies: a banner says so, retries, and goes when it is back", { skip }, async () => {
  await srv.stop({ keepData: true });
  // The open conversation is polled every few seconds; the probe takes over.
  await page.locator("#banner.offline", { hasText: /cannot be reached.*Retrying in/ }).waitFor({ timeout: 20_000 });
  await shot(page, "22-offline");
  srv = await startServer([], { port, dataDir: srv.dataDir });
  await page.locator("#banner").waitFor({ state: "hidden", timeout: 40_000 });
  await sendAndWait(page, "Are you back?");
  assert.ok((await page.locator(".msg.assistant .md").last().textContent()).length > 0);
});

test("dark mode: a toggle, and primary buttons with AA contrast in both themes", { skip }, async () => {
  const ratios = async () => page.evaluate(() => [...document.querySelectorAll("#send, #new-chat")].map((el) => {
    const s = getComputedStyle(el);
    return { id: el.id, fg: s.color, bg: s.backgroundColor };
  }));
  const check = async (theme) => {
    for (const r of await ratios()) {
      const c = contrast(r.fg, r.bg);
      assert.ok(c >= 4.5, `${theme}: #${r.id} ${r.fg} on ${r.bg} is ${c.toFixed(2)}:1`);
    }
  };
  const bg = () => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
  const light = await bg();
  await page.click("#theme");
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), "dark");
  assert.equal(await page.getAttribute("#theme", "aria-pressed"), "true");
  const dark = await bg();
  assert.notEqual(dark, light);
  assert.ok(contrast(dark, "rgb(0, 0, 0)") < 2, `dark background ${dark}`);
  await check("dark");
  await shot(page, "23-dark");
  await page.reload();
  await page.locator("#main").waitFor();
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), "dark", "the choice is kept");
  await page.click("#theme");
  await check("light");
  // With a dark system preference and no choice stored, dark too.
  const ctx = await browser.newContext({ colorScheme: "dark", storageState: await context.storageState() });
  const p = await ctx.newPage();
  await p.goto(srv.url + "/");
  await p.locator("#main").waitFor();
  await p.evaluate(() => localStorage.removeItem("parley.theme"));
  await p.reload();
  await p.locator("#main").waitFor();
  const sysDark = await p.evaluate(() => [getComputedStyle(document.documentElement).backgroundColor, getComputedStyle(document.getElementById("send")).color, getComputedStyle(document.getElementById("send")).backgroundColor]);
  assert.ok(contrast(sysDark[0], "rgb(0, 0, 0)") < 2, `system dark background ${sysDark[0]}`);
  assert.ok(contrast(sysDark[1], sysDark[2]) >= 4.5);
  await ctx.close();
});

test("every control is reachable by keyboard, the attach button included", { skip }, async () => {
  await page.focus("#input");
  const seen = new Set();
  const want = ["attach", "model", "theme", "logout", "limits-btn", "keys-btn", "usage-btn", "settings-btn", "new-chat"];
  for (let i = 0; i < 150 && !want.every((w) => seen.has(w)); i++) {
    await page.keyboard.press("Shift+Tab");
    seen.add(await page.evaluate(() => document.activeElement?.id || document.activeElement?.className || document.activeElement?.tagName));
  }
  assert.ok(seen.has("attach"), `reached: ${[...seen].join(", ")}`);
  for (const id of want) assert.ok(seen.has(id), `${id} not reached: ${[...seen].join(", ")}`);
  // Enter on the focused attach button opens the file chooser.
  await page.focus("#attach");
  const [chooser] = await Promise.all([page.waitForEvent("filechooser", { timeout: 5000 }), page.keyboard.press("Enter")]);
  assert.ok(chooser.isMultiple());
});

test("phone (390 px): one-line header, whole model name, composer in view, Enter adds a line", { skip }, async () => {
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, storageState: await context.storageState() });
  const p = extra = await phone.newPage();
  try {
    await p.goto(page.url());
    await p.locator(".msg.assistant").first().waitFor();
    await p.selectOption("#model", "sim-large");
    const m = await p.evaluate(() => {
      const hd = document.querySelector("header");
      const kids = [...hd.children].filter((k) => k.offsetParent !== null);
      const mids = kids.map((k) => { const r = k.getBoundingClientRect(); return (r.top + r.bottom) / 2; });
      const spread = Math.max(...mids) - Math.min(...mids);
      const sel = document.getElementById("model");
      const cs = getComputedStyle(sel);
      const ctx = document.createElement("canvas").getContext("2d");
      ctx.font = `${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
      const text = sel.selectedOptions[0].textContent;
      const composer = document.getElementById("composer").getBoundingClientRect();
      const send = document.getElementById("send").getBoundingClientRect();
      const input = document.getElementById("input").getBoundingClientRect();
      return {
        headerHeight: hd.getBoundingClientRect().height, spread,
        textWidth: ctx.measureText(text).width, selectRoom: sel.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) - 16, text,
        composerBottom: composer.bottom, sendRight: send.right, inputWidth: input.width,
        overflow: document.documentElement.scrollWidth - document.documentElement.clientWidth,
        coarse: matchMedia("(pointer: coarse)").matches,
      };
    });
    assert.ok(m.spread < 6 && m.headerHeight < 56, `header wraps: ${JSON.stringify(m)}`);
    assert.ok(m.textWidth <= m.selectRoom, `model name cut: "${m.text}" needs ${m.textWidth}px, has ${m.selectRoom}px`);
    assert.ok(m.composerBottom <= 844 && m.sendRight <= 390 && m.inputWidth > 150, `composer clipped: ${JSON.stringify(m)}`);
    assert.ok(m.overflow <= 0, `sideways scroll ${m.overflow}px`);
    assert.ok(m.coarse, "touch emulation gives a coarse pointer");
    // The menu holds the rest.
    await p.click("#nav-toggle");
    await p.locator("#nav #logout").waitFor({ state: "visible" });
    await shot(p, "24-phone-menu");
    await p.click("#nav-toggle");
    // Enter inserts a new line; Send sends.
    const n = await p.locator(".msg.user").count();
    await p.locator("#input").tap();
    await p.keyboard.type("line one");
    await p.keyboard.press("Enter");
    await p.keyboard.type("line two");
    assert.equal(await p.inputValue("#input"), "line one\nline two");
    assert.equal(await p.locator(".msg.user").count(), n, "Enter did not send");
    await p.locator("#send").tap();
    await p.locator(".msg.user", { hasText: "line two" }).waitFor();
    await waitIdle(p);
    await shot(p, "25-phone");
  } finally {
    await phone.close();
  }
});

test("usage page: balance, allowances, spend and tokens per day and model", { skip }, async () => {
  await page.click("#usage-btn");
  await page.locator("#usage-page #balance strong").waitFor();
  assert.match(await page.textContent("#balance"), /\$/);
  await page.locator("#usage-limits table").waitFor();
  const lim = await page.textContent("#usage-limits");
  assert.match(lim, /output tokens/);
  assert.doesNotMatch(lim, /\bfull\b/);
  await page.locator("#usage-charts svg.chart").first().waitFor();
  assert.ok(await page.locator("#usage-charts svg.chart rect").count() >= 1, "bars");
  assert.match(await page.textContent("#usage-charts .legend"), /sim-small/);
  assert.match(await page.textContent("#usage-charts .per-model"), /sim-large/);
  assert.equal(await page.title(), "Usage · Parley");
  await shot(page, "26-usage");
});

test("admin page: hidden from users; tier, balance top-up with a reason, workers, usage", { skip }, async () => {
  assert.ok(await page.locator("#admin-btn").isHidden(), "no admin link for a user");
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const p = extra = await ctx.newPage();
  try {
    await p.goto(srv.url + "/");
    await p.locator("#auth-form").waitFor();
    if ((await p.textContent("#auth-submit")) !== "Log in") await p.click("#auth-toggle");
    await p.fill("input[name=email]", adminEmail);
    await p.fill("input[name=password]", password);
    await p.click("#auth-submit");
    await p.locator("#admin-btn").waitFor();
    await p.click("#admin-btn");
    await p.locator("#admin-workers table").waitFor();
    assert.match(await p.textContent("#admin-workers"), /sim-small/);
    await p.fill("#tier-form input[name=email]", email);
    await p.selectOption("#tier-form select", { label: "Pro" });
    await p.click("#tier-form button");
    await p.locator("#admin-page .ok", { hasText: "Pro tier" }).waitFor();
    await p.fill("#topup-form input[name=email]", email);
    await p.fill("#topup-form input[name=amount]", "2.5");
    await p.fill("#topup-form input[name=reason]", "web test top-up");
    await p.click("#topup-form button");
    await p.locator("#admin-page .ok", { hasText: "$2.50" }).waitFor();
    await shot(p, "27-admin");
  } finally {
    await ctx.close();
  }
  await page.reload();
  await page.locator("#usage-page #balance strong", { hasText: "$2.50" }).waitFor();
  await page.locator("#me", { hasText: "Pro" }).waitFor();
});

test("log out lands on Log in", { skip }, async () => {
  await page.goto(srv.url + "/#/");
  await page.locator("#main").waitFor();
  await page.click("#logout");
  await page.locator("#auth-form").waitFor();
  assert.equal(await page.textContent("#auth-submit"), "Log in");
  assert.ok(await page.locator("#name-row").isHidden());
  await page.reload();
  await page.locator("#auth-form").waitFor();
  assert.equal(await page.textContent("#auth-submit"), "Log in");
});
