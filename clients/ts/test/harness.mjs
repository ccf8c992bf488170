// Builds and starts the real parley binary with a funded user and an API key.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const repoRoot = resolve(import.meta.dirname, "../../..");

export async function startParley() {
  const dir = mkdtempSync(join(tmpdir(), "parley-ts-sdk-"));
  const bin = process.env.PARLEY_BIN || join(dir, "parley");
  if (!process.env.PARLEY_BIN) execFileSync("go", ["build", "-o", bin, "./server/cmd/parley"], { cwd: repoRoot, stdio: "inherit" });
  const data = join(dir, "data");
  const admin = (...a) => execFileSync(bin, ["admin", ...a, "--data-dir", data], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  admin("create-user", "--email", "ts@example.com", "--password", "ts-password-123");
  admin("topup", "--email", "ts@example.com", "--usd", "100");
  const apiKey = admin("create-key", "--email", "ts@example.com").trim();
  const proc = spawn(bin, ["serve", "--listen", "127.0.0.1:0", "--data-dir", data, "--insecure-cookies", "--sim-time-scale", "0", "--rate-limits", "off"], { stdio: ["ignore", "pipe", "pipe"] });
  let logs = "";
  const baseUrl = await new Promise((ok, fail) => {
    const t = setTimeout(() => fail(new Error("parley not listening after 60 s\n" + logs)), 60_000);
    const on = (d) => { logs += d; const m = /listening on (http:\/\/[0-9.:]+)/.exec(logs); if (m) { clearTimeout(t); ok(m[1]); } };
    proc.stdout.on("data", on);
    proc.stderr.on("data", on);
    proc.on("exit", (c) => fail(new Error(`parley exited (${c})\n${logs}`)));
  });
  return {
    baseUrl, apiKey,
    async stop() {
      if (proc.exitCode === null) { proc.kill("SIGKILL"); await new Promise((r) => proc.once("exit", r)); }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
