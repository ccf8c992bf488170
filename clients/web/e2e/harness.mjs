// Test harness: builds and starts the real parley binary on a free port, and
// drives Debian's Chromium with playwright-core (no browser download).
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
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

/** Starts `parley serve` on a free loopback port; resolves to {url, stop, logs}. */
export async function startServer(extra = []) {
  const dataDir = mkdtempSync(join(tmpdir(), "parley-web-data-"));
  const args = ["serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir, "--insecure-cookies", "--sim-time-scale", "0.2", "--rate-limits", "off", ...extra];
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
    logs: () => logs,
    async stop() {
      if (proc.exitCode === null) {
        proc.kill("SIGKILL");
        await new Promise((r) => proc.once("exit", r));
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export const chromiumPath = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
export const haveChromium = existsSync(chromiumPath);

/** Headless Chromium with the flags this machine's closed network needs. */
export function launch() {
  return chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
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
