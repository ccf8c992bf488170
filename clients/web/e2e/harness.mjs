// Test harness: builds and starts the real parley binary on a free port, and
// drives Debian's Chromium with playwright-core (no browser download).
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { createServer } from "node:net";
import { join, resolve } from "node:path";
import { chromium } from "playwright-core";

export const repoRoot = resolve(import.meta.dirname, "../../..");
export const artifacts = join(repoRoot, "test-artifacts", "web");
mkdirSync(artifacts, { recursive: true });

let built;
/** The parley binary: $PARLEY_BIN, or built once from this checkout. */
export function parleyBin() {
  if (process.env.PARLEY_BIN) return process.env.PARLEY_BIN;
  if (!built) {
    const dir = mkdtempSync(join(tmpdir(), "parley-web-e2e-"));
    built = join(dir, "parley");
    execFileSync("go", ["build", "-o", built, "./server/cmd/parley"], { cwd: repoRoot, stdio: "inherit" });
  }
  return built;
}

/** A free loopback port (to restart a server on the same address). */
export function freePort() {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.once("error", fail);
    srv.listen(0, "127.0.0.1", () => { const { port } = srv.address(); srv.close(() => ok(port)); });
  });
}

/** Runs `parley admin TASK ...` against a data directory (e.g. create-user --admin). */
export function parleyAdmin(dataDir, args) {
  return execFileSync(parleyBin(), ["admin", ...args.slice(0, 1), "--data-dir", dataDir, ...args.slice(1)], { encoding: "utf8" });
}

/**
 * Starts `parley serve` on a loopback port; resolves to {url, dataDir, stop, logs}.
 * opts.dataDir reuses a directory (a restart), opts.port a port; stop({ keepData: true })
 * kills the process and keeps the directory.
 */
export async function startServer(extra = [], opts = {}) {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), "parley-web-data-"));
  if (opts.before) opts.before(dataDir);
  // Titles stay the first message's unless a suite asks for generated ones.
  const titles = extra.some((a) => a.startsWith("--auto-titles")) ? [] : ["--auto-titles=false"];
  const args = ["serve", "--listen", `127.0.0.1:${opts.port ?? 0}`, "--data-dir", dataDir, "--insecure-cookies", "--sim-time-scale", "0.2", "--rate-limits", "off", ...titles, ...extra];
  const proc = spawn(parleyBin(), args, { stdio: ["ignore", "pipe", "pipe"] });
  let logs = "";
  const url = await new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error("parley not listening after 60 s\n" + logs)), 60_000);
    const onData = (d) => {
      logs += d;
      const m = /listening on (http:\/\/[0-9.:]+)/.exec(logs);
      if (m) { clearTimeout(timer); ok(m[1]); }
    };
    proc.stdout.on("data", onData); // logs go to stdout,
    proc.stderr.on("data", onData); // errors to stderr
    proc.on("exit", (code) => fail(new Error(`parley exited (${code})\n${logs}`)));
  });
  return {
    url,
    dataDir,
    logs: () => logs,
    async stop({ keepData = false } = {}) {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill("SIGKILL");
        await new Promise((r) => proc.once("exit", r));
      }
      if (!keepData) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * test() that saves a screenshot of each open page to test-artifacts/web/fail-NAME-N.png
 * when the body fails, and writes to stderr what each page was showing (its URL, whether
 * it was visible, its messages, its last console lines) and the end of the server's log.
 * pages() returns the pages to capture; serverLogs(), if given, the server's log.
 */
export function shotOnFail(test, pages, serverLogs) {
  const consoles = new WeakMap();
  const watch = (p) => {
    if (!p || consoles.has(p)) return;
    const lines = [];
    consoles.set(p, lines);
    p.on("console", (m) => { lines.push(`${m.type()}: ${m.text()}`); if (lines.length > 20) lines.shift(); });
    p.on("crash", () => lines.push("the page crashed"));
  };
  return (name, opts, fn) => test(name, opts, async (t) => {
    const timer = setInterval(() => pages().forEach(watch), 100);
    pages().forEach(watch);
    try {
      await fn(t);
    } catch (err) {
      const slug = name.replace(/[^a-z0-9]+/gi, "-").toLowerCase().slice(0, 60);
      let i = 0;
      for (const p of pages()) {
        if (!p || p.isClosed()) continue;
        const n = i++;
        await p.screenshot({ path: join(artifacts, `fail-${slug}-${n}.png`), timeout: 5000 }).catch((e) => console.error(`page ${n}: no screenshot: ${e.message}`));
        const state = await Promise.race([
          p.evaluate(() => ({ visibility: document.visibilityState, focus: document.hasFocus(), hash: location.hash,
            messages: [...document.querySelectorAll(".msg")].map((m) => `${m.className}: ${(m.textContent ?? "").slice(0, 40)}`),
            queued: !document.getElementById("queued")?.hidden, bodyChars: document.body?.innerHTML.length ?? 0 })),
          new Promise((ok) => setTimeout(() => ok("no answer in 5 s"), 5000)),
        ]).catch((e) => e.message);
        console.error(`page ${n} (${p.url()}):`, JSON.stringify(state, null, 1), "\nits console:", (consoles.get(p) ?? []).join("\n  "));
      }
      if (serverLogs) console.error("the server's log, its end:\n" + serverLogs().split("\n").slice(-40).join("\n"));
      throw err;
    } finally {
      clearInterval(timer);
    }
  });
}

export const chromiumPath = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
export const haveChromium = existsSync(chromiumPath);

/**
 * Every Content-Security-Policy violation any page of a launched browser
 * reported (Chromium logs each as a console error), as "url: message".
 * The suites run the app under the policy the server sends, and each file
 * ends by checking this is empty.
 */
export const cspViolations = [];

/** Headless Chromium with the flags this machine's closed network needs. */
export async function launch() {
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const newContext = browser.newContext.bind(browser);
  browser.newContext = async (opts) => {
    const ctx = await newContext(opts);
    ctx.on("console", (msg) => {
      if (msg.type() === "error" && /Content Security Policy/i.test(msg.text())) {
        cspViolations.push(`${msg.location()?.url ?? ""}: ${msg.text()}`);
      }
    });
    return ctx;
  };
  return browser;
}

export const shot = (page, name) => page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: false });

/** Calls a Connect unary method with JSON from Node. */
export async function connectCall(base, method, body, headers = {}) {
  const res = await fetch(`${base}/parley.v1.${method}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json().catch(() => ({})) };
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Clicks a button of the header's menu, opening the menu first where the
 * header folded it under ⋯ (it folds whenever its buttons do not fit).
 */
export async function navClick(page, selector) {
  await page.waitForFunction((sel) => !document.querySelector(sel)?.hidden, selector);
  // The header may fold (or unfold) as the page settles: try until it is
  // clickable, opening the menu when it is folded.
  for (let i = 0; i < 100; i++) {
    if (await page.locator(selector).isVisible()) {
      try { await page.click(selector, { timeout: 1000 }); return; } catch { /* it folded meanwhile */ }
    } else if (await page.locator("#nav-toggle").isVisible() && !(await page.locator("#nav.open").count())) {
      await page.click("#nav-toggle");
    }
    await page.waitForTimeout(100);
  }
  throw new Error(`${selector} never became clickable`);
}

/**
 * Signs p in through the form on the page it shows (sign-up: also a
 * display name from the address) and waits for the app.
 */
export async function signIn(p, email, password, { signUp = false } = {}) {
  await p.locator("#auth-form").waitFor();
  if ((await p.textContent("#auth-submit")) !== (signUp ? "Sign up" : "Log in")) await p.click("#auth-toggle");
  await p.fill("input[name=email]", email);
  await p.fill("input[name=password]", password);
  if (signUp) await p.fill("input[name=display_name]", email.split("@")[0]);
  await p.click("#auth-submit");
  await p.locator("#main").waitFor();
}
