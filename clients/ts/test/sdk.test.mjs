import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync, rmSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { createParleyClient, ParleyError, Code, prompt, collect, deltas, userText, toolResult, FinishReason, ToolChoiceMode, ResponseFormatType, ChatService } from "@parley/client/node";
import { startParley } from "./harness.mjs";

let srv;
before(async () => { srv = await startParley(); });
after(async () => { await srv?.stop(); });

test("the README's examples run", () => {
  const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
  const blocks = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.equal(blocks.length, 6); // streaming, files, vector stores, projects and memory, batches, tools
  const file = join(import.meta.dirname, "..", "readme-example.tmp.mjs"); // inside the package: resolves @parley/client
  try {
    for (const code of blocks) {
      writeFileSync(file, code);
      const out = execFileSync(process.execPath, [file], { env: { ...process.env, PARLEY_URL: srv.baseUrl, PARLEY_API_KEY: srv.apiKey }, encoding: "utf8" });
      assert.ok(out.trim().length > 20, out);
    }
  } finally { rmSync(file, { force: true }); }
});

for (const transport of ["connect", "grpc-web", "grpc"]) {
  test(`stream over ${transport}`, async () => {
    const parley = createParleyClient({ baseUrl: srv.baseUrl, apiKey: srv.apiKey, transport });
    const { text, finished } = await collect(parley.chat.completeStream(prompt("sim-small", `hello over ${transport}`)));
    assert.ok(text.length > 0);
    assert.equal(finished.finishReason, FinishReason.STOP);
  });
}

const textOf = (message) => message.parts.filter((p) => p.kind.case === "text").map((p) => p.kind.value).join("");

test("tools: a required call, the same call streamed, the answer to its result", async () => {
  const parley = createParleyClient({ baseUrl: srv.baseUrl, apiKey: srv.apiKey });
  const getWeather = {
    name: "get_weather",
    description: "The current weather in a city.",
    parameters: {
      type: "object",
      properties: { city: { type: "string" }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } },
      required: ["city", "unit"],
      additionalProperties: false,
    },
  };
  const messages = [userText("What's the weather in Paris?")];
  const req = { model: "sim-small", messages, tools: [getWeather], toolChoice: { mode: ToolChoiceMode.REQUIRED } };

  const res = await parley.chat.complete(req);
  assert.equal(res.finishReason, FinishReason.TOOL_CALLS);
  assert.equal(res.choices.length, 1);
  assert.equal(res.choices[0].finishReason, FinishReason.TOOL_CALLS);
  const calls = res.message.parts.filter((p) => p.kind.case === "toolCall").map((p) => p.kind.value);
  assert.equal(calls.length, 1);
  assert.equal(calls[0].name, "get_weather");
  assert.ok(calls[0].id);
  const args = JSON.parse(calls[0].arguments);
  for (const k of getWeather.parameters.required) assert.ok(k in args, `${k} in ${calls[0].arguments}`);
  assert.equal(typeof args.city, "string");
  assert.ok(getWeather.parameters.properties.unit.enum.includes(args.unit), args.unit);

  // The same request streamed: the call's pieces, assembled by index, are the same call.
  const streamed = await collect(parley.chat.completeStream(req));
  assert.equal(streamed.finished.finishReason, FinishReason.TOOL_CALLS);
  assert.equal(streamed.text, "");
  assert.deepEqual(streamed.toolCalls.map(({ id, name, arguments: a }) => ({ id, name, a })), calls.map(({ id, name, arguments: a }) => ({ id, name, a })));

  // Send the call and its result back: the answer quotes the result.
  const result = JSON.stringify({ city: args.city, temperature: 21, unit: args.unit, conditions: "sunny" });
  const answer = await parley.chat.complete({ model: "sim-small", tools: [getWeather], messages: [...messages, res.message, toolResult(calls[0].id, result)] });
  assert.equal(answer.finishReason, FinishReason.STOP);
  assert.ok(textOf(answer.message).includes(result), textOf(answer.message));
});

test("structured output: a JSON_SCHEMA answer parses and has the required keys", async () => {
  const parley = createParleyClient({ baseUrl: srv.baseUrl, apiKey: srv.apiKey });
  const schema = {
    type: "object",
    properties: { name: { type: "string" }, age: { type: "integer", minimum: 0, maximum: 150 }, tags: { type: "array", items: { type: "string" } } },
    required: ["name", "age"],
    additionalProperties: false,
  };
  const res = await parley.chat.complete({
    model: "sim-small",
    messages: [userText("Describe a person.")],
    responseFormat: { type: ResponseFormatType.JSON_SCHEMA, name: "person", schema, strict: true },
  });
  assert.equal(res.finishReason, FinishReason.STOP);
  const doc = JSON.parse(textOf(res.message));
  for (const k of schema.required) assert.ok(k in doc, `${k} in ${textOf(res.message)}`);
  assert.equal(typeof doc.name, "string");
  assert.ok(Number.isInteger(doc.age) && doc.age >= 0 && doc.age <= 150, String(doc.age));
});

test("cookie mode: sign up, then a web conversation", async () => {
  const parley = createParleyClient({ baseUrl: srv.baseUrl, cookies: true });
  await parley.auth.signUp({ email: "ts-cookie@example.com", password: "cookie-password-1" });
  const me = await parley.auth.getMe({});
  assert.equal(me.user.email, "ts-cookie@example.com");
  let out = "";
  for await (const t of deltas(parley.conversations.sendMessage({ model: "sim-small", parts: [{ kind: { case: "text", value: "hi" } }] }))) out += t;
  assert.ok(out.length > 0);
  await parley.auth.logout({});
  await assert.rejects(parley.auth.getMe({}), (e) => e instanceof ParleyError && e.code === Code.Unauthenticated);
});

test("typed errors: code, field violations, retry-after", async () => {
  const bad = createParleyClient({ baseUrl: srv.baseUrl, apiKey: "pk_nope" });
  await assert.rejects(bad.models.listModels({}), (e) => e instanceof ParleyError && e.codeName === "unauthenticated");
  const parley = createParleyClient({ baseUrl: srv.baseUrl, apiKey: srv.apiKey });
  // Errors in a stream surface from the iterator, typed too.
  await assert.rejects(collect(parley.chat.completeStream({ model: "sim-small", messages: [] })), (e) => {
    assert.ok(e instanceof ParleyError);
    assert.equal(e.code, Code.InvalidArgument);
    assert.ok(e.fieldViolations.length > 0 && e.fieldViolations[0].field);
    return true;
  });
  // Retry-after: the login throttle refuses with resource_exhausted and RetryInfo.
  const anon = createParleyClient({ baseUrl: srv.baseUrl, cookies: true });
  let err;
  for (let i = 0; i < 40 && !err; i++) {
    try { await anon.auth.login({ email: "nobody@example.com", password: "wrong-password-1" }); } catch (e) { if (e.code === Code.ResourceExhausted) err = e; }
  }
  assert.ok(err, "throttled");
  assert.ok(err.retryAfterMs > 0, `retryAfterMs ${err.retryAfterMs}`);
});

test("streaming overhead against the raw generated client", async () => {
  const n = 30;
  const raw = createClient(ChatService, createConnectTransport({ baseUrl: srv.baseUrl, httpVersion: "1.1" }));
  const parley = createParleyClient({ baseUrl: srv.baseUrl, apiKey: srv.apiKey });
  const headers = { Authorization: `Bearer ${srv.apiKey}` };
  const time = async (f) => { const t0 = performance.now(); let ev = 0; for (let i = 0; i < n; i++) ev += await f(); return [performance.now() - t0, ev]; };
  const [rawMs, rawEv] = await time(async () => { let k = 0; for await (const _ of raw.completeStream(prompt("sim-small", "measure"), { headers })) k++; return k; });
  const [sdkMs, sdkEv] = await time(async () => { let k = 0; for await (const _ of parley.chat.completeStream(prompt("sim-small", "measure"))) k++; return k; });
  assert.equal(rawEv, sdkEv);
  console.log(`streaming ${n} answers (${rawEv} events): raw ${rawMs.toFixed(1)} ms (${((rawMs * 1000) / rawEv).toFixed(1)} µs/event), SDK ${sdkMs.toFixed(1)} ms (${((sdkMs * 1000) / sdkEv).toFixed(1)} µs/event)`);
});
