// End-to-end: a project in the web app, against the real binary. Create a
// project, add a multi-page PDF whose answer is on its last page, wait for
// it to be indexed, ask in the project and see the answer cite the PDF with
// the passage (streamed, then after a reload); the phone layout; another
// user sees none of it; deleting the project takes its chats.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, launch, shot, haveChromium, cspViolations, shotOnFail } from "./harness.mjs";

const skip = haveChromium ? false : "no Chromium at /usr/bin/chromium (apt-get install chromium)";
let srv, browser, context, page;
const password = "correct horse battery";
let projectUrl = "", chatUrl = "";
const pdfName = "keeper-handbook.pdf";
const fact = "The lighthouse keeper's cat is named Bartholomew.";
const markup = "Logbook markup: <img src=x onerror=alert-1> <b>bold</b> & <script>alert-2</script>"; // shown as text, never as HTML
const t = shotOnFail(test, () => [page]);

/** Filler lines, as the server's e2e tests make them: distinct, none about the cat. */
function sentences(topic, n) {
  const adjs = ["amber", "brisk", "candid", "dusky", "eager", "frosty", "gentle", "hollow", "ivory", "jolly", "keen", "lucid", "mellow"];
  const nouns = ["harbour", "orchard", "ledger", "lantern", "meadow", "quarry", "violin", "glacier", "pantry", "compass", "falcon"];
  const verbs = ["counted", "painted", "carried", "measured", "guarded", "repaired", "sorted", "weighed", "watched"];
  const out = [];
  for (let i = 0; i < n; i++) {
    out.push(`${topic} note ${i}: the ${adjs[i % adjs.length]} ${nouns[Math.floor(i / adjs.length) % nouns.length]} ${verbs[i % verbs.length]} ${i * 7 + 3} ${adjs[Math.floor(i / 3) % adjs.length]} ${nouns[i % nouns.length]} crates near the ${nouns[i % nouns.length]} ${topic}.`);
  }
  return out;
}

/**
 * A PDF of one page per entry of pages (each a list of lines: ASCII, no
 * parentheses or backslashes), as the server's attachtest.PDF builds a
 * one-page one: Helvetica, a classic xref table, one text object a page
 * with a line per T*.
 */
function pdf(pages) {
  const n = pages.length;
  // Objects: 1 catalog, 2 page tree, 3 font, then per page its page and its content.
  const objs = ["<< /Type /Catalog /Pages 2 0 R >>", "", "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"];
  const kids = [];
  pages.forEach((lines, i) => {
    const pageObj = 4 + 2 * i, contentObj = 5 + 2 * i;
    kids.push(`${pageObj} 0 R`);
    const content = "BT /F1 11 Tf 14 TL 72 740 Td " + lines.map((l, k) => `${k ? "T* " : ""}(${l}) Tj`).join(" ") + " ET";
    objs.push(`<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents ${contentObj} 0 R /Resources << /Font << /F1 3 0 R >> >> >>`);
    objs.push(`<< /Length ${content.length} >>\nstream\n${content}\nendstream`);
  });
  objs[1] = `<< /Type /Pages /Kids [${kids.join(" ")}] /Count ${n} >>`;
  let out = "%PDF-1.4\n";
  const offsets = objs.map((o, i) => { const at = out.length; out += `${i + 1} 0 obj\n${o}\nendobj\n`; return at; });
  const xref = out.length;
  out += `xref\n0 ${objs.length + 1}\n0000000000 65535 f \n` + offsets.map((o) => `${String(o).padStart(10, "0")} 00000 n \n`).join("");
  out += `trailer\n<< /Size ${objs.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, "latin1");
}

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

async function signUp(p, email, name) {
  await p.goto(srv.url + "/");
  await p.locator("#auth-form").waitFor();
  await p.fill("input[name=email]", email);
  await p.fill("input[name=password]", password);
  await p.fill("input[name=display_name]", name);
  await p.click("#auth-submit");
  await p.locator("#main").waitFor();
}

t("create a project from the sidebar", { skip }, async () => {
  await signUp(page, `projects-${Date.now()}@example.com`, "Project Owner");
  await page.click("#new-project");
  await page.locator("#project-dialog[open]").waitFor();
  assert.equal(await page.evaluate(() => document.activeElement?.id), "project-name", "the dialog focuses the name");
  await page.fill("#project-name", "Lighthouse");
  await page.fill("#project-instructions", "Answer as the keeper's logbook would.");
  await page.click("#project-create");
  await page.waitForURL(/#\/p\/.+/);
  projectUrl = page.url();
  await page.locator("#project-title", { hasText: "Lighthouse" }).waitFor();
  await page.locator("#project-list li.active a", { hasText: "Lighthouse" }).waitFor();
  assert.equal(await page.inputValue("#project-instructions-edit"), "Answer as the keeper's logbook would.");
  assert.match(await page.getAttribute("#input", "placeholder"), /New chat in Lighthouse/);
  // The instructions are editable.
  await page.fill("#project-instructions-edit", "Answer as the keeper's logbook would, briefly.");
  await page.click("#project-save");
  await page.locator("#project-saved", { hasText: "Saved." }).waitFor();
});

t("add a multi-page PDF: it shows as indexing, then indexed", { skip }, async () => {
  const last = sentences("orchard", 30);
  last.splice(24, 0, fact, markup);
  const bytes = pdf([sentences("harbour", 45), sentences("meadow", 45).map((l) => l.replace("meadow note", "meadow entry")), last]);
  await page.setInputFiles("#project-file", { name: pdfName, mimeType: "application/pdf", buffer: bytes });
  const row = page.locator("#project-files li", { hasText: pdfName });
  await row.waitFor({ timeout: 30_000 });
  await page.locator(`#project-files li[data-status=completed]`, { hasText: pdfName }).waitFor({ timeout: 60_000 });
  assert.equal(await row.locator(".status").textContent(), "Indexed");
  assert.ok(await row.locator("button.remove-file").isVisible(), "a Remove button shows");
  await shot(page, "projects-01-indexed");
});

t("a chat in the project cites the PDF's last page, streamed and after a reload", { skip }, async () => {
  await page.fill("#input", "What is the lighthouse keeper's cat named?");
  await page.keyboard.press("Enter");
  await page.waitForURL(/#\/c\/.+/);
  chatUrl = page.url();
  await page.locator(".msg.assistant:not(.streaming) .sources").waitFor({ timeout: 60_000 });
  const check = async (when) => {
    const answer = page.locator(".msg.assistant").last();
    const marks = answer.locator(".md a.cite");
    assert.ok(await marks.count() >= 1, `${when}: the answer's [n] markers are citation links`);
    assert.match(await marks.first().getAttribute("aria-label"), new RegExp(`Source \\d+: ${pdfName.replace(".", "\\.")}`));
    const sources = answer.locator(".sources li");
    assert.ok(await sources.count() >= 1, `${when}: sources are listed`);
    const cited = answer.locator(".sources li", { hasText: "Bartholomew" });
    assert.equal(await cited.count() >= 1, true, `${when}: a source quotes the passage naming the cat`);
    assert.equal((await cited.first().locator(".filename").textContent()).trim(), pdfName);
    // The file's text is shown as text: the markup in it makes no elements.
    assert.equal(await answer.locator("img, b, script").count(), 0, `${when}: the file's markup made elements`);
    assert.ok((await cited.first().locator(".quote").textContent()).includes("<b>bold</b>"), `${when}: the quote shows the markup as text`);
    // A marker opens its source and moves the focus there.
    await marks.first().click();
    const target = (await marks.first().getAttribute("href")).slice(1);
    assert.equal(await page.evaluate((id) => document.getElementById(id)?.querySelector("details")?.open, target), true, `${when}: the marker opens its source`);
    assert.match(page.url(), /#\/c\//, "the marker does not navigate");
  };
  await check("streamed");
  await page.locator(".crumb a", { hasText: "Lighthouse" }).waitFor();
  await shot(page, "projects-02-cited");
  await page.reload();
  await page.locator("#main").waitFor();
  await page.locator(".msg.assistant .sources").waitFor({ timeout: 30_000 });
  await check("after a reload");
});

t("the project page lists its chat; phone layout", { skip }, async () => {
  await page.goto(projectUrl);
  await page.locator("#project-chats a").first().waitFor();
  assert.equal(await page.locator("#project-chats a").count(), 1);
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, storageState: await context.storageState() });
  try {
    const p = await phone.newPage();
    for (const url of [projectUrl, chatUrl]) {
      await p.goto(url);
      await p.locator(url === projectUrl ? "#project-files li[data-status=completed]" : ".msg.assistant .sources").waitFor({ timeout: 30_000 });
      const overflow = await p.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      assert.ok(overflow <= 0, `${url}: the page scrolls sideways by ${overflow}px`);
    }
    await shot(p, "projects-03-phone");
  } finally { await phone.close(); }
});

t("another user sees none of it", { skip }, async () => {
  const other = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  try {
    const p = await other.newPage();
    await signUp(p, `projects-other-${Date.now()}@example.com`, "Someone Else");
    assert.equal(await p.locator("#project-list li").count(), 0);
    await p.goto(projectUrl);
    await p.locator("#project-missing").waitFor();
    assert.equal(await p.locator("#project-files").count(), 0);
  } finally { await other.close(); }
});

t("remove the file, then delete the project with its chats", { skip }, async () => {
  await page.goto(projectUrl);
  await page.locator("#project-files li[data-status=completed]").waitFor();
  await page.click(`#project-files button[aria-label="Remove ${pdfName}"]`);
  await page.locator("#project-files li", { hasText: pdfName }).waitFor({ state: "detached" });
  await page.click("#delete-project"); // confirm() is accepted
  await page.waitForURL((u) => !/#\/p\//.test(u.hash));
  await page.locator("#project-list li").first().waitFor({ state: "detached" });
  const chatId = chatUrl.split("#/c/")[1];
  await page.locator(`#conv-list li[data-id="${chatId}"]`).waitFor({ state: "detached" });
});

t("the pages ran under the Content-Security-Policy with no violations", { skip }, async () => {
  assert.deepEqual(cspViolations, [], "pages reported Content-Security-Policy violations");
});
